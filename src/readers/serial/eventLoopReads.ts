import { readSync } from 'node:fs';

/** What of serialport's Unix port binding (bindings-cpp) the reads need: its non-blocking descriptor and poller. */
interface PollingPort {
  fd: number | null;
  poller: { once(event: 'readable', callback: (err: Error | null) => void): unknown };
  read(buffer: Buffer, offset: number, length: number): Promise<{ bytesRead: number; buffer: Buffer }>;
}

/** A serialport binding (its `open` resolves with a port binding; the rest is kept as it is). */
interface BindingLike {
  open(options: never): Promise<unknown>;
}

function isPollingPort(port: unknown): port is PollingPort {
  const p = port as Partial<PollingPort> | null;
  return typeof p?.fd === 'number' && typeof p.poller?.once === 'function' && typeof p.read === 'function';
}

/** As bindings-cpp cancels a read when its port closes: serialport's stream then ends the read quietly. */
function canceled(): Error {
  return Object.assign(new Error('Port is not open'), { canceled: true });
}

const WOULD_BLOCK = new Set(['EAGAIN', 'EWOULDBLOCK', 'EINTR']);

/**
 * Reads the port's bytes on the event loop, when its poller says they are there.
 *
 * bindings-cpp reads each chunk on libuv's thread pool: the poller wakes the event loop, the read is queued for a
 * pool thread, and its result comes back to the event loop. A card's bytes then wait for a free pool thread, which
 * the agent's disk syncs (the write-ahead log, the lock state file) share, and take two hand-offs more than the
 * bytes need. The descriptor is non-blocking (bindings-cpp opens it O_NONBLOCK), so the read on the event loop
 * returns at once: with the bytes, or EAGAIN, and then the poller is asked again.
 */
function readOnEventLoop(port: PollingPort): PollingPort['read'] {
  return (buffer, offset, length) =>
    new Promise((resolve, reject) => {
      const attempt = (err: Error | null): void => {
        // The poller's error, or its cancellation when the port closes (serialport's stream knows `canceled`).
        if (err) return reject(err);
        if (port.fd === null) return reject(canceled());
        let bytesRead: number;
        try {
          bytesRead = readSync(port.fd, buffer, offset, length, null);
        } catch (readErr) {
          if (WOULD_BLOCK.has((readErr as NodeJS.ErrnoException).code ?? '')) return void port.poller.once('readable', attempt);
          return reject(readErr); // the device went away (EIO, ENXIO): serialport's stream closes the port
        }
        // Nothing read is not the end of a serial line (serialport's stream would end on it): wait for bytes.
        if (bytesRead === 0) return void port.poller.once('readable', attempt);
        resolve({ bytesRead, buffer });
      };
      attempt(null);
    });
}

/**
 * `binding` with the reads of every port it opens made on the event loop (see readOnEventLoop). A port binding
 * without a descriptor and poller (another platform's) keeps its own reads.
 */
export function withEventLoopReads<B extends BindingLike>(binding: B): B {
  return {
    ...binding,
    open: async (options: never) => {
      const port = await binding.open(options);
      if (isPollingPort(port)) port.read = readOnEventLoop(port);
      return port;
    },
  };
}
