import { chmodSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Component } from '../lifecycle.js';
import type { Timers } from '../util/clock.js';
import { DoorAgentError, describeFsError, errorCode } from '../util/errors.js';
import type { ActionContext } from './actionContext.js';
import { health } from './actions/health.js';
import { learnCard } from './actions/learnCard.js';
import { lock } from './actions/lock.js';
import { readerLearn } from './actions/readerLearn.js';
import { readerFirmware } from './actions/readerFirmware.js';
import { FileReceiver } from './fileReceiver.js';
import { unlock } from './actions/unlock.js';
import type { CancelReason, Reply } from './reply.js';
import { MAX_REQUEST_BYTES, RequestError, parseRequest, type ControlReply, type ControlRequest, type FinalReply, type RequestOf } from './request.js';
import { claimSocketPath } from './socketFile.js';

/** A connection that has not sent its request line within this is ended. */
const REQUEST_WAIT_MS = 10_000;
/** A request's file (a reader firmware) must have come whole within this of its line. */
const FILE_WAIT_MS = 60_000;
/** Root and the daemon's group (the unit's Group=) may connect; nobody else. */
const SOCKET_MODE = 0o660;

/** The one table of actions: a request's `action` to its module. */
function dispatch(request: Exclude<ControlRequest, RequestOf<'reader-firmware'>>, ctx: ActionContext, reply: Reply): void {
  switch (request.action) {
    case 'unlock':
      return unlock(request, ctx, reply);
    case 'lock':
      return lock(request, ctx, reply);
    case 'reader-learn':
      return readerLearn(request, ctx, reply);
    case 'learn-card':
      return learnCard(request, ctx, reply);
    case 'health':
      return health(request, ctx, reply);
  }
}

export interface ControlServerDeps {
  /** agent.controlSocket. */
  path: string;
  context: ActionContext;
  timers: Timers;
  logger: Logger;
}

/**
 * The daemon's local control socket (docs/local-control.md): a Unix socket, mode 0660, one request per connection
 * as a line of JSON, validated before anything touches a door, answered with lines of JSON. A socket a crashed run
 * left behind is replaced once nothing answers on it; the file is removed at stop. A socket that cannot be made is
 * a warning, never a reason to keep the doors from working.
 */
export class ControlServer implements Component {
  readonly name = 'control socket';
  private server: Server | null = null;
  private readonly open = new Set<(reason: CancelReason) => void>();

  constructor(private readonly deps: ControlServerDeps) {}

  async start(): Promise<void> {
    const { path, logger } = this.deps;
    try {
      await claimSocketPath(path, this.deps.timers);
      this.server = await this.listen(path);
      chmodSync(path, SOCKET_MODE);
    } catch (err) {
      this.server?.close();
      this.server = null;
      const why = err instanceof DoorAgentError ? err.message : describeFsError(err);
      const hint = errorCode(err) === 'ENOENT' ? ` (its directory is missing: systemd's RuntimeDirectory=door-agent makes /run/door-agent)` : '';
      logger.warn({ err, path }, `no control socket: ${why}${hint}; door-agent unlock, lock, learn-card and reader learn cannot reach this daemon`);
      return;
    }
    logger.info({ path, mode: SOCKET_MODE.toString(8) }, 'control socket listening');
  }

  async stop(): Promise<void> {
    for (const cancel of [...this.open]) cancel('daemon stopping');
    const server = this.server;
    this.server = null;
    // Closing the listener removes its socket file (libuv unlinks the path it bound).
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private listen(path: string): Promise<Server> {
    return new Promise((resolve, reject) => {
      // allowHalfOpen: a requester that ends its side (Ctrl-C) still reads the session's last line.
      const server = createServer({ allowHalfOpen: true }, (socket) => this.connection(socket));
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        server.on('error', (err) => this.deps.logger.error({ err }, 'control socket error'));
        resolve(server);
      });
    });
  }

  /** One connection: its request line, validated, then its action; the last reply line ends it. */
  private connection(socket: Socket): void {
    const { timers, logger } = this.deps;
    let chunks: Buffer[] = [];
    let received = 0;
    let started = false;
    let finished = false;
    let cancelListener: ((reason: CancelReason) => void) | null = null;
    // A request's file, after its line (a reader firmware), and the time it has to come.
    let file: FileReceiver | null = null;
    let fileWait: unknown = null;
    const write = (line: ControlReply) => {
      if (!socket.destroyed && socket.writable) socket.write(`${JSON.stringify(line)}\n`);
    };
    // The last line (if the requester can still read it), then the end of the connection; once.
    const close = (last: FinalReply | null) => {
      if (finished) return;
      finished = true;
      cancelListener = null;
      this.open.delete(cancel);
      timers.clearTimeout(waiting);
      if (fileWait !== null) timers.clearTimeout(fileWait);
      if (last) write(last);
      socket.end();
    };
    const cancel = (reason: CancelReason) => {
      const listener = cancelListener;
      cancelListener = null;
      listener?.(reason); // a learn session ends, with its last line
      close(reason === 'daemon stopping' ? { type: 'error', error: 'the daemon is stopping' } : null);
    };
    const reply: Reply = {
      send: (line) => {
        if (!finished) write(line);
      },
      finish: (line) => close(line),
      onCancel: (listener) => {
        cancelListener = listener;
      },
    };
    this.open.add(cancel);
    const waiting = timers.setTimeout(() => {
      if (!started) close({ type: 'error', error: `no request within ${REQUEST_WAIT_MS / 1000} s` });
    }, REQUEST_WAIT_MS);
    socket.on('error', (err) => logger.debug({ err }, 'control socket connection error'));
    // The requester ended its side (Ctrl-C) or went away: what it asked for ends (a learn session), nothing more.
    socket.on('end', () => cancel('requester gone'));
    socket.on('close', () => cancel('requester gone'));
    socket.on('data', (chunk: Buffer) => {
      if (finished) return;
      if (file) return file.push(chunk);
      // One request per connection: anything after its line is ignored (but a file the request announced), and
      // nothing once it ended (the daemon stops).
      if (started) return;
      const newline = chunk.indexOf(0x0a);
      const part = newline === -1 ? chunk : chunk.subarray(0, newline);
      received += part.length;
      if (received > MAX_REQUEST_BYTES) {
        started = true;
        close({ type: 'error', error: `the request is longer than ${MAX_REQUEST_BYTES} bytes` });
        return;
      }
      chunks.push(part);
      if (newline === -1) return;
      started = true;
      const line = Buffer.concat(chunks).toString('utf8');
      chunks = [];
      const receiver = this.handle(line, reply);
      if (!receiver) return;
      file = receiver;
      receiver.push(chunk.subarray(newline + 1));
      if (!receiver.complete)
        fileWait = timers.setTimeout(() => {
          fileWait = null;
          if (!receiver.complete) close({ type: 'error', error: `the file did not come whole within ${FILE_WAIT_MS / 1000} s (${receiver.count} bytes came)` });
        }, FILE_WAIT_MS);
    });
  }

  /**
   * A request line: validated, then carried out; a refusal is its error line (naming the field when one is at fault).
   * A request that announces a file (reader-firmware) is carried out once the file has come: its receiver is returned.
   */
  private handle(line: string, reply: Reply): FileReceiver | null {
    const context = this.deps.context;
    return (
      this.attempt(reply, () => {
        const request = parseRequest(line);
        if (request.action !== 'reader-firmware') {
          dispatch(request, context, reply);
          return null;
        }
        return new FileReceiver(
          request.size,
          request.sha256,
          (bytes) => this.attempt(reply, () => readerFirmware(request, bytes, context, reply)),
          (error) => reply.finish({ type: 'error', error }),
        );
      }) ?? null
    );
  }

  /** Runs an action; what it throws is the request's error line. */
  private attempt<T>(reply: Reply, run: () => T): T | undefined {
    try {
      return run();
    } catch (err) {
      if (err instanceof RequestError) reply.finish(Object.assign({ type: 'error' as const, error: err.message }, err.field ? { field: err.field } : {}));
      else if (err instanceof DoorAgentError) reply.finish({ type: 'error', error: err.message });
      else {
        this.deps.logger.error({ err }, 'a local command failed');
        reply.finish({ type: 'error', error: `the daemon could not carry out the request: ${err instanceof Error ? err.message : String(err)}` });
      }
      return undefined;
    }
  }
}
