import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentStore } from '../../src/store/agentStore.js';
import { appendOnly, CheckpointThread } from '../../src/store/checkpointThread.js';
import type { CheckpointReply } from '../../src/store/checkpointWorker.js';
import { openStateDatabase, type Db } from '../../src/store/database.js';
import { ManualTime } from '../support/manualTime.js';
import { sleep } from '../support/wait.js';

type Made = Extract<CheckpointReply, { ok: true }>;

/** 600 commits of a 4,000-byte row each: about 1,800 pages of log, past SQLite's 1,000-page checkpoint, short of 4,000. */
function writePages(db: Db): void {
  db.exec('CREATE TABLE IF NOT EXISTS filler (b BLOB)');
  const insert = db.prepare('INSERT INTO filler (b) VALUES (?)');
  for (let i = 0; i < 600; i++) insert.run(Buffer.alloc(4000, i % 251));
}

describe("state.db's checkpoints on a thread of their own", () => {
  let dir: string;
  let file: string;
  let db: Db;
  const threads: CheckpointThread[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'checkpoint-'));
    file = join(dir, 'state.db');
    db = openStateDatabase(file, { busyTimeoutMs: 20 });
  });

  afterEach(async () => {
    for (const t of threads.splice(0)) await t.stop();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the daemon's connection only appends to the log; the thread copies it into the database", async () => {
    appendOnly(db);
    const before = statSync(file).size;
    writePages(db);
    // 7 MB of log written, none of it copied into the database file by the connection that wrote it.
    expect(statSync(file).size).toBe(before);
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(1000 * 4096);

    const made: Made[] = [];
    const errors: string[] = [];
    const thread = new CheckpointThread(file, { onError: (m) => errors.push(m), onGone: (m) => errors.push(m), onCheckpoint: (r) => made.push(r) });
    threads.push(thread);
    thread.start();
    thread.request();
    thread.request(); // asked twice more meanwhile: one more after the first, not two
    thread.request();
    await expect.poll(() => made.length, { timeout: 20_000 }).toBe(2);
    await sleep(300);
    expect(made.length).toBe(2);
    expect(errors).toEqual([]);
    expect(made[0]!.logFrames).toBeGreaterThan(1000);
    expect(made[0]!.copiedFrames).toBe(made[0]!.logFrames);
    expect(statSync(file).size).toBeGreaterThan(600 * 4000);
    // The log is restarted by the daemon's next write, and cut back to that commit: the next frames go past the end
    // of the file, with nothing to read back from the disk. What was copied reads back whole.
    db.prepare('INSERT INTO filler (b) VALUES (?)').run(Buffer.alloc(10));
    expect(statSync(`${file}-wal`).size).toBeLessThan(16 * 4120);
    expect(db.prepare('SELECT count(*) FROM filler').pluck().get()).toBe(601);
  });

  it("SQLite's own setting would have checkpointed on the writer's thread (what the daemon's connection avoids)", () => {
    const before = statSync(file).size;
    writePages(db);
    expect(statSync(file).size).toBeGreaterThan(before + 200 * 4000);
  });

  it('a checkpoint that cannot be made is reported, and the thread goes on answering', async () => {
    const errors: string[] = [];
    const thread = new CheckpointThread(join(dir, 'missing.db'), { onError: (m) => errors.push(m), onGone: (m) => errors.push(`gone: ${m}`) });
    threads.push(thread);
    thread.start();
    thread.request();
    await expect.poll(() => errors.length, { timeout: 20_000 }).toBe(1);
    expect(errors[0]).toMatch(/unable to open database file/);
    thread.request();
    await expect.poll(() => errors.length, { timeout: 20_000 }).toBe(2);
  });
});

describe("the daemon's store", () => {
  it('leaves checkpoints to the thread, asks for one 15 s after a durable write, and stops it before closing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'checkpoint-store-'));
    const time = new ManualTime();
    const store = new AgentStore({
      dataDir: dir,
      agentId: 'a1',
      maxEvents: 100_000,
      keepUnpublished: false,
      resourceIds: new Set(),
      maxGuestLinks: 10,
      pid: process.pid,
      wallNow: () => Date.now(),
      timers: time,
      logger: pino({ level: 'silent' }),
    });
    try {
      store.start();
      expect(store.state.pragma('wal_autocheckpoint', { simple: true })).toBe(4000);
      expect(store.state.pragma('journal_size_limit', { simple: true })).toBe(0);
      const stateFile = join(dir, 'state.db');
      const before = statSync(stateFile).size;
      // 600 events with a payload of 3 KB each: over 2,000 pages of log, past SQLite's 1,000, short of 4,000.
      for (let i = 0; i < 600; i++) store.events.append({ type: 'access_granted', door: null, at: Date.now(), data: { pad: 'x'.repeat(3000) } });
      // Made durable on the thread pool; then one checkpoint is asked for, 15 s later.
      await expect.poll(() => time.nextDue(), { timeout: 20_000 }).toBe(time.mono + 15_000);
      expect(time.pendingCount).toBe(1);
      time.advance(14_999);
      await sleep(300);
      expect(statSync(stateFile).size).toBe(before);
      time.advance(1);
      await expect.poll(() => statSync(stateFile).size, { timeout: 20_000 }).toBeGreaterThan(before + 600 * 3000);
    } finally {
      await store.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    expect(time.pendingCount).toBe(0);
  });
});
