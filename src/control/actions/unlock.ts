import type { Action } from '../actionContext.js';
import { runDoorCommand } from './doorCommand.js';

/** `unlock {door, seconds?}`: for `seconds`, else the door's unlockSeconds; relocked at the deadline by the door's timer. */
export const unlock: Action<'unlock'> = (request, ctx, reply) => runDoorCommand(request, { lock: false, seconds: request.seconds ?? 'default' }, ctx, reply);
