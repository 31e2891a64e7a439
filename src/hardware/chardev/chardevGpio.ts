import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Level } from '../../core/relay.js';
import { DoorAgentError, errorCode } from '../../util/errors.js';
import { pickPinController } from '../chipBase.js';
import type { EdgeInputs, GpioDriver, GpioInput, GpioOutput, PinEdge, Pull } from '../gpio.js';
import type { Bias, ChardevBinding, ChipInfo, PollWatcher } from './binding.js';
import { LineEventParser, monotonicUs } from './lineEvents.js';

export const DEV_DIR = '/dev';
/** How the lines show in `gpioinfo`. */
export const CONSUMER = 'door-agent';
/**
 * Edges the kernel queues for a Wiegand pair: a 37-bit frame is 74 edges, a card and a PIN typed at once a few
 * hundred. The kernel's default (16 per line) would overflow inside one card frame.
 */
const EDGE_QUEUE = 1024;

// `none` leaves the pin's bias as it is: a pull set in config.txt (gpio=22=ip,pu) or by the board stays, as
// it did with sysfs. Turning it off would leave a button line floating after a migration from onoff.
const BIAS: Record<Pull, Bias> = { up: 'pull-up', down: 'pull-down', none: 'as-is' };

export interface ChipChoice extends ChipInfo {
  path: string;
}

/** Every /dev/gpiochipN with its label, in number order; chips that cannot be read are skipped. */
export function listChips(binding: ChardevBinding, devDir = DEV_DIR): { chips: ChipChoice[]; unreadable: Array<{ path: string; error: string }> } {
  let names: string[];
  try {
    names = readdirSync(devDir).filter((n) => /^gpiochip\d+$/.test(n));
  } catch {
    names = [];
  }
  names.sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)));
  const chips: ChipChoice[] = [];
  const unreadable: Array<{ path: string; error: string }> = [];
  for (const name of names) {
    const path = join(devDir, name);
    try {
      chips.push({ path, ...binding.chipInfo(path) });
    } catch (err) {
      unreadable.push({ path, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return { chips, unreadable };
}

/**
 * `gpio.chip`: `auto` (the pin controller, see pickPinController in chipBase.ts), a device path (/dev/gpiochip4), a chip name
 * (gpiochip4) or a label (pinctrl-rp1). Labels are what stays the same across kernels and boards.
 */
export function resolveChip(binding: ChardevBinding, chip: string, devDir = DEV_DIR): ChipChoice {
  const { chips, unreadable } = listChips(binding, devDir);
  const seen = chips.map((c) => `${c.name} "${c.label}" (${c.lines} lines)`).join(', ') || 'none';
  const denied = unreadable.length > 0 ? `; cannot read ${unreadable.map((u) => `${u.path}: ${u.error}`).join('; ')}` : '';
  if (chip === 'auto') {
    const found = pickPinController(chips);
    if (found) return found;
    throw new DoorAgentError(
      `gpio.chip auto: no GPIO chip labelled pinctrl-* (a Raspberry Pi's pin controller) among ${seen}${denied}. ` +
        'Set gpio.chip to the chip your pins are on (its label from `gpiodetect`, e.g. gpio.chip: pinctrl-rp1).',
    );
  }
  const found = chips.find((c) => c.path === chip || c.name === chip || c.label === chip);
  if (found) return found;
  throw new DoorAgentError(`gpio.chip ${JSON.stringify(chip)}: no such GPIO chip; found ${seen}${denied}`);
}

/**
 * GPIO through the Linux character device (uAPI v2) and our small addon (native/gpio_chardev.c). Pins are line
 * offsets on one chip, BCM numbers on a Pi's pin controller. Each output is requested with its level in the
 * same ioctl (never a glitch) and held for the life of the process; inputs get their bias; edges come
 * stamped by the kernel. When the process ends the kernel releases the lines: see docs/hardware.md for what a
 * released relay line does and why the relay is wired to lock when undriven.
 */
export class ChardevGpio implements GpioDriver {
  readonly name = 'chardev';
  private chip_: ChipChoice | null = null;
  private readonly fds = new Set<number>();
  private readonly watchers = new Set<PollWatcher>();

  constructor(
    private readonly binding: ChardevBinding,
    private readonly chipSetting: string,
    private readonly devDir = DEV_DIR,
  ) {}

  /** The chip in use (resolved on first use, so a config check on another machine does not need it). */
  get chip(): ChipChoice {
    this.chip_ ??= resolveChip(this.binding, this.chipSetting, this.devDir);
    return this.chip_;
  }

  private request(pins: readonly number[], role: string, request: Parameters<ChardevBinding['requestLines']>[1]): number {
    const chip = this.chip;
    for (const pin of pins) {
      if (pin >= chip.lines) {
        throw new DoorAgentError(`GPIO ${pin} (${role}): ${chip.name} "${chip.label}" has lines 0-${chip.lines - 1} only`);
      }
    }
    try {
      const fd = this.binding.requestLines(chip.path, request);
      this.fds.add(fd);
      return fd;
    } catch (err) {
      throw new DoorAgentError(`GPIO ${pins.join(', ')} (${role}) on ${chip.path} "${chip.label}": ${this.explain(err, pins)}`, { cause: err });
    }
  }

  private explain(err: unknown, pins: readonly number[]): string {
    const message = err instanceof Error ? err.message : String(err);
    const code = errorCode(err);
    if (code === 'EBUSY') {
      const holders = pins.flatMap((pin) => {
        try {
          const info = this.binding.lineInfo(this.chip.path, pin);
          if (info.used && info.consumer === CONSUMER)
            return [`GPIO ${pin} is held by another door-agent process (a second daemon, with another agent.dataDir?)`];
          return info.used ? [`GPIO ${pin} is held by ${info.consumer ? `"${info.consumer}"` : 'another program (or the kernel)'}`] : [];
        } catch {
          return [];
        }
      });
      return `${message}${holders.length > 0 ? ` (${holders.join('; ')})` : ''}. Stop the other user of the line (\`gpioinfo\` names it) or pick another pin.`;
    }
    if (code === 'EACCES' || code === 'EPERM')
      return `${message}. The service user needs the gpio group (Raspberry Pi OS) or a udev rule for ${this.chip.path}.`;
    return message;
  }

  openOutput(pin: number, initial: Level): GpioOutput {
    const fd = this.request([pin], 'output', { consumer: CONSUMER, offsets: [pin], direction: 'output', values: [initial] });
    const guard = () => {
      if (!this.fds.has(fd)) throw new DoorAgentError(`GPIO ${pin}: used after the driver was closed`);
      return fd;
    };
    return {
      pin,
      write: (level) => this.binding.setValues(guard(), 1, level),
      read: () => (this.binding.getValues(guard(), 1) & 1 ? 1 : 0),
    };
  }

  openInput(pin: number, onChange: (level: Level) => void, _idleLevel: Level, pull: Pull = 'none'): GpioInput {
    const fd = this.request([pin], 'input', { consumer: CONSUMER, offsets: [pin], direction: 'input', bias: BIAS[pull], edges: true });
    const parser = new LineEventParser();
    const watcher = this.watch(fd, pin, () => {
      const bytes = this.binding.readEvents(fd);
      // The level after the last edge is what counts; the debouncer above reads it again once settled.
      const events = bytes ? parser.push(bytes) : [];
      const last = events.at(-1);
      if (last) onChange(last.rising ? 1 : 0);
    });
    return {
      pin,
      read: () => (this.binding.getValues(fd, 1) & 1 ? 1 : 0),
      close: () => this.release(fd, watcher),
    };
  }

  openEdgeInputs(pins: readonly number[], pull: Pull, onEdges: (edges: readonly PinEdge[]) => void): EdgeInputs {
    // One request for all the pins: the kernel queues their edges in one FIFO, in the order they happened.
    const fd = this.request(pins, 'edge input', {
      consumer: CONSUMER,
      offsets: pins,
      direction: 'input',
      bias: BIAS[pull],
      edges: true,
      eventBufferSize: EDGE_QUEUE,
    });
    const parser = new LineEventParser();
    const watcher = this.watch(fd, pins[0]!, () => {
      const bytes = this.binding.readEvents(fd);
      if (!bytes) return;
      const edges = parser.push(bytes).map((e) => ({ pin: e.offset, rising: e.rising, atUs: e.timestampUs, afterLoss: e.afterLoss }));
      if (edges.length > 0) onEdges(edges);
    });
    return {
      nowUs: monotonicUs,
      levels: () => {
        const bits = this.binding.getValues(fd, (1 << pins.length) - 1);
        return pins.map((_, i) => ((bits >> i) & 1 ? 1 : 0));
      },
      close: () => this.release(fd, watcher),
    };
  }

  private watch(fd: number, pin: number, onReadable: () => void): PollWatcher {
    const watcher = this.binding.watch(fd, onReadable, (message) => {
      // Polling a line request fails only if the chip went away (a driver unbound): nothing more will come.
      throw new DoorAgentError(`GPIO ${pin}: waiting for edges failed: ${message}`);
    });
    this.watchers.add(watcher);
    return watcher;
  }

  private release(fd: number, watcher: PollWatcher): void {
    watcher.close();
    this.watchers.delete(watcher);
    if (this.fds.delete(fd)) this.binding.close(fd);
  }

  /**
   * Releases every line. Called at the end of a stop, after the relays were driven locked; the kernel would
   * release them at exit anyway, and a test or a restart in the same process must be able to claim them again.
   */
  close(): void {
    for (const watcher of this.watchers) watcher.close();
    this.watchers.clear();
    for (const fd of this.fds) this.binding.close(fd);
    this.fds.clear();
  }
}
