import type { Timers } from '../util/clock.js';

/** What a reader dropped since the last report. */
export interface NoiseSummary {
  /** Bursts (serial) or frames (Wiegand) dropped. */
  count: number;
  /** Bytes (serial) or bits (Wiegand) they held. */
  units: number;
  /** How many of them each reason covered. */
  reasons: Record<string, number>;
}

/**
 * Reports reader noise at most once per `intervalMs`, with the totals since the last report, however fast it
 * comes: a bad cable or someone probing the data lines must not flood the journal or the audit log. The first
 * report waits `intervalMs` after the first drop, so a burst is one report.
 */
export class NoiseReporter {
  private pending: NoiseSummary | null = null;
  private timer: unknown = null;

  constructor(private readonly options: { timers: Timers; intervalMs: number; report: (summary: NoiseSummary) => void }) {}

  add(units: number, reasons: readonly string[]): void {
    this.pending ??= { count: 0, units: 0, reasons: {} };
    this.pending.count += 1;
    this.pending.units += units;
    for (const reason of reasons) this.pending.reasons[reason] = (this.pending.reasons[reason] ?? 0) + 1;
    if (this.timer === null) {
      this.timer = this.options.timers.setTimeout(() => {
        this.timer = null;
        this.flush();
      }, this.options.intervalMs);
    }
  }

  /** Reports what is pending now (at stop: nothing is lost). */
  flush(): void {
    if (this.timer !== null) this.options.timers.clearTimeout(this.timer);
    this.timer = null;
    const summary = this.pending;
    this.pending = null;
    if (summary) this.options.report(summary);
  }
}
