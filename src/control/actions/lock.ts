import type { Action } from '../actionContext.js';
import { runDoorCommand } from './doorCommand.js';

/** `lock {door}`: locked now (refused while the emergency input releases the door). */
export const lock: Action<'lock'> = (request, ctx, reply) => runDoorCommand(request, { lock: true }, ctx, reply);
