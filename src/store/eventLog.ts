import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';
import type { PendingWrites } from './pendingWrites.js';
import { ALARM_TYPES, Eviction, evictedCount, isKeptAlarm } from './eviction.js';
import type { WalSync } from './walSync.js';
import { withProps } from '../core/objects.js';

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
  | 'schedule_waiting_for_interlock'
  | 'clock_skew'
  // Issue 30 items 2 and 3: the offline limit and the supervision events (docs/operations.md, "Audit log and status").
  | 'cache_too_old'
  | 'cache_fresh'
  // Issue 51 item 8: the cache found damaged, and rebuilt from the service (docs/sync.md, "A damaged cache").
  | 'cache_damaged'
  | 'cache_rebuilt'
  | 'granted_not_opened'
  | 'power_lost'
  | 'power_restored'
  | 'battery_low'
  | 'battery_ok'
  | 'link_lost'
  | 'link_restored'
  // A directory answer the mass-removal guard refused, and the restrictions of it applied at once (docs/sync.md).
  | 'sync_refused'
  | 'config_changed'
  | 'emergency_release'
  | 'emergency_cleared'
  | 'emergency_wiring'
  | 'emergency_wiring_cleared'
  // Doors that work together (docs/areas.md).
  | 'awaiting_second_person'
  | 'passback_violation'
  | 'area_reset'
  | 'area_checkpoint'
  // The local control socket (docs/local-control.md): each request, and each tap a learn session showed instead of deciding.
  | 'local_command'
  | 'learn_tap'
  // Reader firmware over OSDP (docs/hardware.md, "Reader firmware"): started, done, failed.
  | 'reader_firmware';

export interface NewEvent {
  type: EventType;
  door: string | null;
  /** Wall-clock ms. */
  at: number;
  /** Type-specific fields; never a whole card number, PIN or token (use hints). */
  data?: Record<string, unknown>;
  /** Synced before `append` returns, as an alarm is: an area's fact (a passage, a reset), which a muster list needs after a power cut. */
  durable?: boolean;
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
  /** Called once an event is written, and durable with `walSync` (the outbox then publishes it). */
  onAppend?: () => void;
  /** Called with each event as it is committed (live notifications, e.g. Home Assistant: not the audit trail). */
  onWritten?: (event: WireEvent) => void;
  /** The daemon's retry queue: an event that cannot be written now waits in memory, in order, never lost. */
  writes?: PendingWrites;
  /**
   * The daemon (store/walSync.ts): events are committed with synchronous=NORMAL, as its pending writes run them,
   * and made durable off the event loop; the outbox is given only durable ones (a power cut must not take back
   * an event the broker has, whose seq would be used again). An alarm is synced before `append` returns, as
   * synchronous=FULL would have: it goes out at once, naming its seq.
   */
  walSync?: WalSync;
  /** Events go out over MQTT: an event not yet published is never evicted, whatever maxEvents says. */
  keepUnpublished?: boolean;
  /**
   * Called once each time the log starts keeping unpublished events older than its maxEvents window (the broker
   * has been away or refusing that long): the log then grows past maxEvents rather than lose an audit event.
   */
  onOverCap?: (oldestKept: number) => void;
}

const ALARMS: ReadonlySet<string> = new Set<string>(ALARM_TYPES);

/**
 * The audit log and MQTT outbox: every decision and door event with a sequence number, written with
 * synchronous=FULL so it survives a crash (the daemon: synced right after, off the event loop, see `walSync`). Bounded: past `maxEvents` the oldest are evicted and counted, never an
 * unpublished one nor one of the last KEPT_ALARMS alarms, nor of the last alarms of each door and type (store/eviction.ts: in what order).
 */
export class EventLog {
  private readonly insert: Statement<[number, string | null, string, string]>;
  private readonly insertTransaction: (event: NewEvent, payload: string) => number;
  private readonly eviction: Eviction;
  private readonly oldestUnpublished: Statement<[number], { seq: number }>;
  private overCap = false;
  private readonly after: Statement<[number, number], EventRow>;
  private readonly unpublishedAfter: Statement<[number, number, number], EventRow>;
  private readonly mark: Statement<[number, number]>;
  private nextKey = 0;
  /** With walSync: the newest seq known durable, and the seqs committed since with the sync ticket covering each. */
  private durableSeq = Number.MAX_SAFE_INTEGER;
  private readonly awaitingSync: Array<{ ticket: number; seq: number }> = [];

  constructor(
    private readonly db: Db,
    private readonly options: EventLogOptions,
  ) {
    this.insert = db.prepare('INSERT INTO events (at, door_uuid, type, payload) VALUES (?, ?, ?, ?)');
    this.eviction = new Eviction(db, { maxEvents: options.maxEvents, keepUnpublished: options.keepUnpublished ?? false });
    this.oldestUnpublished = db.prepare('SELECT seq FROM events WHERE published_at IS NULL AND seq <= ? ORDER BY seq LIMIT 1');
    this.after = db.prepare('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?');
    this.unpublishedAfter = db.prepare('SELECT * FROM events WHERE published_at IS NULL AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?');
    this.mark = db.prepare('UPDATE events SET published_at = ? WHERE seq = ?');
    this.insertTransaction = db.transaction((event: NewEvent, payload: string) => {
      const inserted = Number(this.insert.run(event.at, event.door, event.type, payload).lastInsertRowid);
      this.eviction.inserted(inserted, isKeptAlarm(event.type, event.data) ? { type: event.type, door: event.door } : null);
      return inserted;
    });
    const { walSync } = options;
    if (walSync) {
      // What is in the log at start is made durable first (a crash of the last run may have left it unsynced).
      walSync.syncNow();
      this.durableSeq = (db.prepare('SELECT coalesce(max(seq), 0) FROM events').pluck().get() as number) ?? 0;
      walSync.onSynced((upTo) => this.synced(upTo));
    }
  }

  /** A sync covering tickets up to `upTo` finished: the events it covers go to the outbox. */
  private synced(upTo: number): void {
    let durable = this.durableSeq;
    while (this.awaitingSync.length > 0 && this.awaitingSync[0]!.ticket <= upTo) durable = this.awaitingSync.shift()!.seq;
    if (durable === this.durableSeq) return;
    this.durableSeq = durable;
    this.options.onAppend?.();
  }

  /**
   * Records an event. Returns it as written, or null when it had to wait for the database (it is then
   * written, in order, as soon as the database takes it).
   */
  append(event: NewEvent): WireEvent | null {
    const payload = JSON.stringify(event.data ?? {});
    let wire: WireEvent | null = null;
    const { walSync } = this.options;
    const write = () => {
      const seq = walSync ? walSync.run(() => this.insertTransaction(event, payload)) : this.insertTransaction(event, payload);
      if (seq % 100 === 0) this.checkOverCap(); // a look every 100 events is enough
      const written = this.toWire({ seq, at: event.at, door_uuid: event.door, type: event.type, payload, published_at: null });
      wire = written;
      this.options.onWritten?.(written);
      if (!walSync) {
        this.options.onAppend?.();
        return;
      }
      this.awaitingSync.push({ ticket: walSync.ticket, seq });
      // As synchronous=FULL would: durable before the alarm goes out naming it (the outbox hears of it too).
      if (ALARMS.has(event.type) || event.durable === true) walSync.syncNow();
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

  /** Events not yet published (PUBACK not received), oldest first, after `afterSeq`; with walSync only durable ones. */
  unpublished(afterSeq: number, limit: number): WireEvent[] {
    return this.unpublishedAfter.all(afterSeq, this.durableSeq, limit).map((row) => this.toWire(row));
  }

  /**
   * Marks events as published, in one transaction (one commit for a whole batch of PUBACKs). With walSync it is
   * not waited for: lost to a power cut, the events are published again, with the same ids.
   */
  markPublished(seqs: readonly number[], at: number): void {
    if (seqs.length === 0) return;
    const mark = this.db.transaction(() => {
      for (const seq of seqs) this.mark.run(at, seq);
      this.eviction.published(seqs);
    });
    if (this.options.walSync) this.options.walSync.run(mark);
    else mark();
  }

  /** Events with seq > `since`, oldest first. */
  since(since: number, limit = 1000): WireEvent[] {
    return this.after.all(since, limit).map((row) => this.toWire(row));
  }

  /** The newest event of `type` at `door` still in the log: its seq, when (wall-clock ms), its data; null: none, or evicted. */
  last(type: EventType, door: string): { seq: number; at: number; data: Record<string, unknown> } | null {
    const row = this.db.prepare('SELECT seq, at, payload FROM events WHERE type = ? AND door_uuid = ? ORDER BY seq DESC LIMIT 1').get(type, door) as
      | { seq: number; at: number; payload: string }
      | undefined;
    return row ? { seq: row.seq, at: row.at, data: JSON.parse(row.payload) as Record<string, unknown> } : null;
  }

  /** Events not yet published: the outbox's depth (counted on the partial index, without a scan of the log). */
  unpublishedCount(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM events WHERE published_at IS NULL').get() as { n: number }).n;
  }

  stats(): EventLogStats {
    const row = this.db
      .prepare('SELECT count(*) AS total, count(*) FILTER (WHERE published_at IS NULL) AS unpublished, coalesce(max(seq), 0) AS lastSeq FROM events')
      .get() as { total: number; unpublished: number; lastSeq: number };
    return withProps(row, { evicted: evictedCount(this.db) });
  }

  private toWire(row: EventRow): WireEvent {
    // The parsed object is this call's own: the wire fields are set on it (a parsed key is never taken as a setter).
    const wire = JSON.parse(row.payload) as Record<string, unknown>;
    wire.id = `${this.options.agentId}-${row.seq}`;
    wire.seq = row.seq;
    wire.at = new Date(row.at).toISOString();
    wire.door = row.door_uuid;
    wire.type = row.type;
    return wire as WireEvent;
  }
}
