import type { Timers } from './clock.js';

/** What a key's flood left to say at the end of an interval. */
export interface BurstSummary {
  /** Occurrences counted (not recorded one by one) in the interval. */
  count: number;
  /** Wall-clock ms of the first and last of them. */
  firstAt: number;
  lastAt: number;
  /** Their data, folded (by default the last one's). */
  data: Record<string, unknown>;
}

export interface BurstSummarizerOptions {
  timers: Timers;
  intervalMs: number;
  /** Occurrences of one key let through one by one per interval before the rest are counted. */
  burst: number;
  report: (key: string, summary: BurstSummary) => void;
  /** Folds one more counted occurrence's data into the summary's (default: the last one wins). */
  fold?: (key: string, summary: Record<string, unknown>, data: Record<string, unknown>) => Record<string, unknown>;
}

interface Window {
  used: number;
  count: number;
  firstAt: number;
  lastAt: number;
  data: Record<string, unknown>;
  timer: unknown;
}

/**
 * Rate-limits anything an attacker (or a bad wire) can repeat at will, per key: the first `burst` occurrences of
 * an interval are let through at once; the rest are counted and reported as ONE summary when the interval ends.
 * While the flood goes on, the next intervals let nothing through one by one and report one summary each, so a
 * flood costs one record per key per interval however fast it comes; once an interval passes quietly the key
 * starts afresh. Nothing is lost: every occurrence is either let through or counted in a summary.
 */
export class BurstSummarizer {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly options: BurstSummarizerOptions) {}

  /** True: record this occurrence now. False: it is counted in the key's next summary. */
  admit(key: string, at: number, data: Record<string, unknown> = {}): boolean {
    const window = this.windows.get(key);
    if (!window) {
      this.open(key, 1);
      return true;
    }
    if (window.used < this.options.burst) {
      window.used++;
      return true;
    }
    if (window.count === 0) {
      window.firstAt = at;
      window.data = data;
    } else window.data = this.options.fold ? this.options.fold(key, window.data, data) : data;
    window.count++;
    window.lastAt = at;
    return false;
  }

  /** Reports every pending summary now (at stop: nothing counted is lost). */
  flush(): void {
    const windows = [...this.windows];
    this.windows.clear();
    for (const [key, window] of windows) {
      this.options.timers.clearTimeout(window.timer);
      if (window.count > 0) this.report(key, window);
    }
  }

  private open(key: string, used: number): void {
    const timer = this.options.timers.setTimeout(() => this.close(key), this.options.intervalMs);
    this.windows.set(key, { used, count: 0, firstAt: 0, lastAt: 0, data: {}, timer });
  }

  private close(key: string): void {
    const window = this.windows.get(key);
    if (!window) return;
    this.windows.delete(key);
    if (window.count === 0) return;
    // Still under fire: the next interval lets nothing through one by one, it only counts.
    this.open(key, this.options.burst);
    this.report(key, window);
  }

  private report(key: string, window: Window): void {
    this.options.report(key, { count: window.count, firstAt: window.firstAt, lastAt: window.lastAt, data: window.data });
  }
}
