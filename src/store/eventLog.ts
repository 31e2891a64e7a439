import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';
import type { PendingWrites } from './pendingWrites.js';
import { Eviction, evictedCount } from './eviction.js';

export type EventType =
  | 'access_granted'
  | 'access_denied'
  | 'unlocked'
  | 'locked'
  | 'door_opened'
  | 'door_closed'
  | 'door_forced'
  | 'door_held_open'
  | 'exit_request'
  | 'keypad_locked_out'
  | 'card_locked_out'
  | 'reader_noise'
  | 'reader_online'
  | 'reader_offline'
  | 'reader_tamper'
  | 'reader_power'
  | 'command_rejected'
  | 'lockdown_started'
  | 'lockdown_ended'
  | 'duress'
  | 'duress_collision'
  | 'tamper'
  | 'first_person_in'
  | 'schedule_waiting_for_clock'
  | 'schedule_clock_synchronized'
  | 'clock_skew';

export interface NewEvent {
  type: EventType;
  door: string | null;
  /** Wall-clock ms. */
  at: number;
  /** Type-specific fields; never a whole card number, PIN or token (use hints). */
  data?: Record<string, unknown>;
}

/** An event as published and printed (docs/mqtt.md, `P/doors/<uuid>/events`). */
export interface WireEvent {
  id: string;
  seq: number;
  at: string;
  door: string | null;
  type: EventType;
  [field: string]: unknown;
}

interface EventRow {
  seq: number;
  at: number;
  door_uuid: string | null;
  type: EventType;
  payload: string;
  published_at: number | null;
}

export interface EventLogStats {
  total: number;
  unpublished: number;
  evicted: number;
  lastSeq: number;
}

export interface EventLogOptions {
  agentId: string;
  maxEvents: number;
  /** Called once an event is written (the outbox then publishes it). */
  onAppend?: () => void;
  /** The daemon's retry queue: an event that cannot be written now waits in memory, in order, never lost. */
  writes?: PendingWrites;
  /** Events go out over MQTT: an event not yet published is never evicted, whatever maxEvents says. */
  keepUnpublished?: boolean;
  /**
   * Called once each time the log starts keeping unpublished events older than its maxEvents window (the broker
   * has been away or refusing that long): the log then grows past maxEvents rather than lose an audit event.
   */
  onOverCap?: (oldestKept: number) => void;
}

/**
 * The audit log and MQTT outbox: every decision and door event with a sequence number, written with
 * synchronous=FULL so it survives a crash. Bounded: past `maxEvents` the oldest are evicted and counted, never an
 * unpublished one nor one of the last KEPT_ALARMS alarms (store/eviction.ts).
 */
export class EventLog {
  private readonly insert: Statement<[number, string | null, string, string]>;
  private readonly eviction: Eviction;
  private readonly oldestUnpublished: Statement<[number], { seq: number }>;
  private overCap = false;
  private readonly after: Statement<[number, number], EventRow>;
  private nextKey = 0;

  constructor(
    private readonly db: Db,
    private readonly options: EventLogOptions,
  ) {
    this.insert = db.prepare('INSERT INTO events (at, door_uuid, type, payload) VALUES (?, ?, ?, ?)');
    this.eviction = new Eviction(db, { maxEvents: options.maxEvents, keepUnpublished: options.keepUnpublished ?? false });
    this.oldestUnpublished = db.prepare('SELECT seq FROM events WHERE published_at IS NULL AND seq <= ? ORDER BY seq LIMIT 1');
    this.after = db.prepare('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?');
  }

  /**
   * Records an event. Returns it as written, or null when it had to wait for the database (it is then
   * written, in order, as soon as the database takes it).
   */
  append(event: NewEvent): WireEvent | null {
    const payload = JSON.stringify(event.data ?? {});
    let wire: WireEvent | null = null;
    const write = () => {
      const seq = this.db.transaction(() => {
        const inserted = Number(this.insert.run(event.at, event.door, event.type, payload).lastInsertRowid);
        this.eviction.inserted(inserted, event.type);
        return inserted;
      })();
      if (seq % 100 === 0) this.checkOverCap(); // a look every 100 events is enough
      wire = this.toWire({ seq, at: event.at, door_uuid: event.door, type: event.type, payload, published_at: null });
      this.options.onAppend?.();
    };
    if (this.options.writes) this.options.writes.run(`event-${this.nextKey++}`, write);
    else write();
    return wire;
  }

  /** Says once (until the log is back inside its window) that unpublished events are kept past maxEvents. */
  private checkOverCap(): void {
    if (!this.options.keepUnpublished || !this.options.onOverCap) return;
    const kept = this.oldestUnpublished.get(this.eviction.windowStart);
    if (kept && !this.overCap) this.options.onOverCap(kept.seq);
    this.overCap = kept !== undefined;
  }

  /** Unpublished events older than the maxEvents window: kept (never evicted) until the broker has them. */
  keptPastWindow(): number {
    const row = this.db
      .prepare('SELECT count(*) AS n FROM events WHERE published_at IS NULL AND seq <= (SELECT coalesce(max(seq), 0) FROM events) - ?')
      .get(this.options.maxEvents) as { n: number };
    return row.n;
  }

  /** Events not yet published (PUBACK not received), oldest first, after `afterSeq`. */
  unpublished(afterSeq: number, limit: number): WireEvent[] {
    return (this.db.prepare('SELECT * FROM events WHERE published_at IS NULL AND seq > ? ORDER BY seq LIMIT ?').all(afterSeq, limit) as EventRow[]).map((row) =>
      this.toWire(row),
    );
  }

  /** Marks events as published, in one transaction (one fsync for a whole batch of PUBACKs). */
  markPublished(seqs: readonly number[], at: number): void {
    if (seqs.length === 0) return;
    const mark = this.db.prepare('UPDATE events SET published_at = ? WHERE seq = ?');
    this.db.transaction(() => {
      for (const seq of seqs) mark.run(at, seq);
      this.eviction.published(seqs);
    })();
  }

  /** Events with seq > `since`, oldest first. */
  since(since: number, limit = 1000): WireEvent[] {
    return this.after.all(since, limit).map((row) => this.toWire(row));
  }

  /** Events not yet published: the outbox's depth (counted on the partial index, without a scan of the log). */
  unpublishedCount(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM events WHERE published_at IS NULL').get() as { n: number }).n;
  }

  stats(): EventLogStats {
    const row = this.db
      .prepare('SELECT count(*) AS total, count(*) FILTER (WHERE published_at IS NULL) AS unpublished, coalesce(max(seq), 0) AS lastSeq FROM events')
      .get() as { total: number; unpublished: number; lastSeq: number };
    return { ...row, evicted: evictedCount(this.db) };
  }

  private toWire(row: EventRow): WireEvent {
    const data = JSON.parse(row.payload) as Record<string, unknown>;
    return {
      ...data,
      id: `${this.options.agentId}-${row.seq}`,
      seq: row.seq,
      at: new Date(row.at).toISOString(),
      door: row.door_uuid,
      type: row.type,
    };
  }
}
