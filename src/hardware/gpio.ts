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

/**
 * An input's bias resistor, set by the character-device driver; `none` leaves it as the firmware set it
 * (config.txt `gpio=`), which is all sysfs can do.
 */
export type Pull = 'up' | 'down' | 'none';

/** One edge of an input, stamped when it happened (by the kernel for the character device). */
export interface PinEdge {
  pin: number;
  /** true: the line went high. */
  rising: boolean;
  /** Microseconds on CLOCK_MONOTONIC, the clock of `EdgeInputs.nowUs()`. */
  atUs: number;
  /** Edges were lost just before this one (the kernel's queue overflowed): what they belonged to is suspect. */
  afterLoss: boolean;
}

/** Inputs reporting every edge with its time (Wiegand data lines): pulses of 50 µs that polling would miss. */
export interface EdgeInputs {
  /** Now, on the clock of the edges' `atUs`. */
  nowUs(): number;
  /** Each pin's level now, in the order the pins were given (a Wiegand line idles high). */
  levels(): Level[];
  close(): void;
}

/** A GPIO backend (character device, sysfs through onoff, or the simulated tree). Pins are BCM numbers. */
export interface GpioDriver {
  readonly name: string;
  /** Claims `pin` as an output already driven to `initial`, so there is no glitch at start. */
  openOutput(pin: number, initial: Level): GpioOutput;
  /**
   * Claims `pin` as an input and calls `onChange` with each new level. `idleLevel` is what a simulated pin
   * starts at when nothing has set it yet (the contact closed, the button released).
   */
  openInput(pin: number, onChange: (level: Level) => void, idleLevel: Level, pull?: Pull): GpioInput;
  /**
   * Claims `pins` together as inputs reporting every edge in order of time, in batches (one batch per read).
   * Absent where the driver cannot timestamp edges (sysfs).
   */
  openEdgeInputs?(pins: readonly number[], pull: Pull, onEdges: (edges: readonly PinEdge[]) => void): EdgeInputs;
  /** Releases file handles; outputs keep their last level where the driver can (a relay never floats at stop). */
  close(): void;
}

/** Which driver (`gpio.driver`: docs/configuration.md, docs/hardware.md): the character device, sysfs through onoff, or the simulated tree. */
export type GpioOptions = { driver: 'chardev'; chip: string } | { driver: 'onoff'; chipBase: number | 'auto' } | { driver: 'simulated'; simulatedDir: string };
