import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { SyncScheduler } from '../../src/sync/scheduler.js';
import type { SyncResult } from '../../src/sync/sync.js';
import { judgeRevision, SyncComponent } from '../../src/sync/syncComponent.js';
import { ManualTime } from '../support/manualTime.js';

const msg = (text: string) => Buffer.from(text);
/** A version held from a service from before histories (no history, no tag). */
const v = (revision: number) => ({ revision, history: null, tag: null });
const ZERO = { added: 0, changed: 0, removed: 0, unchanged: 0 };
const RESULT: SyncResult = {
  users: ZERO,
  credentials: ZERO,
  guestLinks: ZERO,
  rowsWritten: 0,
  durationMs: 1,
  revision: 1,
  mode: 'unchanged',
  wireBytes: 0,
  bodyBytes: 0,
};

describe('a pushed directory revision', () => {
  it('syncs when it is ahead of the revision held (or none is held), not when it is the same', () => {
    expect(judgeRevision(v(4), msg('{"revision":5,"at":"2026-11-22T10:00:00Z"}')).action).toBe('sync');
    expect(judgeRevision(null, msg('{"revision":1,"at":"x"}')).action).toBe('sync');
    expect(judgeRevision(v(5), msg('{"revision":5,"at":"x"}')).action).toBe('none');
  });

  it('a revision that is not JSON, has the wrong type, or goes backwards leads to a full sync', () => {
    for (const bad of ['not json', '{"revision":"5","at":"x"}', '{"revision":-1,"at":"x"}', '{"revision":1.5,"at":"x"}', '[]', '']) {
      expect(judgeRevision(v(5), msg(bad)), bad).toMatchObject({ action: 'full' });
    }
    expect(judgeRevision(v(9), msg('{"revision":3,"at":"x"}'))).toMatchObject({ action: 'full', why: expect.stringContaining('backwards') });
  });

  it('a push carrying another history than the one held leads to a full sync, whatever its revision; without history as before', () => {
    const H = 'a'.repeat(32);
    const H2 = 'b'.repeat(32);
    const held = { revision: 7, history: H, tag: '1'.repeat(16) };
    const push = (revision: number, history: string, tag = '2'.repeat(16)) => msg(JSON.stringify({ revision, at: 'x', history, tag }));
    expect(judgeRevision(held, push(9, H2))).toMatchObject({ action: 'full', revision: 9, why: expect.stringContaining('changed history') });
    expect(judgeRevision(held, push(7, H2))).toMatchObject({ action: 'full' });
    expect(judgeRevision(held, push(7, H))).toMatchObject({ action: 'full', why: expect.stringContaining('another tag') });
    expect(judgeRevision(held, push(7, H, '1'.repeat(16)))).toMatchObject({ action: 'none' });
    expect(judgeRevision(held, push(8, H))).toMatchObject({ action: 'sync' });
    // An old service's message (no history): judged on the revision alone; an old cache (no history held): the same.
    expect(judgeRevision(held, msg('{"revision":8,"at":"x"}'))).toMatchObject({ action: 'sync' });
    expect(judgeRevision(held, msg('{"revision":7,"at":"x"}'))).toMatchObject({ action: 'none' });
    expect(judgeRevision(v(7), push(7, H2))).toMatchObject({ action: 'none' });
    // A history that is not one (the schema is the protocol's): not understood, a full sync.
    expect(judgeRevision(held, msg('{"revision":8,"at":"x","history":"nope"}'))).toMatchObject({ action: 'full', revision: null });
  });

  it("judges each message against the cache's own record: after an import forgot the revision, the same revision syncs", () => {
    const lines: Array<{ msg: string }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
    let held: ReturnType<typeof v> | null = v(5);
    const sync = new SyncComponent({ options: {} as never, dataDir: '/nonexistent', env: {}, timers: new ManualTime(), logger, heldVersion: () => held });
    sync.onRevision(msg('{"revision":5,"at":"x"}'));
    expect(lines.map((l) => l.msg)).not.toContain('directory changed at the service: syncing');
    held = null; // door-agent import ran meanwhile
    sync.onRevision(msg('{"revision":5,"at":"x"}'));
    expect(lines.map((l) => l.msg)).toContain('directory changed at the service: syncing');
  });

  it('reads the cache only for a message that is not plainly ahead of the last sync: each push of a thousand doors costs no read', async () => {
    const time = new ManualTime();
    let reads = 0;
    let dbHeld: ReturnType<typeof v> | null = v(7);
    const runs: Array<(revision: number) => void> = [];
    const sync = new SyncComponent({
      options: { syncIntervalSeconds: 3600, startDelaySeconds: 0, concurrency: 1, maxRemovalRatio: 0.5 } as never,
      dataDir: '/nonexistent',
      env: {},
      timers: time,
      logger: pino({ level: 'silent' }),
      heldVersion: () => {
        reads++;
        return dbHeld;
      },
      runner: () => ({
        start: () => undefined,
        run: () => new Promise((resolve) => runs.push((revision) => resolve({ ...RESULT, revision, mode: 'directory_delta' }))),
        stop: async () => undefined,
      }),
    });
    const settle = async () => {
      await new Promise((r) => setImmediate(r));
      time.advance(0);
    };
    sync.start();
    expect(reads).toBe(1); // at start
    time.advance(0);
    runs.shift()!(7); // the first sync, after the start delay
    await settle();
    sync.onRevision(msg('{"revision":8,"at":"x"}'));
    // Ahead of the 7 the last sync brought: a sync, without reading the cache (the sync reads it).
    expect(reads).toBe(1);
    await settle();
    expect(runs).toHaveLength(1);
    runs.shift()!(8);
    dbHeld = v(8);
    await settle();
    // The same revision again (the retained message at a reconnect): judged on the cache's own record, no sync.
    sync.onRevision(msg('{"revision":8,"at":"x"}'));
    expect(reads).toBe(2);
    await settle();
    expect(runs).toHaveLength(0);
    // An import forgot the revision meanwhile: the same message now syncs.
    dbHeld = null;
    sync.onRevision(msg('{"revision":8,"at":"x"}'));
    expect(reads).toBe(3);
    await settle();
    expect(runs).toHaveLength(1);
    runs.shift()!(8);
    await settle();
    await sync.stop();
  });

  it('a flood of 1,000 revisions in a second leads to at most one sync in flight and one queued', async () => {
    const time = new ManualTime();
    let running = 0;
    let most = 0;
    let runs = 0;
    const finish: Array<() => void> = [];
    const scheduler = new SyncScheduler({
      run: () => {
        runs++;
        running++;
        most = Math.max(most, running);
        return new Promise<SyncResult>((resolve) =>
          finish.push(() => {
            running--;
            resolve(RESULT);
          }),
        );
      },
      intervalMs: 3_600_000,
      startDelayMs: 0,
      timers: time,
      logger: pino({ level: 'silent' }),
    });
    scheduler.trigger();
    time.advance(0);
    expect(runs).toBe(1);
    for (let i = 0; i < 1000; i++) scheduler.trigger(); // while the first sync is under way
    finish.shift()!();
    await new Promise((r) => setImmediate(r));
    time.advance(0);
    expect(runs).toBe(2); // the queued one, once
    finish.shift()!();
    await new Promise((r) => setImmediate(r));
    time.advance(1000);
    expect([runs, most]).toEqual([2, 1]);
    scheduler.stop();
  });
});
