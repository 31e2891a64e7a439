import { closeSync, existsSync, mkdirSync, openSync, readSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Level } from '../core/relay.js';
import { DoorAgentError, describeFsError } from '../util/errors.js';
import type { GpioDriver, GpioInput, GpioOutput } from './gpio.js';

/** How often a simulated input's value file is read: changes written from outside are seen within 50 ms. */
export const SIMULATED_INPUT_POLL_MS = 10;

/**
 * GPIO without hardware, mirroring sysfs under `dir`: `gpio<N>/value` holds "0" or "1" and is rewritten on
 * every output change, `gpio<N>/direction` says "out". For the demo, the bench and the tests; other programs
 * can watch or read the files as they would on a Raspberry Pi.
 */
export class SimulatedGpio implements GpioDriver {
  readonly name = 'simulated';
  private readonly fds: number[] = [];
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(private readonly dir: string) {}

  openOutput(pin: number, initial: Level): GpioOutput {
    const pinDir = join(this.dir, `gpio${pin}`);
    let fd: number;
    try {
      mkdirSync(pinDir, { recursive: true });
      writeFileSync(join(pinDir, 'direction'), 'out\n');
      writeFileSync(join(pinDir, 'active_low'), '0\n');
      writeFileSync(join(pinDir, 'value'), `${initial}\n`);
      fd = openSync(join(pinDir, 'value'), 'r+');
    } catch (err) {
      throw new DoorAgentError(`simulated GPIO ${pin}: cannot use ${pinDir}: ${describeFsError(err)}`, { cause: err });
    }
    this.fds.push(fd);
    const buf = Buffer.alloc(1);
    // After close() the fd number may belong to another file: refuse rather than write there.
    const openFd = () => {
      if (!this.fds.includes(fd)) throw new DoorAgentError(`simulated GPIO ${pin}: used after the driver was closed`);
      return fd;
    };
    return {
      pin,
      // Same length every time and written in place: a reader never sees an empty or partial file.
      write: (level) => {
        writeSync(openFd(), level === 1 ? '1\n' : '0\n', 0);
      },
      read: () => {
        readSync(openFd(), buf, 0, 1, 0);
        return buf[0] === 0x31 ? 1 : 0;
      },
    };
  }

  openInput(pin: number, onChange: (level: Level) => void, idleLevel: Level): GpioInput {
    const pinDir = join(this.dir, `gpio${pin}`);
    const valueFile = join(pinDir, 'value');
    let fd: number;
    try {
      mkdirSync(pinDir, { recursive: true });
      writeFileSync(join(pinDir, 'direction'), 'in\n');
      if (!existsSync(valueFile)) writeFileSync(valueFile, `${idleLevel}\n`);
      fd = openSync(valueFile, 'r');
    } catch (err) {
      throw new DoorAgentError(`simulated GPIO ${pin}: cannot use ${pinDir}: ${describeFsError(err)}`, { cause: err });
    }
    this.fds.push(fd);
    const buf = Buffer.alloc(1);
    // Whatever is not "1" reads as 0, as sysfs would never hold anything else.
    const read = (): Level => (readSync(fd, buf, 0, 1, 0) === 1 && buf[0] === 0x31 ? 1 : 0);
    let last = read();
    const poll = setInterval(() => {
      const level = read();
      if (level !== last) {
        last = level;
        onChange(level);
      }
    }, SIMULATED_INPUT_POLL_MS);
    this.timers.push(poll);
    return {
      pin,
      read,
      close: () => clearInterval(poll),
    };
  }

  close(): void {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    for (const fd of this.fds.splice(0)) closeSync(fd);
  }
}
