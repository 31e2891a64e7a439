import type { Logger } from 'pino';
import type { Level } from '../core/relay.js';
import type { GpioDriver, GpioOutput } from '../hardware/gpio.js';
import type { Timers } from '../util/clock.js';
import type { FeedbackKind, ReaderOptions, SignalLineOptions, SignalLines } from './options.js';

export interface ReaderSignalsDeps {
  gpio: GpioDriver;
  timers: Timers;
  logger: Logger;
}

/**
 * One LED or buzzer line: plays a pattern (ms on, off, on, ...) and is left inactive at its end. A new pattern
 * replaces the one playing at once. Writes that fail are logged once per run of failures and never thrown: the
 * door has decided already, and a reader that cannot show it must not undo that.
 */
class SignalLine {
  private readonly output: GpioOutput;
  private readonly inactive: Level;
  private timer: unknown = null;
  /** The level the line is known to be at; null after a failed write, so the next write is tried whatever it is. */
  private level: Level | null;
  private failing = false;
  private closed = false;

  constructor(
    private readonly which: 'led' | 'buzzer',
    private readonly options: SignalLineOptions,
    private readonly deps: ReaderSignalsDeps,
  ) {
    this.inactive = options.activeLevel === 1 ? 0 : 1;
    // Opened already idle: the reader neither flashes nor beeps when the agent starts.
    this.output = deps.gpio.openOutput(options.pin, this.inactive);
    this.level = this.inactive;
  }

  play(kind: FeedbackKind): void {
    if (this.closed) return;
    this.cancel();
    // A pattern missing (not through the schema, which gives every outcome one) leaves the line idle.
    this.step(this.options.patterns[kind] ?? [], 0);
  }

  close(): void {
    if (this.closed) return;
    this.cancel();
    this.write(false);
    this.closed = true;
  }

  private step(pattern: readonly number[], index: number): void {
    if (index >= pattern.length) {
      this.timer = null;
      this.write(false);
      return;
    }
    // Even steps are on, odd ones off.
    this.write(index % 2 === 0);
    this.timer = this.deps.timers.setTimeout(() => this.step(pattern, index + 1), pattern[index]!);
  }

  private cancel(): void {
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
  }

  private write(on: boolean): void {
    const level: Level = on ? this.options.activeLevel : this.inactive;
    if (level === this.level) return;
    try {
      this.output.write(level);
      this.level = level;
    } catch (err) {
      this.level = null;
      if (!this.failing)
        this.deps.logger.warn({ err, pin: this.options.pin, line: this.which }, `reader ${this.which} line cannot be driven; the door works on without it`);
      this.failing = true;
      return;
    }
    if (this.failing) this.deps.logger.info({ pin: this.options.pin, line: this.which }, `reader ${this.which} line driven again`);
    this.failing = false;
  }
}

/**
 * A reader's LED and buzzer lines driven by the agent (Wiegand, serial and keyboard readers wired to GPIO): each
 * line is opened at its inactive level, and `play` shows an outcome on all of them together.
 * @public (scripts/hw-selftest.sh runs it from dist)
 */
export class ReaderSignals {
  private readonly lines: SignalLine[] = [];

  /** Opens each configured line as an output (this throws as any output that cannot be claimed does). */
  constructor(lines: SignalLines, deps: ReaderSignalsDeps) {
    if (lines.led) this.lines.push(new SignalLine('led', lines.led, deps));
    if (lines.buzzer) this.lines.push(new SignalLine('buzzer', lines.buzzer, deps));
  }

  /** Plays the outcome's pattern on every line, replacing whatever is playing. Never throws. */
  play(kind: FeedbackKind): void {
    for (const line of this.lines) line.play(kind);
  }

  /** Stops the patterns and leaves every line inactive; `play` does nothing afterwards. */
  close(): void {
    for (const line of this.lines) line.close();
  }
}

export interface ReaderFeedbackHandle {
  /** Shows a decision at the reader (lines and reply). Never throws. */
  signal(kind: FeedbackKind): void;
  close(): void;
}

export interface ReaderFeedbackDeps extends ReaderSignalsDeps {
  /** The serial reader, for its reply lines (SerialReader.send). */
  serial?: { send(text: string): boolean };
}

/** The reply sent for an outcome: a lockout or a lockdown is a refusal, so the deny reply stands in for them. */
export function replyFor(replies: Partial<Record<FeedbackKind, string>>, kind: FeedbackKind): string | undefined {
  return replies[kind] ?? (kind === 'lockedOut' || kind === 'lockdown' ? replies.deny : undefined);
}

/**
 * A door's reader feedback other than OSDP's (which goes over its own bus): its LED and buzzer lines, and for a
 * serial reader the replies written back to it. Null when the reader has none of them.
 */
export function readerFeedback(door: { reader?: ReaderOptions }, deps: ReaderFeedbackDeps): ReaderFeedbackHandle | null {
  const reader = door.reader;
  if (!reader || reader.type === 'osdp') return null;
  const replies = reader.type === 'serial' && deps.serial ? reader.replies : undefined;
  const hasReplies = replies !== undefined && Object.values(replies).some((r) => r !== undefined);
  if (!reader.led && !reader.buzzer && !hasReplies) return null;
  const signals = new ReaderSignals(reader, deps);
  const serial = deps.serial;
  return {
    signal: (kind) => {
      signals.play(kind);
      const reply = replies && replyFor(replies, kind);
      if (reply === undefined || !serial) return;
      try {
        serial.send(reply);
      } catch (err) {
        deps.logger.warn({ err }, 'reader reply not sent');
      }
    },
    close: () => signals.close(),
  };
}
