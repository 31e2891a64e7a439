import { createRequire } from 'node:module';
import type { Level } from '../core/relay.js';
import { DoorAgentError, describeFsError } from '../util/errors.js';
import { detectChipBase } from './chipBase.js';
import type { GpioDriver, GpioInput, GpioOutput, Pull } from './gpio.js';

export const SYSFS_GPIO_DIR = '/sys/class/gpio';

interface OnoffPin {
  writeSync(value: Level): void;
  readSync(): Level;
  watch(callback: (err: Error | null | undefined, value: Level) => void): void;
  unwatchAll(): void;
}
type OnoffCtor = new (
  gpio: number,
  direction: 'high' | 'low' | 'in' | 'out',
  edgeOrOptions?: 'both' | { activeLow: boolean },
  options?: { activeLow: boolean },
) => OnoffPin;

// Always reset sysfs active_low: a pin left inverted by another program would turn "locked" into "unlocked".
const NOT_INVERTED = { activeLow: false };

/**
 * Real GPIO through sysfs (the onoff package). BCM pin numbers are offset by the pin controller's sysfs base,
 * detected from gpiochip labels unless configured. onoff's own activeLow is not used: the level written is
 * already the physical one (see core/relay.ts), so the simulated and real drivers agree bit for bit.
 */
export class OnoffGpio implements GpioDriver {
  readonly name = 'onoff';
  private readonly Gpio: OnoffCtor;
  private base: number | null;
  private readonly inputs: OnoffPin[] = [];

  constructor(options: { chipBase: number | 'auto' }) {
    const require = createRequire(import.meta.url);
    // onoff is CommonJS and loads its epoll addon at import; load it only when real GPIO is configured.
    this.Gpio = (require('onoff') as { Gpio: OnoffCtor }).Gpio;
    this.base = options.chipBase === 'auto' ? null : options.chipBase;
  }

  private sysfsNumber(pin: number): number {
    // onoff itself always uses /sys/class/gpio, so detection reads the same tree.
    if (this.base === null) this.base = detectChipBase(SYSFS_GPIO_DIR);
    return this.base + pin;
  }

  openOutput(pin: number, initial: Level): GpioOutput {
    const number = this.sysfsNumber(pin);
    let gpio: OnoffPin;
    try {
      // 'high'/'low' sets direction and level in one write: the pin never passes through the other level.
      gpio = new this.Gpio(number, initial === 1 ? 'high' : 'low', NOT_INVERTED);
      gpio.writeSync(initial);
      if (gpio.readSync() !== initial) throw new Error(`reads back ${gpio.readSync()} after writing ${initial}`);
    } catch (err) {
      throw new DoorAgentError(
        `GPIO ${pin} (sysfs gpio${number}): ${describeFsError(err)}. The service user needs the gpio group; check the pin is not used by another program.`,
        { cause: err },
      );
    }
    return { pin, write: (level) => gpio.writeSync(level), read: () => gpio.readSync() };
  }

  openInput(pin: number, onChange: (level: Level) => void, _idleLevel: Level, pull: Pull = 'none'): GpioInput {
    if (pull !== 'none') {
      throw new DoorAgentError(`GPIO ${pin}: sysfs cannot set a pull-${pull} bias; use gpio.driver: chardev, or pull: none and a resistor`);
    }
    const number = this.sysfsNumber(pin);
    let gpio: OnoffPin;
    try {
      gpio = new this.Gpio(number, 'in', 'both', NOT_INVERTED);
    } catch (err) {
      throw new DoorAgentError(`GPIO ${pin} (sysfs gpio${number}) as input: ${describeFsError(err)}. The service user needs the gpio group.`, { cause: err });
    }
    // Interrupt-driven (epoll on the value file); debouncing is done by the caller, the same for every driver.
    gpio.watch((err, value) => {
      if (!err) onChange(value);
    });
    this.inputs.push(gpio);
    return { pin, read: () => gpio.readSync(), close: () => gpio.unwatchAll() };
  }

  close(): void {
    for (const input of this.inputs.splice(0)) input.unwatchAll();
    // Pins stay exported and keep their level: unexporting would let a relay input float.
  }
}
