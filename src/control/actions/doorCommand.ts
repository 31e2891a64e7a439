import type { LockAction } from '../../protocol/commands.js';
import { commandRefusal, executeCommand } from '../../door/doorCommand.js';
import type { ActionContext } from '../actionContext.js';
import { localCause } from '../controlAudit.js';
import { doorName, findDoor } from '../doorNames.js';
import type { Reply } from '../reply.js';

/**
 * A lock or unlock through the socket: the door's own command path (door/doorCommand.ts), the rules an MQTT command
 * obeys (lockdown, emergency input, interlock) checked in the turn that moves the relay; audited either way.
 */
export function runDoorCommand(request: { door: string; user: string }, action: LockAction, ctx: ActionContext, reply: Reply): void {
  const door = findDoor(ctx.doors, request.door);
  const target = door.commandTarget();
  const name = action.lock ? 'lock' : 'unlock';
  const asked = action.lock || action.seconds === 'default' ? {} : { seconds: action.seconds };
  const uuid = door.options.uuid;
  const refusal = commandRefusal(target, action, (other) => doorName(ctx.doors, other));
  if (refusal !== null) {
    ctx.audit.command(uuid, request.user, Object.assign({ action: name, outcome: 'refused', reason: refusal.reason, error: refusal.error }, asked));
    ctx.logger.warn({ door: uuid, user: request.user, action: name, reason: refusal.reason }, 'local command refused');
    reply.finish({ type: 'error', error: refusal.error });
    return;
  }
  const message = executeCommand(target, action, localCause(request.user), () => ctx.clock.wallNow());
  ctx.audit.command(uuid, request.user, Object.assign({ action: name, outcome: 'done', message }, asked));
  ctx.logger.info({ door: uuid, user: request.user, action: name }, 'local command');
  reply.finish({ type: 'done', message });
}
