import type { ControlReply, FinalReply } from './request.js';

/** Why a request ended before its action finished it: the requester hung up (Ctrl-C), or the daemon stops. */
export type CancelReason = 'requester gone' | 'daemon stopping';

/** How an action answers its request (the connection it came on). */
export interface Reply {
  /** A line before the last one (a session's opening, a card shown); dropped once the requester has gone. */
  send(line: Exclude<ControlReply, FinalReply>): void;
  /** The last line; the connection then ends. Only the first call counts. */
  finish(line: FinalReply): void;
  /** `listener` runs once if the request is cancelled before finish (a learn session ends then). */
  onCancel(listener: (reason: CancelReason) => void): void;
}
