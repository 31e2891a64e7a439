import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openStateDatabase, type Db } from '../../src/store/database.js';
import { EventLog } from '../../src/store/eventLog.js';
import { ALARM_CONDITION, KEPT_ALARMS, KEPT_PER_SOURCE } from '../../src/store/eviction.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';

// Eviction never drops an audit event that has not reached the broker, nor the last alarms (issue 32 item 13).

const tmp = tempDir('door-agent-eviction-');
afterAll(tmp.cleanup);
const AT0 = Date.parse('2026-11-24T09:00:00.000Z');
let n = 0;
const opened: Db[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) if (db.open) db.close();
});

function open(options: { keepUnpublished: boolean; onOverCap?: (seq: number) => void }, file = join(tmp.path, `e${n++}.db`)) {
  const db = openStateDatabase(file);
  opened.push(db);
  const log = new EventLog(db, { agentId: 'a', maxEvents: 1000, ...options });
  dbOf.set(log, db);
  return { db, file, log };
}

const dbOf = new WeakMap<EventLog, Db>();
/** Many appends in one transaction (one fsync), as a busy daemon's would be spread over time. */
const batch = (log: EventLog, fill: () => void) => dbOf.get(log)!.transaction(fill)();

const seqs = (log: EventLog) => {
  const out: number[] = [];
  for (let after = 0; ; ) {
    const page = log.since(after, 1000);
    if (page.length === 0) return out;
    out.push(...page.map((e) => e.seq));
    after = page.at(-1)!.seq;
  }
};

describe('eviction', () => {
  it('with the broker away, no unpublished event is evicted: the log grows past maxEvents, says so once, and shrinks once they are published', () => {
    const overCap: number[] = [];
    const { log } = open({ keepUnpublished: true, onOverCap: (seq) => overCap.push(seq) });
    batch(log, () => {
      // From 2: seq 1 is the audit chain's start (docs/audit.md), so each event's seq is its i.
      for (let i = 2; i <= 2500; i++) log.append({ type: 'access_denied', door: DOOR_UUID, at: AT0 + i });
    });
    expect(log.stats()).toMatchObject({ total: 2500, unpublished: 2500, evicted: 0 });
    expect(overCap).toEqual([1]);
    expect(log.keptPastWindow()).toBe(1500); // what door-agent status warns about
    // The broker is back: as PUBACKs mark them, those behind the window go.
    log.markPublished(
      Array.from({ length: 500 }, (_, i) => i + 1),
      AT0 + 5000,
    );
    expect(log.stats()).toMatchObject({ total: 2000, unpublished: 2000, evicted: 500 });
    log.markPublished(
      Array.from({ length: 2000 }, (_, i) => i + 501),
      AT0 + 5000,
    );
    expect(log.stats()).toMatchObject({ total: 1000, unpublished: 0, evicted: 1500 });
    expect(log.keptPastWindow()).toBe(0);
    expect(seqs(log)[0]).toBe(1501);
  });

  it(`keeps the last ${KEPT_ALARMS} alarms however many other events follow, and evicts the older ones`, () => {
    const { log } = open({ keepUnpublished: false });
    batch(log, () => {
      // From 2: seq 1 is the audit chain's start, evicted with the others; each alarm's seq is its i.
      for (let i = 2; i <= KEPT_ALARMS + 100; i++) log.append({ type: i % 2 ? 'tamper' : 'door_forced', door: DOOR_UUID, at: AT0 + i });
      for (let i = 1; i <= 5000; i++) log.append({ type: 'access_denied', door: DOOR_UUID, at: AT0 + 10_000 + i });
    });
    const kept = seqs(log);
    expect(kept).toHaveLength(KEPT_ALARMS + 1000);
    expect(kept.slice(0, KEPT_ALARMS)).toEqual(Array.from({ length: KEPT_ALARMS }, (_, i) => 101 + i)); // the last 1000 alarms
    expect(log.stats().evicted).toBe(100 + 4000);
    // A new alarm pushes the oldest kept one out.
    log.append({ type: 'duress', door: DOOR_UUID, at: AT0 + 20_000 });
    expect(seqs(log)[0]).toBe(102);
  });

  it("the eviction order: other events and a flood's summaries go first, then the oldest delivered alarm; passback violations count as alarms", () => {
    // An offline agent (no MQTT): a door forced and a passback violation, then a flood: KEPT_ALARMS summaries of
    // alarm types (a tamper switch toggled for hours) and many other events.
    const { log } = open({ keepUnpublished: false });
    batch(log, () => {
      log.append({ type: 'door_forced', door: DOOR_UUID, at: AT0 });
      log.append({ type: 'passback_violation', door: DOOR_UUID, at: AT0 + 1, data: { area: 'lab' } });
      for (let i = 1; i <= KEPT_ALARMS + 500; i++) {
        log.append({ type: 'tamper', door: DOOR_UUID, at: AT0 + 60_000 * i, data: { state: 'active', summary: true, count: 200 } });
        log.append({ type: 'door_opened', door: DOOR_UUID, at: AT0 + 60_000 * i + 1, data: { summary: true, count: 200 } });
        log.append({ type: 'access_denied', door: DOOR_UUID, at: AT0 + 60_000 * i + 2 });
      }
    });
    const kept = log.since(0, 2);
    expect(kept.map((e) => e.type)).toEqual(['door_forced', 'passback_violation']); // the flood's summaries did not push them out
    expect(log.stats().total).toBe(2 + 1000); // behind the window: only the two alarms
    // Real alarms past KEPT_ALARMS: the oldest goes, unless it is one of the last KEPT_PER_SOURCE of its door and
    // type (the door_forced and the passback violation are the last of theirs: alarms of another type keep them).
    batch(log, () => {
      for (let i = 1; i <= KEPT_ALARMS + 20; i++) log.append({ type: 'door_held_open', door: DOOR_UUID, at: AT0 + 1e9 + i });
    });
    const oldest = log.since(0, 3);
    expect(oldest.slice(0, 2).map((e) => e.type)).toEqual(['door_forced', 'passback_violation']);
    expect(oldest[2]).toMatchObject({ type: 'door_held_open', at: new Date(AT0 + 1e9 + 21).toISOString() }); // the first 20 went
    log.append({ type: 'duress', door: DOOR_UUID, at: AT0 + 2e9 });
    expect(log.since(0, 3)[2]).toMatchObject({ type: 'door_held_open', at: new Date(AT0 + 1e9 + 22).toISOString() });
  });

  it('a fire input flapped under the flood guard (ten flaps a minute at eight doors, each one recorded) never evicts an earlier door_forced', () => {
    // The flood guard lets 10 events of a type a minute per door through one by one: an attacker who flaps the fire
    // loop once every 6 s stays under it, and each flap records a release and its end at every door, real alarms
    // (160 a minute). Without MQTT (or with every event delivered) eviction may take any of them behind the window.
    const { log } = open({ keepUnpublished: false });
    const doors = [DOOR_UUID, ...Array.from({ length: 7 }, (_, i) => `0000000${i + 2}-0000-4000-8000-00000000000${i + 2}`)];
    log.append({ type: 'door_forced', door: DOOR_UUID, at: AT0 });
    let at = AT0 + 60_000;
    batch(log, () => {
      // Half an hour of it: 4,800 releases and ends of release, 4,800 relay moves.
      for (let flap = 0; flap < 300; flap++, at += 6000) {
        for (const door of doors) {
          log.append({ type: 'emergency_release', door, at });
          log.append({ type: 'unlocked', door, at, data: { cause: 'emergency release', relock_at: null } });
        }
        for (const door of doors) {
          log.append({ type: 'emergency_cleared', door, at: at + 3000 });
          log.append({ type: 'locked', door, at: at + 3000, data: { cause: 'emergency cleared' } });
        }
      }
    });
    expect(log.since(0, 1)[0]).toMatchObject({ type: 'door_forced', door: DOOR_UUID });
    // Still bounded: the window, the last KEPT_ALARMS alarms, and the newest few of each door and type behind them.
    expect(log.stats().total).toBeLessThanOrEqual(1000 + KEPT_ALARMS + 1 + doors.length * 2 * KEPT_PER_SOURCE);
    // The flood's own alarms past those went: the oldest release kept at a door is one of the last few.
    expect(log.stats().evicted).toBeGreaterThan(8000);
  });

  it('with MQTT, an alarm past KEPT_ALARMS goes only once delivered: the oldest delivered one goes in its place', () => {
    const { log } = open({ keepUnpublished: true });
    batch(log, () => {
      // From 2: seq 1 is the audit chain's start; each alarm's seq is its i.
      for (let i = 2; i <= KEPT_ALARMS + 1000; i++) log.append({ type: 'tamper', door: DOOR_UUID, at: AT0 + i, data: { state: 'active' } });
    });
    log.markPublished(
      Array.from({ length: KEPT_ALARMS + 1000 }, (_, i) => i + 1).filter((s) => s !== 2),
      AT0 + 5000,
    );
    expect(seqs(log).slice(0, 2)).toEqual([2, 1001]); // seq 2 is not delivered yet: kept; 3..1000 (and the chain's start) went
    expect(log.stats().total).toBe(1 + KEPT_ALARMS);
  });

  it('the alarms are found through the partial indexes, whose condition is the eviction one', () => {
    const { db } = open({ keepUnpublished: true });
    for (const name of ['events_alarms', 'events_alarm_sources']) {
      const index = db.prepare('SELECT sql FROM sqlite_master WHERE name = ?').get(name) as { sql: string };
      expect(index.sql).toContain(ALARM_CONDITION);
    }
    const bySource = db
      .prepare(`EXPLAIN QUERY PLAN SELECT seq FROM events WHERE type = 'tamper' AND door_uuid IS ? AND ${ALARM_CONDITION} ORDER BY seq DESC LIMIT 1 OFFSET 10`)
      .all(DOOR_UUID) as Array<{ detail: string }>;
    expect(bySource.map((p) => p.detail).join(';')).toContain('USING INDEX events_alarm_sources (type=? AND door_uuid=?)');
    // The last KEPT_ALARMS in seq order, never a sort of every alarm (the eviction names the index: store/eviction.ts).
    const plan = db
      .prepare(`EXPLAIN QUERY PLAN SELECT seq FROM events INDEXED BY events_alarms WHERE ${ALARM_CONDITION} ORDER BY seq DESC LIMIT 1 OFFSET 999`)
      .all() as Array<{ detail: string }>;
    expect(plan.map((p) => p.detail).join(';')).toBe('SCAN events USING INDEX events_alarms');
  });

  it("keepFrom (the syslog exporter's next unsent seq): nothing from it on is evicted; once it moves on, those behind the window go", () => {
    let nextUnsent = 100;
    const db = openStateDatabase(join(tmp.path, `e${n++}.db`));
    opened.push(db);
    const log = new EventLog(db, { agentId: 'a', maxEvents: 1000, keepFrom: () => nextUnsent });
    dbOf.set(log, db);
    batch(log, () => {
      for (let i = 2; i <= 1500; i++) log.append({ type: 'access_granted', door: DOOR_UUID, at: AT0 + i });
    });
    // The window would evict 1..500; the receiver has had only 1..99.
    expect(log.stats()).toMatchObject({ total: 1401, evicted: 99 });
    expect(seqs(log)[0]).toBe(100);
    nextUnsent = 1200; // the receiver is back and took up to 1199
    log.append({ type: 'locked', door: DOOR_UUID, at: AT0 + 2000 });
    expect(log.stats()).toMatchObject({ total: 1000, evicted: 501, lastSeq: 1501 });
    expect(seqs(log)[0]).toBe(502);
  });

  it('a restart keeps what the window kept (unpublished events, recent alarms) and goes on evicting', () => {
    const first = open({ keepUnpublished: true });
    batch(first.log, () => {
      // From 2: seq 1 is the audit chain's start; each event's seq is its i.
      for (let i = 2; i <= 1500; i++) first.log.append({ type: i === 3 ? 'door_forced' : 'access_granted', door: DOOR_UUID, at: AT0 + i });
    });
    first.log.markPublished(
      Array.from({ length: 1500 }, (_, i) => i + 1).filter((s) => s !== 7),
      AT0 + 2000,
    );
    first.db.close();
    const again = open({ keepUnpublished: true }, first.file);
    again.log.append({ type: 'locked', door: DOOR_UUID, at: AT0 + 3000 });
    expect(seqs(again.log).slice(0, 3)).toEqual([3, 7, 502]);
  });
});
