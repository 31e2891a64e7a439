import type { Clock } from './clock.js';

export interface ForwardClockOptions {
  /** How far the system clock may be found behind before that is reported (a step back, not a slew). */
  skewMs: number;
  /** Below this the system clock is not trusted at all (core/decision.ts): passed through, refused as such. */
  trustedFrom: number;
}

/** The system clock was found more than the skew behind the mark: told once per step back. */
export type StepBackListener = (behindMs: number, heldAt: number) => void;

/**
 * The agent's wall clock for decisions: never steps back. It keeps a high-water mark (the latest wall time
 * seen, carried forward with monotonic time, and restored from state.db at start); while the system clock is
 * behind the mark (set back by hand, by a bad NTP answer, or while the agent was stopped) the mark is used, so
 * an expired guest link does not open again and a replayed command does not turn fresh. A clock before
 * `trustedFrom` (a board without RTC at boot) is passed through: the decision refuses time-bound access then.
 * A clock set ahead by mistake holds the agent there until real time catches up: keep NTP (docs/operations.md, "Clock").
 */
export class ForwardClock implements Clock {
  private markWall = Number.NEGATIVE_INFINITY;
  private markMono = 0;
  private behind = false;
  /** Set once the audit log exists (store/clockMark.ts). */
  onStepBack: StepBackListener | null = null;

  constructor(
    private readonly system: Clock,
    private readonly options: ForwardClockOptions,
  ) {}

  /** A mark saved before: time does not go back across a restart either. */
  restore(mark: number): void {
    if (!Number.isFinite(mark) || mark <= this.mark()) return;
    this.markWall = mark;
    this.markMono = this.system.monoNow();
  }

  /** The high-water mark now (what is saved). */
  mark(): number {
    return this.markWall + (this.system.monoNow() - this.markMono);
  }

  wallNow(): number {
    const wall = this.system.wallNow();
    const mono = this.system.monoNow();
    // Whole ms, like Date.now() (audit times are stored as integers); never less than a value returned before.
    const held = Math.floor(this.markWall + (mono - this.markMono));
    if (wall >= held) {
      this.markWall = wall;
      this.markMono = mono;
      this.behind = false;
      return wall;
    }
    if (wall < this.options.trustedFrom) return wall;
    if (!this.behind && held - wall > this.options.skewMs) {
      this.behind = true;
      this.onStepBack?.(held - wall, held);
    }
    return held;
  }

  monoNow(): number {
    return this.system.monoNow();
  }
}
