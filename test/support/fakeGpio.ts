import type { Level } from '../../src/core/relay.js';
import type { GpioDriver, GpioInput, GpioOutput } from '../../src/hardware/gpio.js';

/**
 * A GPIO driver for in-process tests of the composition root: every operation goes into one ordered `log`
 * (shared with the test, so the order against other steps is visible), inputs are driven with `set`, and an
 * output can be made to fail.
 */
export class FakeGpio implements GpioDriver {
  readonly name = 'fake';
  readonly levels = new Map<number, Level>();
  readonly failing = new Set<number>();
  private readonly inputs = new Map<number, (level: Level) => void>();

  constructor(readonly log: string[] = []) {}

  openOutput(pin: number, initial: Level): GpioOutput {
    this.log.push(`open out ${pin}=${initial}`);
    this.levels.set(pin, initial);
    return {
      pin,
      write: (level) => {
        if (this.failing.has(pin)) {
          this.log.push(`write ${pin}=${level} FAILED`);
          throw Object.assign(new Error(`EIO: i/o error, write (gpio ${pin})`), { code: 'EIO' });
        }
        this.log.push(`write ${pin}=${level}`);
        this.levels.set(pin, level);
      },
      read: () => this.levels.get(pin) ?? 0,
    };
  }

  openInput(pin: number, onChange: (level: Level) => void, idleLevel: Level): GpioInput {
    this.log.push(`open in ${pin}`);
    // A level set before the open (an input already active when the agent starts) stays; otherwise it starts idle.
    if (!this.levels.has(pin)) this.levels.set(pin, idleLevel);
    this.inputs.set(pin, onChange);
    return {
      pin,
      read: () => this.levels.get(pin) ?? idleLevel,
      close: () => void this.log.push(`close in ${pin}`),
    };
  }

  /** Drives an input pin from outside (a button pressed, a door opened); before its open, the level it starts at. */
  set(pin: number, level: Level): void {
    this.levels.set(pin, level);
    this.inputs.get(pin)?.(level);
  }

  close(): void {
    this.log.push('close driver');
  }
}
