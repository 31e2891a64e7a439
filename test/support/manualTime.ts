import type { Clock, Timers } from '../../src/util/clock.js';

/**
 * A manual wall + monotonic clock with timers that fire, in due order, only when the test advances time.
 * `earlyFactor` below 1 makes timers fire early, `lateMs` late, as timers on a busy machine may.
 */
export class ManualTime implements Clock, Timers {
  wall: number;
  mono: number;
  earlyFactor = 1;
  lateMs = 0;
  private nextId = 1;
  private pending = new Map<number, { due: number; callback: () => void }>();

  constructor(start: { wall?: number; mono?: number } = {}) {
    this.wall = start.wall ?? Date.parse('2026-07-01T12:00:00Z');
    this.mono = start.mono ?? 1_000;
  }

  wallNow = (): number => this.wall;
  monoNow = (): number => this.mono;

  /** The monotonic time, for tests that only need timers. */
  get now(): number {
    return this.mono;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.pending.set(id, { due: this.mono + Math.ceil(Math.max(0, ms) * this.earlyFactor) + this.lateMs, callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** When the next timer is due (monotonic), null when none is pending. */
  nextDue(): number | null {
    let due: number | null = null;
    for (const entry of this.pending.values()) if (due === null || entry.due < due) due = entry.due;
    return due;
  }

  advance(ms: number): void {
    const target = this.mono + ms;
    for (let fired = 0; ; fired++) {
      if (fired > 10_000) throw new Error('timers keep firing without time passing');
      let next: [number, { due: number; callback: () => void }] | undefined;
      for (const entry of this.pending) if (entry[1].due <= target && (!next || entry[1].due < next[1].due)) next = entry;
      if (!next) break;
      this.pending.delete(next[0]);
      this.wall += next[1].due - this.mono;
      this.mono = next[1].due;
      next[1].callback();
    }
    this.wall += target - this.mono;
    this.mono = target;
  }
}
