import { describe, it, expect } from 'vitest';
import {
  expire,
  lock,
  lockedState,
  msUntilRelock,
  resume,
  toPersisted,
  unlock,
  type LockLimits,
  type LockState,
  type PersistedLock,
} from '../../src/core/lockState.js';

const NO_CAP: LockLimits = { maxUnlockSeconds: 0 };
const CAP_60: LockLimits = { maxUnlockSeconds: 60 };
const start = lockedState('start');

function timed(now: number, seconds: number | null, from: LockState = start, limits = NO_CAP): LockState {
  return unlock(from, { now, seconds, cause: 'test' }, limits);
}

describe('unlock and expire', () => {
  it('a timed unlock sets relockAt seconds after now', () => {
    const s = unlock(start, { now: 1000, seconds: 5, cause: 'card' }, NO_CAP);
    expect(s).toEqual({ state: 'UNLOCKED', relockAt: 6000, unlockedSince: 1000, held: false, cause: 'card' });
    expect(msUntilRelock(s, 1000)).toBe(5000);
  });

  it('stays unlocked before the deadline and relocks at and after it', () => {
    const s = timed(1000, 5);
    expect(expire(s, 5999)).toBe(s);
    expect(expire(s, 6000)).toEqual({ state: 'LOCKED', relockAt: null, unlockedSince: null, held: false, cause: 'timer' });
    expect(expire(s, 60_000).state).toBe('LOCKED');
  });

  it('msUntilRelock counts down to 0 and is null when locked or held open', () => {
    const s = timed(1000, 5);
    expect(msUntilRelock(s, 4000)).toBe(2000);
    expect(msUntilRelock(s, 9000)).toBe(0);
    expect(msUntilRelock(start, 0)).toBeNull();
    expect(msUntilRelock(timed(0, null), 0)).toBeNull();
  });

  it('expire leaves a locked door locked (same state)', () => {
    expect(expire(start, 1e12)).toBe(start);
  });

  it('a later shorter unlock never shortens the deadline', () => {
    const first = timed(2000, 10); // relock at 12000
    const second = unlock(first, { now: 3000, seconds: 2, cause: 'button' }, NO_CAP);
    expect(second.relockAt).toBe(12_000);
    expect(second.unlockedSince).toBe(2000);
    expect(second.cause).toBe('button');
    expect(expire(second, 5000).state).toBe('UNLOCKED');
    expect(expire(second, 11_999).state).toBe('UNLOCKED');
  });

  it('a later longer unlock extends the deadline', () => {
    const second = timed(3000, 20, timed(2000, 10));
    expect(second.relockAt).toBe(23_000);
    expect(second.unlockedSince).toBe(2000);
    expect(expire(second, 12_000).state).toBe('UNLOCKED');
    expect(expire(second, 23_000).state).toBe('LOCKED');
  });

  it('an unlock after a relock starts a new period', () => {
    const relocked = expire(timed(0, 5), 5000);
    const again = timed(9000, 5, relocked);
    expect(again).toMatchObject({ state: 'UNLOCKED', relockAt: 14_000, unlockedSince: 9000 });
  });
});

describe('hold open', () => {
  it('stays unlocked until locked', () => {
    const held = unlock(start, { now: 1000, seconds: null, cause: 'OPEN' }, NO_CAP);
    expect(held).toEqual({ state: 'UNLOCKED', relockAt: null, unlockedSince: 1000, held: true, cause: 'OPEN' });
    expect(expire(held, 1000 + 365 * 86_400_000)).toBe(held);
    expect(lock('CLOSE')).toEqual({ state: 'LOCKED', relockAt: null, unlockedSince: null, held: false, cause: 'CLOSE' });
  });

  it('a timed unlock during hold-open does not turn it into a timed unlock', () => {
    const held = timed(1000, null);
    const carded = timed(2000, 5, held);
    expect(carded.state).toBe('UNLOCKED');
    expect(carded.relockAt).toBeNull();
    expect(expire(carded, 10_000).state).toBe('UNLOCKED');
  });

  it('a hold-open during a timed unlock holds the door open', () => {
    const held = timed(2000, null, timed(1000, 5));
    expect(held.relockAt).toBeNull();
    expect(expire(held, 60_000).state).toBe('UNLOCKED');
  });
});

describe('maxUnlockSeconds', () => {
  it('caps a timed unlock', () => {
    const s = timed(1000, 300, start, CAP_60);
    expect(s.relockAt).toBe(61_000);
    expect(expire(s, 61_000).state).toBe('LOCKED');
  });

  it('leaves a timed unlock shorter than the cap alone', () => {
    expect(timed(1000, 5, start, CAP_60).relockAt).toBe(6000);
  });

  it('caps each unlock from its own request, so a valid card near the cap still gets its full time', () => {
    let s = timed(0, 30, start, CAP_60);
    s = timed(40_000, 300, s, CAP_60); // 300 s asked at 40 s: capped at 60 s from 40 s
    expect(s.relockAt).toBe(100_000);
    expect(s.unlockedSince).toBe(0);
    s = timed(99_000, 5, s, CAP_60); // a card just before the relock gets its own 5 s
    expect(s.relockAt).toBe(104_000);
    s = timed(99_500, 1, s, CAP_60); // a shorter request never shortens
    expect(s.relockAt).toBe(104_000);
  });

  it('caps a hold-open', () => {
    const held = timed(5000, null, start, CAP_60);
    expect(held.relockAt).toBe(65_000);
    expect(expire(held, 64_999).state).toBe('UNLOCKED');
    expect(expire(held, 65_000).state).toBe('LOCKED');
  });

  it('caps a hold-open that follows a timed unlock, from the hold request', () => {
    const held = timed(30_000, null, timed(10_000, 5, start, CAP_60), CAP_60);
    expect(held.relockAt).toBe(90_000);
  });
});

describe('toPersisted / resume', () => {
  const W = Date.parse('2026-07-01T12:00:00Z');
  const trusted = (wallNow: number, monoNow: number) => ({ wallNow, monoNow, wallTrusted: true, synchronized: true });

  it('toPersisted converts monotonic times to wall-clock times', () => {
    const s = timed(1000, 10); // mono relock 11000
    expect(toPersisted(s, W, 3000)).toEqual({ state: 'UNLOCKED', relockAt: W + 8000, unlockedSince: W - 2000, cause: 'test' });
    expect(toPersisted(start, W, 3000)).toEqual({ state: 'LOCKED', relockAt: null, unlockedSince: null, cause: 'start' });
  });

  it('nothing persisted or LOCKED persisted starts LOCKED', () => {
    expect(resume(undefined, trusted(W, 0), NO_CAP).state).toBe('LOCKED');
    expect(resume({ state: 'LOCKED', relockAt: null, unlockedSince: null, cause: 'x' }, trusted(W, 0), NO_CAP).state).toBe('LOCKED');
  });

  it('a hold-open resumes, even with an untrusted wall clock', () => {
    const p = toPersisted(timed(1000, null), W, 2000);
    for (const wallTrusted of [true, false]) {
      const r = resume(p, { wallNow: 0, monoNow: 50, wallTrusted, synchronized: false }, NO_CAP);
      expect(r).toMatchObject({ state: 'UNLOCKED', relockAt: null, cause: 'test' });
      expect(expire(r, 1e12).state).toBe('UNLOCKED');
    }
  });

  it('an unexpired timed unlock resumes for the remaining time', () => {
    const p = toPersisted(timed(1000, 10), W, 3000); // planned W-2000 .. W+8000
    const r = resume(p, trusted(W + 5000, 200), NO_CAP); // 3 s left
    expect(r.state).toBe('UNLOCKED');
    expect(r.relockAt).toBe(3200);
    expect(r.cause).toBe('test');
    expect(expire(r, 3199).state).toBe('UNLOCKED');
    expect(expire(r, 3200).state).toBe('LOCKED');
  });

  it('the round trip keeps the deadline in wall-clock terms', () => {
    const p = toPersisted(timed(1000, 10), W, 3000);
    const r = resume(p, trusted(W + 1000, 0), NO_CAP);
    expect(toPersisted(r, W + 1000, 0).relockAt).toBe(p.relockAt);
  });

  it.each([
    ['at the deadline', 8000],
    ['after the deadline', 8001],
    ['long after', 86_400_000],
  ])('an expired timed unlock starts LOCKED (%s)', (_n, offset) => {
    const p = toPersisted(timed(1000, 10), W, 3000);
    expect(resume(p, trusted(W + offset, 0), NO_CAP)).toMatchObject({ state: 'LOCKED', relockAt: null });
  });

  it('a timed unlock with an untrusted wall clock starts LOCKED', () => {
    const p = toPersisted(timed(1000, 10), W, 3000);
    expect(resume(p, { wallNow: W + 1000, monoNow: 0, wallTrusted: false, synchronized: true }, NO_CAP).state).toBe('LOCKED');
  });

  it('a timed unlock is not resumed while the clock is not known to be synchronized (no RTC, no NTP yet)', () => {
    // Unlocked for 10 s; the board boots with its clock restored from fake-hwclock, 2 s after the unlock began,
    // although hours have passed: without synchronization the deadline cannot be believed.
    const p = toPersisted(timed(10_000, 10), W, 0);
    expect(resume(p, { wallNow: W + 2000, monoNow: 0, wallTrusted: true, synchronized: false }, NO_CAP)).toMatchObject({
      state: 'LOCKED',
      cause: 'clock not synchronized at start',
    });
    expect(resume(p, { wallNow: W + 2000, monoNow: 0, wallTrusted: true, synchronized: true }, NO_CAP).state).toBe('UNLOCKED');
  });

  it('a wall clock that went backwards never lengthens the unlock beyond its planned duration', () => {
    const planned = 10_000;
    const p: PersistedLock = { state: 'UNLOCKED', relockAt: W + planned, unlockedSince: W, cause: 'card' };
    for (const back of [1, 1000, 60_000, 3_600_000, 365 * 86_400_000]) {
      const r = resume(p, trusted(W - back, 500), NO_CAP);
      const remaining = r.relockAt === null ? (r.state === 'LOCKED' ? 0 : Infinity) : r.relockAt - 500;
      expect(remaining).toBeLessThanOrEqual(planned);
    }
  });

  it('a wall clock that went backwards never stretches a hold-open beyond maxUnlockSeconds', () => {
    // Held open without a cap, restarted with a 60 s cap and a wall clock an hour behind.
    const p: PersistedLock = { state: 'UNLOCKED', relockAt: null, unlockedSince: W, cause: 'OPEN' };
    const r = resume(p, trusted(W - 3_600_000, 500), CAP_60);
    const remaining = r.state === 'LOCKED' ? 0 : r.relockAt === null ? Infinity : r.relockAt - 500;
    expect(remaining).toBeLessThanOrEqual(60_000);
  });

  it('resumes at most the planned time left when the wall clock is between start and deadline', () => {
    const p: PersistedLock = { state: 'UNLOCKED', relockAt: W + 10_000, unlockedSince: W, cause: 'card' };
    const r = resume(p, trusted(W + 4000, 100), NO_CAP);
    expect(r.relockAt).toBe(100 + 6000);
  });

  it('a hold-open persisted without a cap is capped when the config now has one', () => {
    const p: PersistedLock = { state: 'UNLOCKED', relockAt: null, unlockedSince: W, cause: 'OPEN' };
    expect(resume(p, trusted(W + 20_000, 0), CAP_60)).toMatchObject({ state: 'UNLOCKED', relockAt: 60_000 });
    expect(resume(p, trusted(W + 20_000, 0), NO_CAP)).toMatchObject({ state: 'UNLOCKED', relockAt: null });
  });

  it('maxUnlockSeconds caps what remains of a resumed timed unlock', () => {
    const p: PersistedLock = { state: 'UNLOCKED', relockAt: W + 300_000, unlockedSince: W, cause: 'card' };
    const r = resume(p, trusted(W + 50_000, 7), CAP_60);
    expect(r.relockAt).toBe(7 + 60_000);
    expect(r.unlockedSince).toBe(7 - 50_000);
    expect(resume(p, trusted(W + 50_000, 7), NO_CAP).relockAt).toBe(7 + 250_000);
  });

  it('records why a persisted unlock did not resume', () => {
    const p: PersistedLock = { state: 'UNLOCKED', relockAt: W + 10_000, unlockedSince: W, cause: 'card' };
    expect(resume(p, trusted(W + 20_000, 0), NO_CAP)).toMatchObject({ state: 'LOCKED', cause: 'expired while stopped' });
    expect(resume(p, { wallNow: 1000, monoNow: 0, wallTrusted: false, synchronized: false }, NO_CAP)).toMatchObject({
      state: 'LOCKED',
      cause: 'clock untrusted at start',
    });
  });

  it('a capped hold-open round trips through persistence and stays capped', () => {
    const held = timed(5000, null, start, CAP_60); // relock at mono 65000
    const p = toPersisted(held, W, 5000);
    const r = resume(p, trusted(W + 30_000, 0), CAP_60);
    expect(r.relockAt).toBe(30_000);
  });
});

describe('a timed unlock within a hold-open', () => {
  it('keeps the hold and its cause, so the one who held it open can end it', () => {
    const NO_LIMIT = { maxUnlockSeconds: 0 };
    const held = unlock(lockedState('start'), { now: 1000, seconds: null, cause: 'unlock schedule' }, NO_LIMIT);
    const tapped = unlock(held, { now: 2000, seconds: 5, cause: 'card …1234' }, NO_LIMIT);
    expect(tapped).toEqual({ state: 'UNLOCKED', relockAt: null, unlockedSince: 1000, held: true, cause: 'unlock schedule' });
    // A new hold takes the hold over (an operator held it open).
    expect(unlock(tapped, { now: 3000, seconds: null, cause: 'remote command' }, NO_LIMIT).cause).toBe('remote command');
  });
});
