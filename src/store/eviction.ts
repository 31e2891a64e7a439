import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';
import { readMeta, writeMeta } from './meta.js';
import { ALARM_TYPES } from '../api/eventTypes.js';

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
/**
 * How many of the most recent alarms of each door and type eviction keeps besides, however many alarms of other
 * doors or types come after them: a flood of one input (a fire loop flapped just under the flood guard at every
 * door) cannot push out another input's alarm. @internal
 */
export const KEPT_PER_SOURCE = 10;

/**
 * The SQL condition of a row isKeptAlarm keeps; the state database's partial indexes `events_alarms` and
 * `events_alarm_sources` have the same one. @internal
 */
export const ALARM_CONDITION = `type IN (${KEPT_TYPES.map((t) => `'${t}'`).join(', ')}) AND json_extract(payload, '$.summary') IS NOT 1`;

/** The seq of the KEPT_PER_SOURCE-th most recent alarm of the door and type of the row being looked at (0: fewer). */
const SOURCE_FLOOR = `coalesce((SELECT k.seq FROM events k WHERE k.type = events.type AND k.door_uuid IS events.door_uuid AND ${ALARM_CONDITION} ORDER BY k.seq DESC LIMIT 1 OFFSET ${KEPT_PER_SOURCE - 1}), 0)`;

const EVICTED_KEY = 'events_evicted';

/**
 * The audit log's bound: past the last `maxEvents` sequence numbers an event is evicted (and counted), except an
 * event not yet published (with MQTT), one of the last KEPT_ALARMS alarms (isKeptAlarm), and one of the last
 * KEPT_PER_SOURCE alarms of its door and type. So behind the window the other events and every flood's summary go
 * first, as they leave it; an alarm goes only once KEPT_ALARMS newer alarms and KEPT_PER_SOURCE newer ones of its
 * own door and type are kept, the oldest published one first. Each step deletes only a range it has not looked at
 * yet (the new events that fell out of the window, the events just published, the alarms the newest alarm pushed
 * out of the last KEPT_ALARMS or out of its door and type's last KEPT_PER_SOURCE), so rows kept behind the window
 * are never scanned again and again.
 */
export class Eviction {
  /** Rows at or below this seq have been looked at: those left are kept (unpublished, or a recent alarm). */
  private done = 0;
  private floor_: number | null = null;
  private readonly range: Statement<[number, number, number]>;
  private readonly nthAlarm: Statement<[number], { seq: number }>;
  private readonly pushedOut: Statement<[string, string | null], { seq: number }>;

  constructor(
    private readonly db: Db,
    private readonly options: {
      maxEvents: number;
      keepUnpublished: boolean;
      /** Nothing at or after this seq is evicted (the syslog exporter's next unsent seq); the window waits for it. */
      keepFrom?: () => number;
    },
  ) {
    this.range = db.prepare(
      `DELETE FROM events WHERE seq > ? AND seq <= ?${options.keepUnpublished ? ' AND published_at IS NOT NULL' : ''} ` +
        `AND NOT (${ALARM_CONDITION} AND (seq >= ? OR seq >= ${SOURCE_FLOOR}))`,
    );
    // By the index in seq order: the planner would otherwise take events_alarm_sources and sort every alarm.
    this.nthAlarm = db.prepare(`SELECT seq FROM events INDEXED BY events_alarms WHERE ${ALARM_CONDITION} ORDER BY seq DESC LIMIT 1 OFFSET ?`);
    // The alarm of a door and type that the newest one of them pushed out of their last KEPT_PER_SOURCE.
    this.pushedOut = db.prepare(
      `SELECT seq FROM events WHERE type = ? AND door_uuid IS ? AND ${ALARM_CONDITION} ORDER BY seq DESC LIMIT 1 OFFSET ${KEPT_PER_SOURCE}`,
    );
  }

  /** Rows at or below this seq that are still there are kept past the window. */
  get windowStart(): number {
    return this.done;
  }

  /**
   * An event was inserted (inside its transaction; `alarm`: its door and type when isKeptAlarm, else null): evicts
   * what fell out of the window.
   */
  inserted(seq: number, alarm: { type: string; door: string | null } | null): void {
    let evicted = 0;
    if (alarm) {
      const before = this.floor();
      this.floor_ = null;
      const after = this.floor();
      // The oldest kept alarms may now go (if published, and not among their door and type's last), as their window has passed.
      if (after > before) evicted += this.range.run(before - 1, Math.min(after - 1, this.done), after).changes;
      // So may the one of this door and type that this alarm pushed out of their last KEPT_PER_SOURCE.
      const out = this.pushedOut.get(alarm.type, alarm.door)?.seq;
      if (out !== undefined && out <= this.done) evicted += this.range.run(out - 1, out, after).changes;
    }
    // Held at keepFrom: the rows from there on have not been looked at, so they are when it moves on.
    const end = Math.min(seq - this.options.maxEvents, (this.options.keepFrom?.() ?? Number.POSITIVE_INFINITY) - 1);
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
