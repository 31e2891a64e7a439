import { spawnSync } from 'node:child_process';
import { closeSync, constants, existsSync, lstatSync, mkdirSync, openSync, readSync, writeFileSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import type { Level } from '../core/relay.js';
import { DoorAgentError, describeFsError } from '../util/errors.js';
import { LineEventParser, monotonicUs } from './chardev/lineEvents.js';
import type { EdgeInputs, GpioDriver, GpioInput, GpioOutput, PinEdge, Pull } from './gpio.js';

/** The simulated chip's edge FIFO under the simulated directory (see SimulatedGpio.openEdgeInputs). @internal */
export const SIMULATED_EDGES_FIFO = 'edges';

/** How often a simulated input's value file is read: changes written from outside are seen within 50 ms. */
const SIMULATED_INPUT_POLL_MS = 10;

/**
 * GPIO without hardware, mirroring sysfs under `dir`: `gpio<N>/value` holds "0" or "1" and is rewritten on
 * every output change, `gpio<N>/direction` says "out". For the demo, the bench and the tests; other programs
 * can watch or read the files as they would on a Raspberry Pi.
 */
export class SimulatedGpio implements GpioDriver {
  readonly name = 'simulated';
  private readonly fds: number[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private edgeFeed: { socket: Socket; listeners: Map<number, (edges: PinEdge[]) => void> } | null = null;

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

  openInput(pin: number, onChange: (level: Level) => void, idleLevel: Level, pull: Pull = 'none'): GpioInput {
    const pinDir = join(this.dir, `gpio${pin}`);
    const valueFile = join(pinDir, 'value');
    let fd: number;
    try {
      mkdirSync(pinDir, { recursive: true });
      writeFileSync(join(pinDir, 'direction'), 'in\n');
      // Not in sysfs: shows what the character device would have been asked for.
      writeFileSync(join(pinDir, 'bias'), `${pull}\n`);
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

  /**
   * Edges from the simulated chip's FIFO, `<dir>/edges`: whoever simulates a Wiegand reader (the tests, the
   * bench, an installer on a bench) writes the kernel's own 48-byte `gpio_v2_line_event` records into it,
   * timestamped on CLOCK_MONOTONIC, and they take the same parser and decoder as on a Pi. The offset of each
   * record is the BCM pin; records for pins nobody opened are ignored.
   */
  openEdgeInputs(pins: readonly number[], pull: Pull, onEdges: (edges: readonly PinEdge[]) => void): EdgeInputs {
    const feed = this.openEdgeFeed();
    for (const pin of pins) {
      if (feed.listeners.has(pin)) throw new DoorAgentError(`simulated GPIO ${pin}: already open for edges`);
    }
    for (const pin of pins) {
      mkdirSync(join(this.dir, `gpio${pin}`), { recursive: true });
      writeFileSync(join(this.dir, `gpio${pin}`, 'direction'), 'in\n');
      writeFileSync(join(this.dir, `gpio${pin}`, 'bias'), `${pull}\n`);
    }
    // One callback per chunk read, however many of its pins it serves (a Wiegand pair: both lines, in order).
    // Levels follow the last edge of each pin; idle high until one comes.
    const levels = new Map<number, Level>(pins.map((pin) => [pin, 1]));
    const deliver = (edges: PinEdge[]) => {
      for (const e of edges) levels.set(e.pin, e.rising ? 1 : 0);
      onEdges(edges);
    };
    for (const pin of pins) feed.listeners.set(pin, deliver);
    return {
      nowUs: monotonicUs,
      levels: () => pins.map((pin) => levels.get(pin)!),
      close: () => {
        for (const pin of pins) feed.listeners.delete(pin);
      },
    };
  }

  private openEdgeFeed(): NonNullable<SimulatedGpio['edgeFeed']> {
    if (this.edgeFeed) return this.edgeFeed;
    const path = join(this.dir, SIMULATED_EDGES_FIFO);
    let fd: number;
    try {
      mkdirSync(this.dir, { recursive: true });
      if (!existsSync(path)) {
        // Node has no mkfifo; coreutils does (any Linux this runs on).
        const made = spawnSync('mkfifo', ['-m', '0660', path], { encoding: 'utf8' });
        if (made.status !== 0) throw new Error(made.error?.message ?? made.stderr.trim());
      }
      if (!lstatSync(path).isFIFO()) throw new Error(`${path} exists and is not a FIFO`);
      // Read-write: the FIFO never reports end-of-file when a writer closes it, and opening never blocks.
      fd = openSync(path, constants.O_RDWR | constants.O_NONBLOCK);
    } catch (err) {
      throw new DoorAgentError(`simulated GPIO edges: cannot use ${path}: ${describeFsError(err)}`, { cause: err });
    }
    const socket = new Socket({ fd, readable: true, writable: false });
    const parser = new LineEventParser();
    const listeners = new Map<number, (edges: PinEdge[]) => void>();
    socket.on('data', (chunk: Buffer) => {
      const byPin = new Map<(edges: PinEdge[]) => void, PinEdge[]>();
      for (const e of parser.push(chunk)) {
        const listener = listeners.get(e.offset);
        if (!listener) continue;
        const edges = byPin.get(listener) ?? [];
        edges.push({ pin: e.offset, rising: e.rising, atUs: e.timestampUs, afterLoss: e.afterLoss });
        byPin.set(listener, edges);
      }
      for (const [listener, edges] of byPin) listener(edges);
    });
    socket.on('error', (err) => {
      // Reading a FIFO we hold open read-write does not fail; if it ever did, a reader that silently stopped
      // hearing cards would be worse than a restart (the fatal path locks every relay first).
      throw new DoorAgentError(`simulated GPIO edges: reading ${path} failed: ${err.message}`, { cause: err });
    });
    this.edgeFeed = { socket, listeners };
    return this.edgeFeed;
  }

  close(): void {
    this.edgeFeed?.socket.destroy();
    this.edgeFeed = null;
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    for (const fd of this.fds.splice(0)) closeSync(fd);
  }
}
