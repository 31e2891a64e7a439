import type { Action } from '../actionContext.js';
import { runLearnSession } from './learnSession.js';

/** `learn-card {reader?, seconds}`: the next card the reader reads, in every numbering, not decided; then the session ends. */
export const learnCard: Action<'learn-card'> = (request, ctx, reply) =>
  runLearnSession(
    {
      action: 'learn-card',
      request,
      endsWith: (credential) => credential.kind === 'card',
      timeUp: () => ({ type: 'error', error: `no card within ${request.seconds} s (is the reader wired and powered? --seconds S waits longer)` }),
      cancelled: () => ({ type: 'error', error: 'the learn session ended before a card was read' }),
    },
    ctx,
    reply,
  );
