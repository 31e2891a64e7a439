import type { Level } from '../core/relay.js';
import type { GpioDriver, GpioInput, Pull } from '../hardware/gpio.js';
import type { Timers } from '../util/clock.js';

/**
 * A GPIO input whose level counts only after it has held for `debounceMs` (contact bounce, button chatter).
 * The level at open is available as `level`; each settled change after that is reported to `onLevel`.
 */
export class DebouncedInput {
  private readonly input: GpioInput;
  private readonly timers: Timers;
  private stable: Level;
  private pending: unknown = null;

  constructor(
    driver: GpioDriver,
    options: { pin: number; idleLevel: Level; debounceMs: number; timers: Timers; onLevel: (level: Level) => void; pull?: Pull },
  ) {
    const { timers, debounceMs, onLevel } = options;
    this.timers = timers;
    this.input = driver.openInput(
      options.pin,
      () => {
        if (this.pending !== null) timers.clearTimeout(this.pending);
        const settle = () => {
          this.pending = null;
          const level = this.input.read();
          if (level !== this.stable) {
            this.stable = level;
            onLevel(level);
          }
        };
        if (debounceMs === 0) settle();
        else this.pending = timers.setTimeout(settle, debounceMs);
      },
      options.idleLevel,
      options.pull ?? 'none',
    );
    this.stable = this.input.read();
  }

  get level(): Level {
    return this.stable;
  }

  close(): void {
    if (this.pending !== null) this.timers.clearTimeout(this.pending);
    this.pending = null;
    this.input.close();
  }
}
