import { describe, expect, it } from 'vitest';
import { cacheAgeMs, pastLimit, type SyncMark } from '../../src/core/cacheAge.js';

const HOUR = 3_600_000;
const SYNC_WALL = Date.parse('2026-11-24T09:00:00Z');
const mark = (over: Partial<SyncMark> = {}): SyncMark => ({ wallMs: SYNC_WALL, monoMs: 50_000, bootId: 'boot-a', checkpointAgeMs: 0, ...over });

describe('cacheAgeMs (the offline limit, issue 30 item 2)', () => {
  it('within one boot: monotonic time since the sync, whatever the wall clock says', () => {
    expect(cacheAgeMs(mark(), { wallMs: SYNC_WALL + 2 * HOUR, monoMs: 50_000 + 2 * HOUR, bootId: 'boot-a' })).toBe(2 * HOUR);
    // The wall clock set back a day: the age goes on.
    expect(cacheAgeMs(mark(), { wallMs: SYNC_WALL - 24 * HOUR, monoMs: 50_000 + 3 * HOUR, bootId: 'boot-a' })).toBe(3 * HOUR);
  });

  it('after a reboot: the wall time since the sync, never less than the age checkpointed', () => {
    const seen = mark({ checkpointAgeMs: 5 * HOUR });
    expect(cacheAgeMs(seen, { wallMs: SYNC_WALL + 7 * HOUR, monoMs: 10_000, bootId: 'boot-b' })).toBe(7 * HOUR);
    // The clock set back while the board was off (or no NTP yet): the cache stays as old as it was seen to be.
    expect(cacheAgeMs(seen, { wallMs: SYNC_WALL + HOUR, monoMs: 10_000, bootId: 'boot-b' })).toBe(5 * HOUR);
    expect(cacheAgeMs(seen, { wallMs: SYNC_WALL - 30 * 24 * HOUR, monoMs: 10_000, bootId: 'boot-b' })).toBe(5 * HOUR);
  });

  it('a sync known only by its wall time, or an unknown boot id, is measured on the wall clock', () => {
    expect(cacheAgeMs(mark({ monoMs: null, bootId: null }), { wallMs: SYNC_WALL + HOUR, monoMs: 1, bootId: 'boot-a' })).toBe(HOUR);
    expect(cacheAgeMs(mark(), { wallMs: SYNC_WALL + HOUR, monoMs: 1, bootId: null })).toBe(HOUR);
  });

  it('a cache never synced has no known age (Infinity): past any limit', () => {
    expect(cacheAgeMs(null, { wallMs: SYNC_WALL, monoMs: 0, bootId: 'boot-a' })).toBe(Number.POSITIVE_INFINITY);
    expect(pastLimit(Number.POSITIVE_INFINITY, 24 * HOUR)).toBe(true);
  });

  it('pastLimit: strictly past it, and never without a limit', () => {
    expect(pastLimit(24 * HOUR, 24 * HOUR)).toBe(false);
    expect(pastLimit(24 * HOUR + 1, 24 * HOUR)).toBe(true);
    expect(pastLimit(Number.POSITIVE_INFINITY, null)).toBe(false);
  });
});
