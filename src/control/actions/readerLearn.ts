import type { Action } from '../actionContext.js';
import { runLearnSession } from './learnSession.js';

/** `reader-learn {reader?, seconds}`: every card the reader reads for `seconds` (or until the requester hangs up), not decided. */
export const readerLearn: Action<'reader-learn'> = (request, ctx, reply) =>
  runLearnSession(
    {
      action: 'reader-learn',
      request,
      endsWith: () => false,
      timeUp: (shown) => ({ type: 'done', message: `learn session over after ${request.seconds} s`, cards: shown }),
      cancelled: (shown) => ({ type: 'done', message: 'learn session ended by its requester', cards: shown }),
    },
    ctx,
    reply,
  );
