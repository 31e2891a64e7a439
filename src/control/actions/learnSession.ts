import type { Credential } from '../../readers/reader.js';
import { describeCredential } from '../../readers/cardNumberings.js';
import type { ActionContext } from '../actionContext.js';
import { findReader } from '../doorNames.js';
import type { CancelReason, Reply } from '../reply.js';
import type { FinalReply } from '../request.js';

export interface LearnSessionSpec {
  action: 'reader-learn' | 'learn-card';
  request: { reader?: string; seconds: number; user: string };
  /** Whether the session ends with this credential (learn-card: the first card). */
  endsWith: (credential: Credential) => boolean;
  /** The last line once `seconds` have passed, or the requester ended the session, given how many credentials were shown. */
  timeUp: (shown: number) => FinalReply;
  cancelled: (shown: number) => FinalReply;
}

/**
 * A learn session on one reader of the running daemon: until it ends (its time is up, `endsWith` says so, the
 * requester hangs up, the daemon stops) that reader's credentials are shown to the requester in every numbering
 * and not decided: nobody is let in by them, and each is audited (`learn_tap`). The door's other reader and the
 * other doors decide as ever.
 */
export function runLearnSession(spec: LearnSessionSpec, ctx: ActionContext, reply: Reply): void {
  const { request, action } = spec;
  const { door, direction } = findReader(ctx.doors, request.reader);
  const uuid = door.options.uuid;
  const label = `${door.options.name}'s ${direction} reader`;
  let shown = 0;
  let ended = false;
  let timer: unknown = null;
  const log = ctx.logger.child({ door: uuid, reader: direction, user: request.user, action });
  const end = (last: FinalReply | null) => {
    if (ended) return;
    ended = true;
    close();
    if (timer !== null) ctx.timers.clearTimeout(timer);
    ctx.audit.command(uuid, request.user, { action, reader: direction, outcome: 'ended', shown });
    log.info({ shown }, 'learn session ended: the reader decides again');
    if (last) reply.finish(last);
  };
  const close = door.learn(direction, `${action} by ${request.user}`, (credential) => {
    if (ended) return;
    shown++;
    ctx.audit.tap(uuid, request.user, direction, credential);
    reply.send({ type: 'card', at: new Date(ctx.clock.wallNow()).toISOString(), text: describeCredential(credential) });
    if (spec.endsWith(credential)) end({ type: 'done', message: `${label}: card shown`, cards: shown });
  });
  ctx.audit.command(uuid, request.user, { action, reader: direction, seconds: request.seconds, outcome: 'started' });
  log.info({ seconds: request.seconds }, 'learn session opened: taps at this reader are shown, not decided');
  reply.send({
    type: 'info',
    message:
      `${label}: ${action === 'learn-card' ? 'present a card' : 'present cards, each is shown'} (waiting ${request.seconds} s). ` +
      'The daemon is running: taps at this reader are shown here and not decided (nobody is let in by them) until this ends.',
  });
  timer = ctx.timers.setTimeout(() => {
    timer = null;
    end(spec.timeUp(shown));
  }, request.seconds * 1000);
  reply.onCancel((reason: CancelReason) =>
    end(reason === 'daemon stopping' ? { type: 'error', error: `the daemon is stopping: the learn session on ${label} ended` } : spec.cancelled(shown)),
  );
}
