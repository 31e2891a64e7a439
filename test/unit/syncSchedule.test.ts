import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { fullJitterDelay } from '../../src/util/backoff.js';
import { parseRetryAfter } from '../../src/util/retryAfter.js';
import { SyncScheduler } from '../../src/sync/scheduler.js';
import { ServiceError } from '../../src/sync/serviceClient.js';
import { SyncAbandoned } from '../../src/sync/syncFailure.js';
import type { SyncResult } from '../../src/sync/sync.js';
import { firstSyncDelay, intervalDelay, retryDelay } from '../../src/util/pollDelays.js';
import { etagContradiction } from '../../src/sync/etagCheck.js';
import { ManualTime } from '../support/manualTime.js';

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
const MINUTE = 60_000;
const YEAR_S = 365 * 86_400;

/** A random source that returns the given draws in turn (the last one again once they run out). */
const draws = (...values: number[]) => {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)]!;
};

describe('the delays, pure', () => {
  it('full jitter: uniformly between 0 and the exponential delay, capped', () => {
    const options = { initialMs: 5000, maxMs: 300_000 };
    expect([0, 1, 2, 3].map((a) => fullJitterDelay(a, options, () => 0))).toEqual([0, 0, 0, 0]);
    expect([0, 1, 2, 3, 6, 7, 40].map((a) => fullJitterDelay(a, options, () => 0.999_999))).toEqual([5000, 10_000, 20_000, 40_000, 300_000, 300_000, 300_000]);
    expect(fullJitterDelay(2, options, () => 0.5)).toBe(10_000);
  });

  it('the first sync: between 0 and the start delay; 0 is at once', () => {
    expect(firstSyncDelay(5000, () => 0)).toBe(0);
    expect(firstSyncDelay(5000, () => 0.5)).toBe(2500);
    expect(firstSyncDelay(5000, () => 0.999_9)).toBeLessThanOrEqual(5000);
    expect(firstSyncDelay(0, () => 0.7)).toBe(0);
  });

  it('after a success: the interval ±10 %', () => {
    expect([0, 0.5, 0.999_999].map((r) => intervalDelay(300_000, () => r))).toEqual([270_000, 300_000, 330_000]);
  });

  it('after a failure: full jitter up to the cap; with a Retry-After, never before it, and capped (a year waits the cap)', () => {
    expect(retryDelay(0, null, 5 * MINUTE, () => 0.5)).toBe(2500);
    expect(retryDelay(10, null, 5 * MINUTE, () => 0.5)).toBe(150_000);
    expect(retryDelay(0, 30_000, 5 * MINUTE, () => 0)).toBe(30_000);
    expect(retryDelay(0, 30_000, 5 * MINUTE, () => 0.5)).toBe(32_500);
    expect(retryDelay(0, YEAR_S * 1000, 5 * MINUTE, () => 0)).toBe(5 * MINUTE);
    expect(retryDelay(3, 4 * MINUTE, 5 * MINUTE, () => 0.999)).toBe(4 * MINUTE + 39_960);
    expect(retryDelay(5, 4 * MINUTE, 5 * MINUTE, () => 0.999)).toBe(5 * MINUTE);
    // An interval shorter than the first backoff step: the cap still holds.
    expect(retryDelay(0, null, 3000, () => 0.999_999)).toBe(3000);
  });

  it("Retry-After: seconds, or an HTTP-date read against the answer's Date; a past date is 0; anything else is not one", () => {
    const now = Date.parse('2026-07-01T12:00:00Z');
    expect(parseRetryAfter('120', undefined, now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', undefined, now)).toBe(0);
    expect(parseRetryAfter(String(YEAR_S), undefined, now)).toBe(YEAR_S * 1000);
    expect(parseRetryAfter('Wed, 01 Jul 2026 12:01:30 GMT', undefined, now)).toBe(90_000);
    // The door's clock is an hour behind: the service's own Date says how far away its date is.
    expect(parseRetryAfter('Wed, 01 Jul 2026 13:01:30 GMT', 'Wed, 01 Jul 2026 13:00:00 GMT', now)).toBe(90_000);
    expect(parseRetryAfter('Wed, 01 Jul 2026 11:00:00 GMT', undefined, now)).toBe(0);
    for (const bad of [undefined, '', '-5', '1.5', 'soon', '2026-07-01']) expect(parseRetryAfter(bad, undefined, now), String(bad)).toBe(null);
  });

  it('an ETag contradicts its body when it names another revision, history or tag; what either side lacks is not compared', () => {
    const H = 'a'.repeat(32);
    const T = '1'.repeat(16);
    const body = { revision: 8, history: H, tag: T };
    expect(etagContradiction(null, body)).toBe(null);
    expect(etagContradiction({ ...body }, body)).toBe(null);
    expect(etagContradiction({ revision: 8, history: null, tag: null }, body)).toBe(null);
    expect(etagContradiction({ revision: 9, history: H, tag: T }, body)).toBe(`the answer's ETag "dir-9-${H}-${T}" does not match "dir-8-${H}-${T}"`);
    expect(etagContradiction({ revision: 8, history: 'b'.repeat(32), tag: T }, body)).not.toBe(null);
    expect(etagContradiction({ revision: 8, history: H, tag: '2'.repeat(16) }, body)).not.toBe(null);
    expect(etagContradiction({ revision: 7, history: null, tag: null }, { revision: 8, history: null, tag: null })).not.toBe(null);
  });
});

/** A scheduler on manual time whose syncs succeed or fail as the test says, each run recorded at its time. */
function harness(options: { startDelayMs: number; random: () => number; intervalMs?: number }) {
  const time = new ManualTime();
  const runsAt: number[] = [];
  const outcomes: Array<Error | null> = [];
  const lines: Array<Record<string, unknown>> = [];
  const scheduler = new SyncScheduler({
    run: async () => {
      runsAt.push(time.now - start);
      const outcome = outcomes.shift() ?? null;
      if (outcome) throw outcome;
      return RESULT;
    },
    intervalMs: options.intervalMs ?? 5 * MINUTE,
    startDelayMs: options.startDelayMs,
    timers: time,
    logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) }),
    random: options.random,
  });
  const start = time.now;
  const settle = async () => {
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  };
  /** Advances time timer by timer, letting each sync settle at the time it ran (it schedules the next from there). */
  const advance = async (ms: number) => {
    const target = time.now + ms;
    for (let due = time.nextDue(); due !== null && due <= target; due = time.nextDue()) {
      time.advance(due - time.now);
      await settle();
    }
    time.advance(target - time.now);
    await settle();
  };
  return { time, runsAt, outcomes, lines, scheduler, advance };
}

const unavailable = (retryAfterMs: number | null, status = 503) =>
  new ServiceError(`GET /directory: HTTP ${status}: busy`, '/directory', status, { retryAfterMs });

describe('the schedule (manual time, chosen draws)', () => {
  it('the first sync waits its random start delay, then the interval', async () => {
    const h = harness({ startDelayMs: 10_000, random: draws(0.5, 0.5) });
    h.scheduler.start();
    await h.advance(4900);
    expect(h.runsAt).toEqual([]);
    await h.advance(200);
    expect(h.runsAt).toEqual([5000]);
    await h.advance(5 * MINUTE);
    expect(h.runsAt).toEqual([5000, 5000 + 5 * MINUTE]);
    expect(h.lines.find((l) => l.msg === 'first sync after a random start delay (service.startDelaySeconds)')).toMatchObject({ inMs: 5000 });
    h.scheduler.stop();
  });

  it('a start delay of 0 syncs at once', async () => {
    const h = harness({ startDelayMs: 0, random: () => 0.9 });
    h.scheduler.start();
    await h.advance(1);
    expect(h.runsAt).toEqual([0]);
    h.scheduler.stop();
  });

  it('a pushed change during the start delay waits for it; a request does not', async () => {
    const h = harness({ startDelayMs: 60_000, random: () => 0.5 });
    h.scheduler.start();
    await h.advance(1000);
    h.scheduler.changed(); // the retained revision, at connect
    await h.advance(1000);
    expect(h.runsAt).toEqual([]);
    expect(h.lines.map((l) => l.msg)).toContain('sync wanted: it runs when the start delay ends');
    h.scheduler.trigger(); // P/agents/<id>/sync
    await h.advance(100);
    expect(h.runsAt).toEqual([2000]);
    // The first sync is done: the start delay no longer applies, a change syncs at once.
    await h.advance(5000);
    h.scheduler.changed();
    await h.advance(100);
    expect(h.runsAt).toEqual([2000, 7100]);
    h.scheduler.stop();
  });

  it('failures back off with full jitter, each window twice the last, capped at the interval; a success ends it', async () => {
    const h = harness({ startDelayMs: 0, random: () => 0.5, intervalMs: 60_000 });
    h.outcomes.push(new Error('down'), new Error('down'), new Error('down'), new Error('down'), new Error('down'));
    h.scheduler.start();
    await h.advance(100_000);
    // Windows 5, 10, 20, 40, 60 (capped) s; the draw 0.5 waits half of each.
    expect(h.runsAt).toEqual([0, 2500, 7500, 17_500, 37_500, 67_500]);
    expect(h.lines.filter((l) => l.msg === 'sync failed; the cache is unchanged').map((l) => l.retryInMs)).toEqual([2500, 5000, 10_000, 20_000, 30_000]);
    // The sixth succeeded: then the interval (±10 %; the draw 0.5 is the interval itself).
    await h.advance(60_000);
    expect(h.runsAt.slice(6)).toEqual([127_500]);
    h.scheduler.stop();
  });

  it('a 503 with Retry-After: not tried before it, whatever is pushed or requested meanwhile', async () => {
    const h = harness({ startDelayMs: 0, random: () => 0, intervalMs: 5 * MINUTE });
    h.outcomes.push(unavailable(30_000));
    h.scheduler.start();
    await h.advance(100);
    expect(h.runsAt).toEqual([0]);
    h.scheduler.changed();
    h.scheduler.trigger();
    await h.advance(29_000);
    expect(h.runsAt).toEqual([0]);
    expect(h.lines.map((l) => l.msg)).toContain("sync requested: it runs when the service's Retry-After ends");
    await h.advance(1100);
    expect(h.runsAt).toEqual([0, 30_000]);
    expect(h.lines.find((l) => l.msg === 'sync failed; the cache is unchanged')).toMatchObject({ retryAfterMs: 30_000, retryInMs: 30_000, capped: false });
    h.scheduler.stop();
  });

  it('a 429 with a Retry-After of a year waits the backoff maximum (the interval), not a year', async () => {
    const h = harness({ startDelayMs: 0, random: () => 0, intervalMs: 5 * MINUTE });
    h.outcomes.push(unavailable(YEAR_S * 1000, 429));
    h.scheduler.start();
    await h.advance(5 * MINUTE + 200);
    expect(h.runsAt).toEqual([0, 5 * MINUTE]);
    expect(h.lines.find((l) => l.msg === 'sync failed; the cache is unchanged')).toMatchObject({ retryInMs: 5 * MINUTE, capped: true });
    h.scheduler.stop();
  });

  it('a sync under way when the agent stops: abandoned at info, never reported as failed, never retried', async () => {
    const time = new ManualTime();
    const lines: Array<Record<string, unknown>> = [];
    let runs = 0;
    let abandon: (err: Error) => void = () => undefined;
    const scheduler = new SyncScheduler({
      run: () => {
        runs++;
        return new Promise<SyncResult>((_resolve, reject) => (abandon = reject));
      },
      intervalMs: 5 * MINUTE,
      startDelayMs: 0,
      timers: time,
      logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) }),
      random: () => 0.5,
    });
    scheduler.start();
    time.advance(0);
    expect(runs).toBe(1);
    // The agent's stop: the scheduler first, then the sync thread, which rejects the sync it was running.
    scheduler.stop();
    abandon(new SyncAbandoned());
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    expect(lines.filter((l) => l.level !== 30)).toEqual([]);
    expect(lines.find((l) => String(l.msg).startsWith('sync abandoned'))).toMatchObject({
      msg: 'sync abandoned: the agent is stopping',
      reason: 'the agent is stopping: the sync under way was abandoned (uncommitted, it leaves the cache as it was)',
    });
    time.advance(10 * MINUTE);
    expect(runs).toBe(1);
    expect(time.nextDue()).toBe(null);
  });

  it('doors sent away together with the same Retry-After come back spread, not together', () => {
    const at = [0, 0.25, 0.5, 0.75, 0.99].map((r) => retryDelay(1, 10_000, 5 * MINUTE, () => r));
    expect(new Set(at).size).toBe(5);
    for (const ms of at) expect(ms).toBeGreaterThanOrEqual(10_000);
  });
});
