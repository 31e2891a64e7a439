import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { PersistedLock } from '../../src/core/lockState.js';
import { DoorStateStore } from '../../src/store/doorState.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';

// Issue 28: a lock's unlink is done before save() returns (a crash never finds an unlock that was ended); every
// record is written and synced on the thread pool and only then renamed in (ext4 flushes an unsynced file renamed
// over another at the rename, which blocked the event loop behind a sync's writes), never undoing a later save.

const tmp = tempDir('door-agent-doorstate-');
afterAll(tmp.cleanup);
let n = 0;

const T0 = Date.parse('2026-11-26T09:00:00.000Z');
const unlocked = (cause = 'card …78'): PersistedLock => ({ state: 'UNLOCKED', relockAt: T0 + 5000, unlockedSince: T0, cause });
const locked = (cause = 'door closed'): PersistedLock => ({ state: 'LOCKED', relockAt: null, unlockedSince: null, cause });

/** A store whose thread-pool jobs start only when the test runs them (`run`), one at a time as the store asks. */
function manualStore() {
  const dir = join(tmp.path, `doors-${n++}`);
  const jobs: Array<() => void> = [];
  const store = new DoorStateStore(dir, (job) => jobs.push(job));
  /** Runs the jobs as they come until every save is done (settled). */
  const run = async () => {
    let done = false;
    const settled = store.settled().then(() => {
      done = true;
    });
    for (let i = 0; i < 2000 && !done; i++) {
      jobs.shift()?.();
      await new Promise((r) => setTimeout(r, 1));
    }
    await settled;
  };
  return { dir, store, run, jobs };
}

describe('DoorStateStore', () => {
  it('an unlock is written behind: renamed in only once written and synced on the thread pool; durable told after', async () => {
    const { dir, store, run, jobs } = manualStore();
    const told: unknown[] = [];
    store.save(DOOR_UUID, unlocked(), T0, (err) => told.push(err));
    // Nothing on the event loop: a crash now finds the door as it was (locked).
    expect(store.load(DOOR_UUID)).toBeUndefined();
    jobs.shift()?.(); // the temporary file's open
    await new Promise((r) => setTimeout(r, 5));
    jobs.shift()?.(); // its write
    await new Promise((r) => setTimeout(r, 5));
    expect(store.load(DOOR_UUID)).toBeUndefined(); // written, not yet synced: not renamed over the door's file
    expect(readdirSync(dir)).toContain(`${DOOR_UUID}.json.tmp`);
    await run();
    expect(store.load(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'card …78' });
    expect(told).toEqual([null]);
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    store.close();
  });

  it('unlocks saved while one is being written: the last wins on disk, the one it replaced is told null', async () => {
    const { store, run, jobs } = manualStore();
    const told: Record<string, unknown[]> = { a: [], b: [], c: [] };
    store.save(DOOR_UUID, unlocked('a'), T0, (err) => told.a!.push(err));
    jobs.shift()?.(); // a's write has started
    store.save(DOOR_UUID, unlocked('b'), T0 + 1, (err) => told.b!.push(err));
    store.save(DOOR_UUID, unlocked('c'), T0 + 2, (err) => told.c!.push(err));
    await run();
    expect(store.load(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'c' });
    expect(told).toEqual({ a: [null], b: [null], c: [null] });
    store.close();
  });

  it("an unlock that cannot be written tells durable why (the controller saves again); the door's file is untouched", async () => {
    const { dir, store, run } = manualStore();
    store.save(DOOR_UUID, locked('before'), T0);
    await run();
    // Its temporary file cannot be made (a directory in its place: refused to root too, as a full disk would be).
    mkdirSync(join(dir, `${DOOR_UUID}.json.tmp`));
    const told: unknown[] = [];
    store.save(DOOR_UUID, unlocked(), T0 + 1, (err) => told.push(err));
    await run();
    expect(told).toHaveLength(1);
    expect((told[0] as NodeJS.ErrnoException | null)?.code).toBe('EISDIR');
    expect(store.load(DOOR_UUID)).toMatchObject({ state: 'LOCKED', cause: 'before' });
    store.close();
  });

  it('a lock removes the unlock before save returns, and the LOCKED record follows off the event loop', async () => {
    const { dir, store, run } = manualStore();
    store.save(DOOR_UUID, unlocked(), T0);
    await run();
    store.save(DOOR_UUID, locked(), T0 + 1000);
    // A crash now finds no unlock to resume: LOCKED.
    expect(store.load(DOOR_UUID)).toBeUndefined();
    await run();
    expect(store.load(DOOR_UUID)).toMatchObject({ state: 'LOCKED', cause: 'door closed', changedAt: T0 + 1000 });
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    store.close();
  });

  it('an unlock saved while the LOCKED record is being written is never overwritten by it', async () => {
    const { store, run, jobs } = manualStore();
    store.save(DOOR_UUID, locked('relock timer'), T0);
    // The LOCKED record's write has started on the thread pool (its open), not finished.
    jobs.shift()?.();
    store.save(DOOR_UUID, unlocked('remote command'), T0 + 10);
    await run();
    expect(store.load(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'remote command' });
    store.close();
  });

  it('lock, unlock, lock in a burst: the last save wins on disk', async () => {
    const { store, run } = manualStore();
    store.save(DOOR_UUID, locked('a'), T0);
    store.save(DOOR_UUID, unlocked('b'), T0 + 1);
    store.save(DOOR_UUID, locked('c'), T0 + 2);
    await run();
    expect(store.load(DOOR_UUID)).toMatchObject({ state: 'LOCKED', cause: 'c' });
    store.close();
  });

  it('with the real thread pool: settled() waits until every save is on disk', async () => {
    const dir = join(tmp.path, `doors-${n++}`);
    const store = new DoorStateStore(dir);
    const told: unknown[] = [];
    for (let i = 0; i < 20; i++) store.save(DOOR_UUID, i % 2 === 0 ? unlocked(`u${i}`) : locked(`l${i}`), T0 + i, (err) => told.push(err));
    await store.settled();
    store.close();
    expect(told.every((e) => e === null)).toBe(true);
    expect(store.load(DOOR_UUID)).toMatchObject({ state: 'LOCKED', cause: 'l19' });
    expect(existsSync(join(dir, `${DOOR_UUID}.json.tmp`))).toBe(false);
  });
});
