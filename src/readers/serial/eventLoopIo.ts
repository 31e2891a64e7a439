import { readSync, writeSync } from 'node:fs';

type PollerEvent = 'readable' | 'writable';

/** What of serialport's Unix port binding (bindings-cpp) the reads and writes need: its non-blocking descriptor and poller. */
interface PollingPort {
  fd: number | null;
  poller: { once(event: PollerEvent, callback: (err: Error | null) => void): unknown };
  read(buffer: Buffer, offset: number, length: number): Promise<{ bytesRead: number; buffer: Buffer }>;
  write(buffer: Buffer): Promise<void>;
  /** The write under way (bindings-cpp's drain() waits for it). */
  writeOperation: Promise<void> | null;
}

/** A serialport binding (its `open` resolves with a port binding; the rest is kept as it is). */
interface BindingLike {
  open(options: never): Promise<unknown>;
}

function isPollingPort(port: unknown): port is PollingPort {
  const p = port as Partial<PollingPort> | null;
  return typeof p?.fd === 'number' && typeof p.poller?.once === 'function' && typeof p.read === 'function' && typeof p.write === 'function';
}

/** As bindings-cpp cancels a read or write when its port closes: serialport's stream then ends it quietly. */
function canceled(): Error {
  return Object.assign(new Error('Port is not open'), { canceled: true });
}

const WOULD_BLOCK = new Set(['EAGAIN', 'EWOULDBLOCK', 'EINTR']);

/**
 * Runs `step` (a non-blocking read or write of the port's descriptor) on the event loop until it is done: when it
 * would block, again once the poller says the descriptor is `event`. `step` returns its result, or undefined to be
 * run again when the poller says so.
 */
function onEventLoop<T>(port: PollingPort, event: PollerEvent, step: (fd: number) => T | undefined): Promise<T> {
  return new Promise((resolve, reject) => {
    const attempt = (err: Error | null): void => {
      // The poller's error, or its cancellation when the port closes (serialport's stream knows `canceled`).
      if (err) return reject(err);
      if (port.fd === null) return reject(canceled());
      let result: T | undefined;
      try {
        result = step(port.fd);
      } catch (ioErr) {
        if (WOULD_BLOCK.has((ioErr as NodeJS.ErrnoException).code ?? '')) return void port.poller.once(event, attempt);
        return reject(ioErr); // the device went away (EIO, ENXIO): serialport's stream closes the port
      }
      if (result === undefined) return void port.poller.once(event, attempt);
      resolve(result);
    };
    attempt(null);
  });
}

/**
 * The port's reads and writes made on the event loop.
 *
 * bindings-cpp reads and writes each chunk on libuv's thread pool: the poller wakes the event loop, the read is
 * queued for a pool thread, and its result comes back to the event loop. A card's bytes, or an OSDP poll and the
 * reader's reply, then wait for a free pool thread, which the agent's disk syncs (the write-ahead log, the lock state
 * file) share, and take two hand-offs more than they need. The descriptor is non-blocking (bindings-cpp opens it
 * O_NONBLOCK), so a read or write on the event loop returns at once: done, or EAGAIN, and then the poller is asked.
 */
function moveToEventLoop(port: PollingPort): void {
  port.read = (buffer, offset, length) =>
    onEventLoop(port, 'readable', (fd) => {
      const bytesRead = readSync(fd, buffer, offset, length, null);
      // Nothing read is not the end of a serial line (serialport's stream would end on it): wait for bytes.
      return bytesRead > 0 ? { bytesRead, buffer } : undefined;
    });
  port.write = (buffer) => {
    let offset = 0;
    const operation = onEventLoop(port, 'writable', (fd) => {
      while (offset < buffer.length) {
        const written = writeSync(fd, buffer, offset, buffer.length - offset);
        if (written === 0) return undefined; // the line's buffer is full: on when it has room
        offset += written;
      }
      return true;
    }).then(() => {
      if (port.writeOperation === operation) port.writeOperation = null;
    });
    port.writeOperation = operation;
    return operation;
  };
}

/**
 * `binding` with the reads and writes of every port it opens made on the event loop (see moveToEventLoop). A port
 * binding without a descriptor and poller (another platform's) keeps its own.
 */
export function withEventLoopIo<B extends BindingLike>(binding: B): B {
  return Object.assign({}, binding, {
    open: async (options: never) => {
      const port = await binding.open(options);
      if (isPollingPort(port)) moveToEventLoop(port);
      return port;
    },
  });
}
