import { join } from 'node:path';
import { fdatasync, fdatasyncSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openStateDatabase, type Db } from '../../src/store/database.js';
import { EventLog } from '../../src/store/eventLog.js';
import { WalSync, type WalSyncIo } from '../../src/store/walSync.js';
import type { Timers } from '../../src/util/clock.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';

// Issue 28 item 5: state.db's commits are not waited for on the event loop; the WAL is synced right after on the
// thread pool, and the outbox is only given the events a sync has made durable.

const tmp = tempDir('door-agent-walsync-');
afterAll(tmp.cleanup);

const AT0 = Date.parse('2026-11-26T09:00:00.000Z');
let n = 0;
const opened: Db[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) if (db.open) db.close();
});

/** Timers run by hand: a retry fires when the test says so. */
function manualTimers(): Timers & { fire(): void; pending(): number } {
  const timers = new Map<number, () => void>();
  let id = 0;
  return {
    setTimeout: (fn: () => void) => {
      timers.set(++id, fn);
      return id;
    },
    clearTimeout: (handle: unknown) => void timers.delete(handle as number),
    fire() {
      const due = [...timers.values()];
      timers.clear();
      for (const fn of due) fn();
    },
    pending: () => timers.size,
  } as Timers & { fire(): void; pending(): number };
}

/** A disk whose syncs fail while `failing` is set, counting the syncs asked for. */
function disk(): WalSyncIo & { failing: boolean; syncs: number } {
  const io = {
    failing: false,
    syncs: 0,
    fdatasync(fd: number, done: (err: NodeJS.ErrnoException | null) => void) {
      io.syncs++;
      if (io.failing) setImmediate(() => done(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })));
      else fdatasync(fd, done);
    },
    fdatasyncSync(fd: number) {
      io.syncs++;
      if (io.failing) throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
      fdatasyncSync(fd);
    },
  };
  return io;
}

function setup() {
  const db = openStateDatabase(join(tmp.path, `state-${n++}.db`));
  opened.push(db);
  const timers = manualTimers();
  const io = disk();
  const errors: number[] = [];
  // The syncs start when the test lets them (`startSyncs`): what the outbox sees before is checked first.
  const deferred: Array<() => void> = [];
  const walSync = new WalSync(db, { timers, io, defer: (start) => deferred.push(start), onError: (_err, failures) => errors.push(failures) });
  let appended = 0;
  const log = new EventLog(db, { agentId: 'a', maxEvents: 1000, walSync, onAppend: () => appended++ });
  const startSyncs = () => {
    for (const start of deferred.splice(0)) start();
  };
  return { db, walSync, log, timers, io, errors, startSyncs, appended: () => appended };
}

const until = async (what: () => boolean) => {
  for (let i = 0; i < 500 && !what(); i++) await new Promise((r) => setTimeout(r, 2));
  expect(what()).toBe(true);
};

const granted = { type: 'access_granted' as const, door: DOOR_UUID, at: AT0, data: { kind: 'card', hint: '…78' } };

describe('WalSync and the event log', () => {
  it('an event is committed at once but given to the outbox only once the WAL is synced', async () => {
    const { db, log, startSyncs, appended } = setup();
    const wire = log.append(granted);
    expect(wire?.seq).toBe(2); // 1: the audit chain's start, written in the same transaction
    // Committed: a reader of the file sees it (a crash of the process loses nothing)...
    expect(db.prepare('SELECT count(*) FROM events').pluck().get()).toBe(2);
    // ...but not durable yet: the outbox does not have it, so its seq can never go out and come back after a power cut.
    expect(log.unpublished(0, 10)).toEqual([]);
    expect(log.durableThrough()).toBe(0); // nor does the syslog export (store/syslogSource.ts reads no further)
    expect(appended()).toBe(0);
    await Promise.resolve(); // the end of the task: synchronous back to FULL, the sync asked for
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    startSyncs();
    await until(() => appended() === 1);
    expect(log.unpublished(0, 10).map((e) => e.seq)).toEqual([1, 2]);
    expect(log.durableThrough()).toBe(2);
  });

  it('the events of one task share one sync', async () => {
    const { log, io, startSyncs, appended } = setup();
    const before = io.syncs;
    log.append(granted);
    log.append({ ...granted, type: 'unlocked' });
    log.append({ ...granted, type: 'locked' });
    await Promise.resolve();
    startSyncs();
    await until(() => appended() > 0);
    expect(io.syncs - before).toBe(1);
    expect(log.unpublished(0, 10).map((e) => e.type)).toEqual(['audit_chain_started', 'access_granted', 'unlocked', 'locked']);
  });

  it('an alarm is durable before append returns, as synchronous=FULL would make it (it goes out at once)', () => {
    const { log, appended } = setup();
    log.append(granted);
    log.append({ ...granted, type: 'door_forced' });
    // The alarm's sync covers the event before it too.
    expect(log.unpublished(0, 10).map((e) => e.type)).toEqual(['audit_chain_started', 'access_granted', 'door_forced']);
    expect(appended()).toBeGreaterThan(0);
  });

  it("an area's passage (a durable event) is synced before append returns, as an alarm is: a muster list survives a power cut", () => {
    const { log, appended } = setup();
    log.append({ ...granted, type: 'door_opened', data: { passages: [{ area: 'lab', holder: 'user:101', direction: 'entry' }] }, durable: true });
    expect(log.unpublished(0, 10).map((e) => e.type)).toEqual(['audit_chain_started', 'door_opened']);
    expect(appended()).toBe(1);
  });

  it('a failing disk: events wait, unpublished and kept, the sync is retried with backoff, then they go out', async () => {
    const { log, io, timers, errors, startSyncs, appended } = setup();
    io.failing = true;
    log.append(granted);
    await Promise.resolve();
    startSyncs();
    await until(() => errors.length === 1);
    expect(log.unpublished(0, 10)).toEqual([]);
    expect(timers.pending()).toBe(1); // a retry, not a loop
    timers.fire();
    await until(() => errors.length === 2);
    expect(log.unpublished(0, 10)).toEqual([]);
    io.failing = false;
    timers.fire();
    await until(() => appended() === 1);
    expect(log.unpublished(0, 10).map((e) => e.type)).toEqual(['audit_chain_started', 'access_granted']);
    expect(timers.pending()).toBe(0);
  });

  it('what a previous run left unsynced is synced at start and handed to the outbox', () => {
    const file = join(tmp.path, `state-${n++}.db`);
    const first = openStateDatabase(file);
    first.pragma('synchronous = NORMAL');
    new EventLog(first, { agentId: 'a', maxEvents: 1000 }).append(granted);
    first.close();
    const db = openStateDatabase(file);
    opened.push(db);
    const io = disk();
    const walSync = new WalSync(db, { timers: manualTimers(), io, defer: () => undefined, onError: () => undefined });
    const log = new EventLog(db, { agentId: 'a', maxEvents: 1000, walSync });
    expect(io.syncs).toBe(1);
    expect(log.unpublished(0, 10).map((e) => e.seq)).toEqual([1, 2]); // the chain's start, the event
  });
});
