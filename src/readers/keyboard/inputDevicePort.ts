import { EventEmitter } from 'node:events';
import { closeSync, constants, openSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { addonPath } from '../../util/addonPath.js';
import { DoorAgentError, errorCode } from '../../util/errors.js';
import { loadChardevBinding } from '../../hardware/chardev/binding.js';
import { KeyboardDecoder } from './inputEvents.js';
import type { PortFactory, PortLike } from '../serial/port.js';

/** What an input device needs from the system: a non-blocking fd, the exclusive grab, readiness and reads. */
export interface InputIo {
  open(path: string): number;
  /** EVIOCGRAB: the typed numbers reach door-agent only. */
  grab(fd: number): void;
  watch(fd: number, onReadable: () => void, onError: (message: string) => void): { close(): void };
  /** Every record queued, or null (never blocks). */
  read(fd: number): Buffer | null;
  close(fd: number): void;
}

let grabAddon: { grab(fd: number, exclusive: boolean): void } | null = null;

/** The real system: fs for the fd, our evdev addon for the grab, the GPIO addon's generic poll and read. */
function systemInputIo(): InputIo {
  if (!grabAddon) {
    const path = addonPath(import.meta.dirname, 'evdev');
    try {
      grabAddon = createRequire(import.meta.url)(path) as { grab(fd: number, exclusive: boolean): void };
    } catch (err) {
      throw new DoorAgentError(`a keyboard reader needs the evdev addon (${path}): run npm ci (or npm rebuild) in the door-agent directory`, { cause: err });
    }
  }
  const addon = grabAddon;
  const poll = loadChardevBinding();
  return {
    open: (path) => {
      // An input device is a character device. A FIFO stands in for one on a machine without (the tests, a
      // simulator): opened read-write it never reports end-of-file, which a poll would otherwise report forever.
      // Anything else (a regular file) would poll readable forever: refused. libuv adds O_CLOEXEC itself.
      const kind = statSync(path);
      if (kind.isFIFO()) return openSync(path, constants.O_RDWR | constants.O_NONBLOCK);
      if (!kind.isCharacterDevice()) throw new DoorAgentError(`${path} is not an input device (expected /dev/input/by-id/...-event-kbd)`);
      return openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    },
    grab: (fd) => addon.grab(fd, true),
    watch: (fd, onReadable, onError) => poll.watch(fd, onReadable, onError),
    read: (fd) => poll.readEvents(fd),
    close: (fd) => closeSync(fd),
  };
}

/**
 * A keyboard-style reader (/dev/input/by-id/...-event-kbd) as a serial port to the reader logic: opened by path,
 * taken exclusively where the device allows it, its key records turned into the bytes it types; unplugged, it
 * closes with an error and the serial reader's backoff reopens it when it is back.
 * @internal
 */
export class InputDevicePort extends EventEmitter implements PortLike {
  private fd: number | null = null;
  private watcher: { close(): void } | null = null;
  private readonly decoder = new KeyboardDecoder();

  constructor(
    private readonly path: string,
    private readonly io: InputIo,
  ) {
    super();
  }

  get isOpen(): boolean {
    return this.fd !== null;
  }

  open(callback: (err: Error | null) => void): void {
    let fd: number;
    try {
      fd = this.io.open(this.path);
    } catch (err) {
      return callback(err instanceof Error ? err : new Error(String(err)));
    }
    try {
      this.io.grab(fd);
    } catch (err) {
      if (errorCode(err) === 'EBUSY') {
        // Another program has it exclusively: nothing would ever reach us.
        this.io.close(fd);
        return callback(new Error(`${this.path} is held exclusively by another program (EBUSY)`));
      }
      // Not an input device that can be grabbed (a test's FIFO, an unusual driver): read it anyway, and say so.
      queueMicrotask(() =>
        this.emit('error', new Error(`cannot take ${this.path} exclusively (${errorCode(err) ?? 'error'}): what it types may also reach a console`)),
      );
    }
    this.fd = fd;
    this.watcher = this.io.watch(
      fd,
      () => this.readable(),
      (message) => this.lost(new Error(message)),
    );
    callback(null);
  }

  private readable(): void {
    if (this.fd === null) return;
    let bytes: Buffer | null;
    try {
      bytes = this.io.read(this.fd);
    } catch (err) {
      return this.lost(err instanceof Error ? err : new Error(String(err))); // ENODEV: unplugged
    }
    if (!bytes) return;
    const typed = this.decoder.push(bytes);
    if (typed.length > 0) this.emit('data', typed);
  }

  /** The device went away or failed under us: closed as serialport closes a lost line (portCloseReason says so). */
  private lost(err: Error): void {
    this.release();
    this.emit('close', Object.assign(err, { disconnected: true }));
  }

  private release(): void {
    this.watcher?.close();
    this.watcher = null;
    if (this.fd !== null) {
      try {
        this.io.close(this.fd);
      } catch {
        // already gone with the device
      }
    }
    this.fd = null;
  }

  close(callback?: (err: Error | null) => void): void {
    const wasOpen = this.fd !== null;
    this.release();
    if (wasOpen) this.emit('close', null);
    callback?.(null);
  }
}

/** The reader's port factory for keyboard readers (the baud rate means nothing to an input device). */
export function inputDevicePorts(io: () => InputIo = systemInputIo): PortFactory {
  return (path) => new InputDevicePort(path, io()) as unknown as PortLike;
}
