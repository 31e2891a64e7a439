import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';
import type { PendingWrites } from './pendingWrites.js';
import { Eviction, evictedCount, isKeptAlarm } from './eviction.js';
import { ALARM_TYPES } from '../api/eventTypes.js';
import type { WalSync } from './walSync.js';
import { EventChain, lastAssignedSeq } from './eventChain.js';
import { withProps } from '../core/objects.js';
import type { KnownEventType } from '../api/eventTypes.js';

/** Every type the agent writes: the one list the service reads too (api/eventTypes.ts; docs/audit.md's table). */
export type EventType = KnownEventType;

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
  chain_prev: string | null;
  chain_hash: string | null;
}

/**
 * What a request to publish seqs again did: `resent` rows made unpublished again, `evicted` seqs the log no longer
 * holds (they cannot be sent again); or why nothing was done.
 */
export type Republished = { resent: number; evicted: number } | { ignored: 'another chain' | 'past the last seq' };

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
  /**
   * Eviction never deletes a record with seq >= keepFrom() (the syslog exporter's next unsent seq: an event waits
   * in the log until it is sent).
   */
  keepFrom?: () => number;
  /** Makes a new chain's id (tests); default a random UUID. */
  newChainId?: () => string;
}

const ALARMS: ReadonlySet<string> = new Set<string>(ALARM_TYPES);

/**
 * The audit log and MQTT outbox: every decision and door event with a sequence number, written with
 * synchronous=FULL so it survives a crash (the daemon: synced right after, off the event loop, see `walSync`). Bounded: past `maxEvents` the oldest are evicted and counted, never an
 * unpublished one nor one of the last KEPT_ALARMS alarms, nor of the last alarms of each door and type (store/eviction.ts: in what order).
 */
export class EventLog {
  private readonly insert: Statement<[number, string | null, string, string]>;
  private readonly insertTransaction: (event: NewEvent, payload: string) => { seq: number; prev: string; hash: string };
  private readonly eviction: Eviction;
  private readonly chain: EventChain;
  private readonly oldestUnpublished: Statement<[number], { seq: number }>;
  private overCap = false;
  private readonly after: Statement<[number, number], EventRow>;
  private readonly unpublishedAfter: Statement<[number, number, number], EventRow>;
  private readonly mark: Statement<[number, number]>;
  private readonly heldBetween: Statement<[number, number], { n: number }>;
  private readonly clearPublished: Statement<[number, number]>;
  private nextKey = 0;
  /** With walSync: the newest seq known durable, and the seqs committed since with the sync ticket covering each. */
  private durableSeq = Number.MAX_SAFE_INTEGER;
  private readonly awaitingSync: Array<{ ticket: number; seq: number }> = [];

  constructor(
    private readonly db: Db,
    private readonly options: EventLogOptions,
  ) {
    this.insert = db.prepare('INSERT INTO events (at, door_uuid, type, payload) VALUES (?, ?, ?, ?)');
    this.eviction = new Eviction(db, { maxEvents: options.maxEvents, keepUnpublished: options.keepUnpublished ?? false, keepFrom: options.keepFrom });
    this.chain = new EventChain(db, options.newChainId);
    this.oldestUnpublished = db.prepare('SELECT seq FROM events WHERE published_at IS NULL AND seq <= ? ORDER BY seq LIMIT 1');
    this.after = db.prepare('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?');
    this.unpublishedAfter = db.prepare('SELECT * FROM events WHERE published_at IS NULL AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?');
    this.mark = db.prepare('UPDATE events SET published_at = ? WHERE seq = ?');
    this.heldBetween = db.prepare('SELECT count(*) AS n FROM events WHERE seq BETWEEN ? AND ?');
    this.clearPublished = db.prepare('UPDATE events SET published_at = NULL WHERE seq BETWEEN ? AND ? AND published_at IS NOT NULL');
    const chained = db.transaction((event: NewEvent, payload: string) => {
      this.chain.startIfNone(event.at, (type, startPayload) => {
        const started = Number(this.insert.run(event.at, null, type, startPayload).lastInsertRowid);
        this.eviction.inserted(started, null);
        return started;
      });
      const inserted = Number(this.insert.run(event.at, event.door, event.type, payload).lastInsertRowid);
      // The payload as written, read back: the hash covers what a reader of the wire parses (a Date, an undefined in an
      // array or a value with toJSON would otherwise hash unlike its JSON).
      const link = this.chain.link(inserted, event.at, event.door, event.type, JSON.parse(payload) as Record<string, unknown>);
      this.eviction.inserted(inserted, isKeptAlarm(event.type, event.data) ? { type: event.type, door: event.door } : null);
      return { seq: inserted, prev: link.prevHash, hash: link.hash };
    });
    // IMMEDIATE: the write lock first, so the chain's reads (its id, the previous hash) see another writer's last commit.
    this.insertTransaction = chained.immediate;
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
      const { seq, prev, hash } = walSync ? walSync.run(() => this.insertTransaction(event, payload)) : this.insertTransaction(event, payload);
      if (seq % 100 === 0) this.checkOverCap(); // a look every 100 events is enough
      const row: EventRow = { seq, at: event.at, door_uuid: event.door, type: event.type, payload, published_at: null, chain_prev: prev, chain_hash: hash };
      const written = this.toWire(row);
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

  /**
   * Marks seqs from..to of `chain` unpublished again (the service lost them: docs/audit.md, "How a gap closes"), so
   * the outbox sends them again. Only the log's current chain, and only seqs it has assigned; the ones it no longer
   * holds (evicted) are counted, not sent. Seqs before the chain's first belong to no chain: left out. With walSync
   * not waited for: a power cut that takes the change back leaves the gap open, and the service asks again.
   */
  republish(chain: string, from: number, to: number): Republished {
    const current = this.chain.current();
    if (current === null || current.id !== chain) return { ignored: 'another chain' };
    if (to > lastAssignedSeq(this.db)) return { ignored: 'past the last seq' };
    const first = Math.max(from, current.first_seq);
    if (first > to) return { resent: 0, evicted: 0 };
    const clear = this.db.transaction(() => {
      this.clearPublished.run(first, to);
      return this.heldBetween.get(first, to)!.n;
    });
    const held = this.options.walSync ? this.options.walSync.run(clear) : clear();
    return { resent: held, evicted: to - first + 1 - held };
  }

  /**
   * The newest seq known durable (with walSync; without it every committed event is): a reader that hands events
   * on (the syslog export) goes no further, as the outbox does, so that a power cut never takes back an event sent.
   */
  durableThrough(): number {
    return this.durableSeq;
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
    if (row.chain_hash !== null && row.chain_hash !== undefined) {
      const chain = this.chain.current();
      if (chain) wire.chain = chain.id;
      wire.prev_hash = row.chain_prev;
      wire.hash = row.chain_hash;
    }
    return wire as WireEvent;
  }
}
