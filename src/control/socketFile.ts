import { lstatSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import type { Timers } from '../util/clock.js';
import { DoorAgentError, describeFsError, errorCode } from '../util/errors.js';

/** How long a socket file left behind is given to answer before it counts as stale. */
const PROBE_MS = 2000;

/** Whether something accepts connections on the Unix socket at `path`: true, false (refused: nobody listens), or the error. */
function answers(path: string, timers: Timers): Promise<boolean | Error> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    const timer = timers.setTimeout(() => {
      socket.destroy();
      resolve(new Error(`no answer within ${PROBE_MS} ms`));
    }, PROBE_MS);
    socket.once('connect', () => {
      timers.clearTimeout(timer);
      socket.destroy();
      resolve(true);
    });
    socket.once('error', (err) => {
      timers.clearTimeout(timer);
      resolve(errorCode(err) === 'ECONNREFUSED' ? false : err);
    });
  });
}

/**
 * Makes `path` free for the daemon's control socket. Nothing there: nothing to do. A socket nobody answers on (a
 * crashed run's) is removed. A socket something answers on, or a file that is not a socket, is left alone and
 * refused: another daemon uses it, or it is not ours to delete.
 */
export async function claimSocketPath(path: string, timers: Timers): Promise<void> {
  let stat;
  try {
    stat = lstatSync(path);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return;
    throw new DoorAgentError(`cannot look at ${path}: ${describeFsError(err)}`, { cause: err });
  }
  if (!stat.isSocket()) {
    throw new DoorAgentError(`${path} exists and is not a socket: left alone (remove it, or set agent.controlSocket to another path)`);
  }
  const answer = await answers(path, timers);
  if (answer === true) {
    throw new DoorAgentError(`something answers on ${path} (another door-agent daemon?): left alone; give each daemon its own agent.controlSocket`);
  }
  if (answer instanceof Error) throw new DoorAgentError(`cannot tell whether ${path} is in use: ${answer.message}`, { cause: answer });
  // Refused: a socket file a run that ended without its stop left behind.
  try {
    unlinkSync(path);
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') throw new DoorAgentError(`cannot remove the stale socket ${path}: ${describeFsError(err)}`, { cause: err });
  }
}
