import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { openDatabase, openStateDatabase, type Db } from '../../src/store/database.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { ReplayCache } from '../../src/store/replayCache.js';
import { EventLog } from '../../src/store/eventLog.js';
import { CLI, DOOR_UUID, tempDir, writeConfig } from '../support/cli.js';

const tmp = tempDir('door-agent-eventlog-');
afterAll(tmp.cleanup);

const AT0 = Date.parse('2026-11-24T09:00:00.000Z');
let n = 0;
const opened: Db[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) if (db.open) db.close();
});

function open(file: string, maxEvents = 1000): { db: Db; log: EventLog } {
  const db = openStateDatabase(file);
  opened.push(db);
  return { db, log: new EventLog(db, { agentId: 'front-agent', maxEvents }) };
}

const freshFile = () => join(tmp.path, `events-${n++}.db`);

describe('EventLog on a SQLite file', () => {
  it('append returns the wire event: id <agent>-<seq>, ISO time, door, type, the data fields and its link in the chain', () => {
    const { log } = open(freshFile());
    const first = log.append({ type: 'access_granted', door: DOOR_UUID, at: AT0, data: { kind: 'card', hint: '…78', reason: null } });
    // The log's first append starts its hash chain (docs/audit.md): seq 1 is the chain's first record.
    const [start] = log.since(0);
    expect(start).toEqual({
      id: 'front-agent-1',
      seq: 1,
      at: '2026-11-24T09:00:00.000Z',
      door: null,
      type: 'audit_chain_started',
      reason: 'new_log',
      chain: expect.stringMatching(/^[0-9a-f-]{36}$/),
      prev_hash: '0'.repeat(64),
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(first).toEqual({
      id: 'front-agent-2',
      seq: 2,
      at: '2026-11-24T09:00:00.000Z',
      door: DOOR_UUID,
      type: 'access_granted',
      kind: 'card',
      hint: '…78',
      reason: null,
      chain: start!.chain,
      prev_hash: start!.hash,
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const second = log.append({ type: 'command_rejected', door: null, at: AT0 + 1500 });
    expect(second).toEqual({
      id: 'front-agent-3',
      seq: 3,
      at: '2026-11-24T09:00:01.500Z',
      door: null,
      type: 'command_rejected',
      chain: start!.chain,
      prev_hash: first!.hash,
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(log.since(0)).toEqual([start, first, second]);
  });

  it('data cannot overwrite the id, seq, time, door or type of an event', () => {
    const { log } = open(freshFile());
    const event = log.append({
      type: 'locked',
      door: DOOR_UUID,
      at: AT0,
      data: { id: 'x', seq: 99, at: 'then', door: 'other', type: 'unlocked', cause: 'timer' },
    });
    expect(event).toMatchObject({ id: 'front-agent-2', seq: 2, at: '2026-11-24T09:00:00.000Z', door: DOOR_UUID, type: 'locked', cause: 'timer' });
    expect(log.since(1)).toEqual([event]);
  });

  it('since(n) returns the events after n in order, a page at a time, as append returned them', () => {
    const { log } = open(freshFile());
    const appended = Array.from({ length: 7 }, (_, i) =>
      log.append({ type: i % 2 === 0 ? 'door_opened' : 'door_closed', door: DOOR_UUID, at: AT0 + i * 1000, data: { i } }),
    );
    expect(log.since(1)).toEqual(appended); // seq 1: the chain's start
    const pages: number[][] = [];
    let cursor = 1;
    for (;;) {
      const page = log.since(cursor, 3);
      if (page.length === 0) break;
      pages.push(page.map((e) => e.seq));
      cursor = page.at(-1)!.seq;
    }
    expect(pages).toEqual([[2, 3, 4], [5, 6, 7], [8]]);
    expect(log.since(6).map((e) => e.i)).toEqual([5, 6]);
    expect(log.since(8)).toEqual([]);
  });

  it('keeps the events across closing and reopening the database, and continues the sequence', () => {
    const file = freshFile();
    const first = open(file);
    first.log.append({ type: 'exit_request', door: DOOR_UUID, at: AT0 });
    first.log.append({ type: 'unlocked', door: DOOR_UUID, at: AT0, data: { cause: 'exit button' } });
    first.db.close();
    const again = open(file);
    expect(again.log.since(0).map((e) => e.type)).toEqual(['audit_chain_started', 'exit_request', 'unlocked']);
    const locked = again.log.append({ type: 'locked', door: DOOR_UUID, at: AT0 + 5000 });
    expect(locked?.id).toBe('front-agent-4');
    // The chain goes on across the reopen: the same chain, linked to the record before.
    expect(locked).toMatchObject({ chain: again.log.since(0)[0]!.chain, prev_hash: again.log.since(2)[0]!.hash });
  });

  it('stats().unpublished counts events not yet published', () => {
    const { log } = open(freshFile());
    expect(log.stats()).toEqual({ total: 0, unpublished: 0, evicted: 0, lastSeq: 0 });
    for (let i = 0; i < 3; i++) log.append({ type: 'door_opened', door: DOOR_UUID, at: AT0 + i });
    expect(log.stats()).toEqual({ total: 4, unpublished: 4, evicted: 0, lastSeq: 4 }); // and the chain's start
    log.markPublished([1], AT0 + 10); // its PUBACK came
    expect(log.stats()).toEqual({ total: 4, unpublished: 3, evicted: 0, lastSeq: 4 });
  });

  it("republish marks seqs of the log's chain unpublished again; the seqs before the chain (an older log's) are left out", () => {
    const file = freshFile();
    // Three events from before the chain (an older agent's log), already published.
    const db = openStateDatabase(file);
    opened.push(db);
    const insert = db.prepare('INSERT INTO events (at, door_uuid, type, payload, published_at) VALUES (?, ?, ?, ?, ?)');
    for (let i = 0; i < 3; i++) insert.run(AT0 + i, DOOR_UUID, 'door_opened', '{}', AT0 + 10);
    const log = new EventLog(db, { agentId: 'front-agent', maxEvents: 1000, keepUnpublished: true });
    for (let i = 0; i < 3; i++) log.append({ type: 'door_closed', door: DOOR_UUID, at: AT0 + 100 + i });
    const chain = log.since(3, 1)[0]!;
    expect(chain).toMatchObject({ seq: 4, type: 'audit_chain_started', reason: 'existing_log' });
    log.markPublished([4, 5, 6, 7], AT0 + 200);
    expect(log.republish(chain.chain as string, 1, 6)).toEqual({ resent: 3, evicted: 0 });
    expect(log.unpublished(0, 10).map((e) => e.seq)).toEqual([4, 5, 6]);
    // Asked again before the outbox sent them: still held, counted once more.
    expect(log.republish(chain.chain as string, 5, 7)).toEqual({ resent: 3, evicted: 0 });
    expect(log.unpublished(0, 10).map((e) => e.seq)).toEqual([4, 5, 6, 7]);
    // Another chain, or seqs the log never assigned: nothing changes.
    log.markPublished([4, 5, 6, 7], AT0 + 300);
    expect(log.republish('0b7f4c2e-2222-4a57-9d43-1f2e3a4b5c6d', 4, 5)).toEqual({ ignored: 'another chain' });
    expect(log.republish(chain.chain as string, 6, 8)).toEqual({ ignored: 'past the last seq' });
    expect(log.republish(chain.chain as string, 1, 3)).toEqual({ resent: 0, evicted: 0 });
    expect(log.stats().unpublished).toBe(0);
  });

  it('is bounded: past maxEvents the oldest are evicted and counted, and the count survives a reopen', () => {
    const file = freshFile();
    const { db, log } = open(file, 1000);
    // Seq 1 is the chain's start: each event's `i` is its seq.
    for (let i = 2; i <= 1500; i++) log.append({ type: 'access_denied', door: DOOR_UUID, at: AT0 + i, data: { i } });
    expect(log.stats()).toEqual({ total: 1000, unpublished: 1000, evicted: 500, lastSeq: 1500 });
    const kept = [...log.since(0, 600), ...log.since(1100, 600)];
    expect(kept).toHaveLength(1000);
    expect(kept[0]).toMatchObject({ seq: 501, i: 501, id: 'front-agent-501' });
    expect(kept.at(-1)).toMatchObject({ seq: 1500, i: 1500 });
    expect(kept.map((e) => e.seq)).toEqual(Array.from({ length: 1000 }, (_, k) => 501 + k));
    db.close();

    const again = open(file, 1000);
    expect(again.log.stats()).toEqual({ total: 1000, unpublished: 1000, evicted: 500, lastSeq: 1500 });
    again.log.append({ type: 'locked', door: DOOR_UUID, at: AT0 + 2000 });
    expect(again.log.stats()).toEqual({ total: 1000, unpublished: 1000, evicted: 501, lastSeq: 1501 });
    expect(again.log.since(0, 1)[0]?.seq).toBe(502);
  });
});

describe('door-agent events into a pipe', () => {
  it('a slow reader (door-agent events | cat) gets every event: nothing is lost when the CLI exits', () => {
    const dir = join(tmp.path, 'pipe');
    mkdirSync(dir);
    const config = writeConfig(dir);
    const db = openStateDatabase(join(dir, 'data/state.db'));
    const log = new EventLog(db, { agentId: 'test-agent', maxEvents: 100_000 });
    db.transaction(() => {
      // Seq 1 is the chain's start: each event's `i` is its seq.
      for (let i = 2; i <= 30_000; i++)
        log.append({ type: 'access_denied', door: DOOR_UUID, at: AT0 + i, data: { kind: 'card', hint: '…', reason: 'unknown_credential', i } });
    })();
    db.close();
    // The reader starts a second late, so the pipe fills and Node has to buffer the rest.
    const r = spawnSync('sh', ['-c', `"$1" "$2" events --config "$3" | (sleep 1; cat)`, 'sh', process.execPath, CLI, config], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(30_000);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ seq: 30_000, i: 30_000 });
  });
});

describe('upgrade from a cache that held the audit log (before state.db)', () => {
  it('moves the events (same seq), the replay cache and the daemon status into state.db, then drops them from the cache', () => {
    const dir = join(tmp.path, 'upgrade');
    mkdirSync(dir);
    const cacheFile = join(dir, 'cache.db');
    const old = new Database(cacheFile);
    for (const sql of MIGRATIONS.slice(0, 3)) old.exec(sql as string);
    old.pragma('user_version = 3');
    const insert = old.prepare('INSERT INTO events (seq, at, door_uuid, type, payload, published_at) VALUES (?, ?, ?, ?, ?, ?)');
    insert.run(41, AT0, DOOR_UUID, 'access_granted', '{"kind":"card","hint":"…78"}', AT0 + 5);
    insert.run(42, AT0 + 1, DOOR_UUID, 'unlocked', '{"cause":"card …78"}', null);
    old.prepare('INSERT INTO command_requests VALUES (?, ?, ?)').run('req-old', DOOR_UUID, AT0);
    old.prepare('INSERT INTO meta VALUES (?, ?)').run('events_evicted', '7');
    old.close();

    openDatabase(cacheFile).close(); // what any writing command or the daemon does first
    const state = openStateDatabase(join(dir, 'state.db'));
    opened.push(state);
    const log = new EventLog(state, { agentId: 'a', maxEvents: 1000 });
    expect(log.since(0).map((e) => [e.seq, e.type])).toEqual([
      [41, 'access_granted'],
      [42, 'unlocked'],
    ]);
    expect(log.stats()).toMatchObject({ unpublished: 1, evicted: 7, lastSeq: 42 });
    // The sequence goes on: the chain starts with a record saying the log was there before it.
    expect(log.append({ type: 'locked', door: DOOR_UUID, at: AT0 + 2 })?.seq).toBe(44);
    expect(log.since(42, 1)[0]).toMatchObject({ seq: 43, type: 'audit_chain_started', reason: 'existing_log', unchained_through: 42 });
    expect(new ReplayCache(state).seen('req-old')).toBe(true);
    const cache = new Database(cacheFile, { readonly: true });
    expect(cache.prepare("SELECT name FROM sqlite_master WHERE name IN ('events', 'command_requests')").all()).toEqual([]);
    cache.close();
  });
});
