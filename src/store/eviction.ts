import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';
import { readMeta, writeMeta } from './meta.js';

/** The event types raised as alarms (`P/doors/<uuid>/alarm`). */
export const ALARM_TYPES = [
  'duress',
  'tamper',
  'door_forced',
  'door_held_open',
  'emergency_release',
  'emergency_cleared',
  'emergency_wiring',
  'emergency_wiring_cleared',
] as const;

/**
 * The events eviction keeps longest (docs/architecture.md, "Eviction order"): the alarms, and a passback violation
 * (someone let through against an area's rule). Never a flood's summary (`summary: true`): a flood that follows an
 * alarm must not push it out.
 */
const KEPT_TYPES: readonly string[] = [...ALARM_TYPES, 'passback_violation'];

/** Whether an event is one eviction keeps longest: its type is one of KEPT_TYPES, and it is not a flood's summary. */
export function isKeptAlarm(type: string, data: Record<string, unknown> | undefined): boolean {
  return KEPT_TYPES.includes(type) && data?.summary !== true;
}

/** How many of the most recent alarm events eviction keeps, however many other events come after them. @internal */
export const KEPT_ALARMS = 1000;

/** The SQL condition of a row isKeptAlarm keeps; the state database's partial index `events_alarms` has the same one. @internal */
export const ALARM_CONDITION = `type IN (${KEPT_TYPES.map((t) => `'${t}'`).join(', ')}) AND json_extract(payload, '$.summary') IS NOT 1`;

const EVICTED_KEY = 'events_evicted';

/**
 * The audit log's bound: past the last `maxEvents` sequence numbers an event is evicted (and counted), except an
 * event not yet published (with MQTT) and one of the last KEPT_ALARMS alarms (isKeptAlarm). So behind the window
 * the other events and every flood's summary go first, as they leave it; an alarm goes only once KEPT_ALARMS newer
 * alarms are kept, the oldest published one first. Each step deletes only a range it has not looked at yet (the
 * new events that fell out of the window, the events just published, the alarms the newest alarm pushed out), so
 * rows kept behind the window are never scanned again and again.
 */
export class Eviction {
  /** Rows at or below this seq have been looked at: those left are kept (unpublished, or a recent alarm). */
  private done = 0;
  private floor_: number | null = null;
  private readonly range: Statement<[number, number, number]>;
  private readonly nthAlarm: Statement<[number], { seq: number }>;

  constructor(
    private readonly db: Db,
    private readonly options: { maxEvents: number; keepUnpublished: boolean },
  ) {
    this.range = db.prepare(
      `DELETE FROM events WHERE seq > ? AND seq <= ?${options.keepUnpublished ? ' AND published_at IS NOT NULL' : ''} AND NOT (${ALARM_CONDITION} AND seq >= ?)`,
    );
    this.nthAlarm = db.prepare(`SELECT seq FROM events WHERE ${ALARM_CONDITION} ORDER BY seq DESC LIMIT 1 OFFSET ?`);
  }

  /** Rows at or below this seq that are still there are kept past the window. */
  get windowStart(): number {
    return this.done;
  }

  /** An event was inserted (inside its transaction; `alarm`: isKeptAlarm): evicts what fell out of the window. */
  inserted(seq: number, alarm: boolean): void {
    let evicted = 0;
    if (alarm) {
      const before = this.floor();
      this.floor_ = null;
      const after = this.floor();
      // The oldest kept alarms may now go (if published), as their window has passed.
      if (after > before) evicted += this.range.run(before - 1, Math.min(after - 1, this.done), after).changes;
    }
    const end = seq - this.options.maxEvents;
    if (end > this.done) {
      evicted += this.range.run(this.done, end, this.floor()).changes;
      this.done = end;
    }
    this.count(evicted);
  }

  /** Events were marked published (inside that transaction): those already behind the window go now. */
  published(seqs: readonly number[]): void {
    if (!this.options.keepUnpublished || seqs.length === 0) return;
    const low = Math.min(...seqs);
    if (low > this.done) return;
    this.count(this.range.run(low - 1, Math.min(Math.max(...seqs), this.done), this.floor()).changes);
  }

  /** The KEPT_ALARMS-th most recent alarm's seq (0 while there are fewer): read through the partial index. */
  private floor(): number {
    this.floor_ ??= this.nthAlarm.get(KEPT_ALARMS - 1)?.seq ?? 0;
    return this.floor_;
  }

  private count(evicted: number): void {
    if (evicted > 0) writeMeta(this.db, EVICTED_KEY, (readMeta<number>(this.db, EVICTED_KEY) ?? 0) + evicted);
  }
}

export function evictedCount(db: Db): number {
  return readMeta<number>(db, EVICTED_KEY) ?? 0;
}
