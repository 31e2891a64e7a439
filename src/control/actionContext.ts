import type { Logger } from 'pino';
import type { Door } from '../door/door.js';
import type { ReaderFirmware } from '../door/readerFirmware.js';
import type { Clock, Timers } from '../util/clock.js';
import type { ControlAudit } from './controlAudit.js';
import type { Reply } from './reply.js';
import type { ControlRequest, RequestOf } from './request.js';

/** A link of the agent (util/linkWatch.ts): whether it was reached since the daemon started. */
export interface LinkReached {
  reached(): boolean;
}

/** What every action of the control socket works with: the agent's doors, its links and version, the audit, time. */
export interface ActionContext {
  doors: readonly Door[];
  /** The service (sync) and the broker; undefined when not configured. */
  links: { service?: LinkReached; broker?: LinkReached };
  version: string;
  /** Reader firmware over OSDP, one reader at a time (the daemon's one). */
  firmware: ReaderFirmware;
  audit: ControlAudit;
  clock: Clock;
  timers: Timers;
  logger: Logger;
}

/**
 * One action of the control socket (control/actions/): it answers through `reply`, at once or later (a learn
 * session). A RequestError it throws is the request's error line; a thrown DoorAgentError too.
 */
export type Action<A extends ControlRequest['action']> = (request: RequestOf<A>, ctx: ActionContext, reply: Reply) => void;
