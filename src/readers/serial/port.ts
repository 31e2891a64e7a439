import { createRequire } from 'node:module';
import type { SerialPort as SerialPortClass } from 'serialport';
import type { BackoffOptions } from '../../util/backoff.js';
import { closeWhenDeviceVanishes } from './devicePresence.js';
import { withEventLoopIo } from './eventLoopIo.js';

/** The part of a serial port the reader uses (serialport's SerialPort; a fake in unit tests). */
export interface PortLike {
  open(callback: (err: Error | null) => void): void;
  close(callback?: (err: Error | null) => void): void;
  on(event: 'data', listener: (chunk: Buffer) => void): unknown;
  on(event: 'close', listener: (err?: Error | null) => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  removeAllListeners(): unknown;
  readonly isOpen: boolean;
  /** For a bus that talks back (OSDP); a plain reader only listens. */
  write?(data: Buffer): unknown;
}

export type PortFactory = (path: string, baudRate: number) => PortLike;

// serialport (and its native binding) is loaded when the first port opens: a door without a serial reader, and
// every command but `run`, never pays for it at start.
let SerialPort: typeof SerialPortClass | undefined;
let binding: typeof SerialPortClass.binding | undefined;

export const openSerialPort: PortFactory = (path, baudRate) => {
  SerialPort ??= (createRequire(import.meta.url)('serialport') as { SerialPort: typeof SerialPortClass }).SerialPort;
  // serialport's own binding, its reads and writes made on the event loop rather than the thread pool (eventLoopIo.ts).
  binding ??= withEventLoopIo(SerialPort.binding);
  const options = { path, baudRate, autoOpen: false, lock: true, binding } as ConstructorParameters<typeof SerialPortClass>[0];
  return closeWhenDeviceVanishes(new SerialPort(options), path) as unknown as PortLike;
};

// First retry within a second, then doubling up to 30 s (docs/hardware.md: an unplugged reader is reopened with backoff).
export const READER_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000, jitter: 0.2 };
