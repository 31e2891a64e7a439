import { connect } from 'node:net';
import { DoorAgentError, errorCode } from '../util/errors.js';
import { parseReply, type ControlReply, type ControlRequest, type FinalReply } from './request.js';

/** sysexits EX_UNAVAILABLE: no daemon answers on the control socket. */
export const EXIT_DAEMON_UNAVAILABLE = 69;
/** sysexits EX_NOPERM: the socket may not be opened by this user. */
const EXIT_NO_PERMISSION = 77;

/** Nothing answers on the control socket: no socket file, or one nobody listens on. */
export class DaemonUnavailableError extends DoorAgentError {
  constructor(
    readonly path: string,
    message: string,
    cause: unknown,
  ) {
    super(message, { cause, exitCode: EXIT_DAEMON_UNAVAILABLE });
    this.name = 'DaemonUnavailableError';
  }
}

/** The control socket (or its directory) may not be opened by this user. */
export class ControlPermissionError extends DoorAgentError {
  constructor(
    readonly path: string,
    cause: unknown,
  ) {
    super(`permission denied on ${path}`, { cause, exitCode: EXIT_NO_PERMISSION });
    this.name = 'ControlPermissionError';
  }
}

/** An open request: end() cancels it (the daemon ends a learn session and sends its last line). */
export interface ControlCall {
  /** Resolves with the daemon's last line. */
  readonly result: Promise<FinalReply>;
  end(): void;
}

/**
 * Sends one request to the daemon's control socket at `path` (and the file it announces, right after its line);
 * every line before the last goes to `onLine`. Rejects with DaemonUnavailableError when no daemon answers there,
 * ControlPermissionError when this user may not connect.
 */
export function callDaemon(path: string, request: ControlRequest, onLine: (line: Exclude<ControlReply, FinalReply>) => void, file?: Buffer): ControlCall {
  const socket = connect({ path, allowHalfOpen: true });
  const result = new Promise<FinalReply>((resolve, reject) => {
    let buffered = '';
    let last: FinalReply | null = null;
    let connected = false;
    socket.setEncoding('utf8');
    socket.once('connect', () => {
      connected = true;
      socket.write(`${JSON.stringify(request)}\n`);
      if (file) socket.write(file);
    });
    socket.on('data', (text: string) => {
      buffered += text;
      for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        const reply = parseReply(line);
        if (reply === null) {
          socket.destroy();
          reject(new DoorAgentError(`the daemon answered on ${path} with something that is not a control reply: ${line.slice(0, 200)}`));
          return;
        }
        if (reply.type === 'done' || reply.type === 'error') last = reply;
        else onLine(reply);
      }
    });
    socket.once('error', (err) => {
      const code = errorCode(err);
      if (!connected && (code === 'ENOENT' || code === 'ECONNREFUSED')) {
        const why = code === 'ENOENT' ? `no control socket at ${path}` : `nothing answers on the control socket ${path}`;
        reject(new DaemonUnavailableError(path, `the door-agent daemon is not running: ${why}`, err));
      } else if (code === 'EACCES' || code === 'EPERM') reject(new ControlPermissionError(path, err));
      else reject(new DoorAgentError(`cannot talk to the daemon on ${path}: ${err.message}`, { cause: err }));
    });
    // The daemon sent its last line and ended its side: so does this one (the connection then closes).
    socket.once('end', () => socket.end());
    socket.once('close', () => {
      if (last) resolve(last);
      else reject(new DoorAgentError(`the daemon closed the control socket ${path} without an answer (is it stopping?)`));
    });
  });
  return { result, end: () => socket.end() };
}
