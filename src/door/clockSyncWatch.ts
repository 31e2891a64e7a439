import type { Logger } from 'pino';
import type { Component } from '../lifecycle.js';
import type { Timers } from '../util/clock.js';

/** While the clock is not synchronized, it is asked again this often (documented in docs/operations.md, "Clock"). @internal */
export const CLOCK_RECHECK_MS = 30_000;

export interface ClockSyncWatchDeps {
  /** Asked once at start (util/clockSync.ts isClockSynchronized, or a test's probe). */
  probeNow: () => boolean;
  /** Asked again, without blocking, every CLOCK_RECHECK_MS until it says yes. */
  probeLater: () => Promise<boolean>;
  timers: Timers;
  logger: Logger;
}

/**
 * Whether the wall clock is synchronized (NTP, or a battery-backed RTC), for everything that must not act on
 * a clock nobody set: the resume of a timed unlock and the unlock schedule (issue 32 item 11). Once it is, it
 * stays so (an NTP server lost later leaves a clock that was right); until then it is asked again periodically
 * and the listeners hear when it becomes synchronized. One per agent: one timedatectl at a time.
 */
export class ClockSyncWatch implements Component {
  readonly name = 'clock sync';
  private synced = false;
  private timer: unknown = null;
  private stopped = false;
  private readonly listeners: Array<() => void> = [];

  constructor(private readonly deps: ClockSyncWatchDeps) {}

  start(): void {
    this.synced = this.deps.probeNow();
    if (this.synced) return;
    this.deps.logger.warn(
      { recheckSeconds: CLOCK_RECHECK_MS / 1000 },
      'the clock is not synchronized and no RTC is configured (agent.rtc): unlock schedules wait, timed unlocks are not resumed',
    );
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
  }

  synchronized(): boolean {
    return this.synced;
  }

  /** `listener` runs once the clock becomes synchronized (never when it already was at start). */
  onSynchronized(listener: () => void): void {
    this.listeners.push(listener);
  }

  private arm(): void {
    this.timer = this.deps.timers.setTimeout(() => {
      this.timer = null;
      void this.deps.probeLater().then(
        (yes) => this.answered(yes),
        () => this.answered(false),
      );
    }, CLOCK_RECHECK_MS);
  }

  private answered(yes: boolean): void {
    if (this.stopped) return;
    if (!yes) return this.arm();
    this.synced = true;
    this.deps.logger.info('the clock is synchronized now');
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (err) {
        this.deps.logger.error({ err }, 'a clock synchronization listener failed');
      }
    }
  }
}
