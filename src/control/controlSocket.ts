import type { Logger } from 'pino';
import type { Door } from '../door/door.js';
import type { NewEvent } from '../store/eventLog.js';
import type { Clock, Timers } from '../util/clock.js';
import type { ActionContext } from './actionContext.js';
import { ControlAudit } from './controlAudit.js';
import { ControlServer } from './controlServer.js';

/** The agent's control socket at `path` (agent.controlSocket), null when that is null: what app.ts starts after the doors. */
export function controlSocket(
  path: string | null,
  deps: Pick<ActionContext, 'links' | 'version' | 'firmware'> & {
    doors: readonly Door[];
    append: (event: NewEvent) => void;
    clock: Clock;
    timers: Timers;
    logger: Logger;
  },
): ControlServer | null {
  if (path === null) return null;
  const logger = deps.logger.child({ component: 'control' });
  const audit = new ControlAudit({ append: deps.append, clock: deps.clock, logger });
  const context: ActionContext = {
    doors: deps.doors,
    links: deps.links,
    version: deps.version,
    firmware: deps.firmware,
    audit,
    clock: deps.clock,
    timers: deps.timers,
    logger,
  };
  return new ControlServer({ path, timers: deps.timers, logger, context });
}
