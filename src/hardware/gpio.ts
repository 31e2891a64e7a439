import type { Level } from '../core/relay.js';

/** One GPIO output pin. Writes are synchronous so the relay has changed when the call returns. */
export interface GpioOutput {
  readonly pin: number;
  write(level: Level): void;
  read(): Level;
}

/** One GPIO input pin; changes are reported raw (not debounced) to the callback given at open. */
export interface GpioInput {
  readonly pin: number;
  read(): Level;
  close(): void;
}

/** A GPIO backend (sysfs through onoff, or the simulated tree). Pins are BCM numbers. */
export interface GpioDriver {
  readonly name: string;
  /** Claims `pin` as an output already driven to `initial`, so there is no glitch at start. */
  openOutput(pin: number, initial: Level): GpioOutput;
  /**
   * Claims `pin` as an input and calls `onChange` with each new level. `idleLevel` is what a simulated pin
   * starts at when nothing has set it yet (the contact closed, the button released).
   */
  openInput(pin: number, onChange: (level: Level) => void, idleLevel: Level): GpioInput;
  /** Releases file handles; outputs keep their last level (a relay never floats at stop). */
  close(): void;
}

/** Which driver (design section 3, `gpio`): sysfs through onoff, or the simulated tree of files. */
export type GpioOptions = { driver: 'onoff'; chipBase: number | 'auto' } | { driver: 'simulated'; simulatedDir: string };
