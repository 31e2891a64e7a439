import type { Level } from '../core/relay.js';

/** One GPIO output pin. Writes are synchronous so the relay has changed when the call returns. */
export interface GpioOutput {
  readonly pin: number;
  write(level: Level): void;
  read(): Level;
}

/** A GPIO backend (sysfs through onoff, or the simulated tree). Pins are BCM numbers. */
export interface GpioDriver {
  readonly name: string;
  /** Claims `pin` as an output already driven to `initial`, so there is no glitch at start. */
  openOutput(pin: number, initial: Level): GpioOutput;
  /** Releases file handles; outputs keep their last level (a relay never floats at stop). */
  close(): void;
}
