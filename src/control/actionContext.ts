import type { Logger } from 'pino';
import type { Door } from '../door/door.js';
import type { Clock, Timers } from '../util/clock.js';
import type { ControlAudit } from './controlAudit.js';
import type { Reply } from './reply.js';
import type { ControlRequest, RequestOf } from './request.js';

/** What every action of the control socket works with: the agent's doors, the audit, time. */
export interface ActionContext {
  doors: readonly Door[];
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
