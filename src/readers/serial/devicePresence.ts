import { existsSync } from 'node:fs';

// serialport does not always report a device that went away (its poller can miss the hang-up; node-serialport
// #2043, #2351), so a real port's device node is also watched: an unplugged USB reader's node disappears.
/** @internal */
export const PRESENCE_CHECK_MS = 2000;

export interface PresenceDeps {
  exists(path: string): boolean;
  /** A repeating timer; the returned function stops it. */
  every(ms: number, tick: () => void): () => void;
}

const systemPresence: PresenceDeps = {
  exists: existsSync,
  every: (ms, tick) => {
    // unref: the watch never keeps a process alive on its own
    const handle = setInterval(tick, ms).unref();
    return () => clearInterval(handle);
  },
};

/** What the watch needs of a port (serialport's SerialPort has it). */
export interface WatchablePort {
  readonly isOpen: boolean;
  close(callback?: (err: Error | null) => void, disconnectError?: Error): void;
  on(event: 'open' | 'close', listener: () => void): unknown;
}

/**
 * While `port` is open, checks every PRESENCE_CHECK_MS that `path` still exists; once it is gone the port is
 * closed, so its user sees the 'close' it expects from an unplugged device and reopens with backoff.
 */
export function closeWhenDeviceVanishes<T extends WatchablePort>(port: T, path: string, deps: PresenceDeps = systemPresence): T {
  let stop: (() => void) | null = null;
  const halt = () => {
    stop?.();
    stop = null;
  };
  port.on('open', () => {
    halt();
    stop = deps.every(PRESENCE_CHECK_MS, () => {
      if (!port.isOpen) return halt(); // closed without our listener hearing it (listeners removed)
      if (deps.exists(path)) return;
      halt();
      // Passed on as the 'close' event's error (serialport's close(callback, disconnectError)): the log says why.
      port.close(() => undefined, Object.assign(new Error(`${path} disappeared`), { disconnected: true }));
    });
  });
  port.on('close', halt);
  return port;
}
