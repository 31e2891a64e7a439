import { describe, it, expect } from 'vitest';
import {
  KEYPAD_IDLE,
  countsAsGuess,
  isLockedOut,
  lockoutLengthMs,
  recordFailure,
  restoreKeypadState,
  saveKeypadState,
  type KeypadLockoutPolicy,
  type KeypadState,
} from '../../src/core/keypad.js';

// maxLockoutSeconds = lockoutSeconds: no doubling (the growing lockout has its own tests below).
const policy: KeypadLockoutPolicy = { failures: 3, windowSeconds: 60, lockoutSeconds: 300, maxLockoutSeconds: 300 };
const T0 = 1_000_000;

/** Records wrong PINs at the given times, returning the final state and the times at which a lockout started. */
function fail(times: number[], p: KeypadLockoutPolicy = policy, from: KeypadState = KEYPAD_IDLE) {
  let state = from;
  const startedAt: number[] = [];
  for (const t of times) {
    const r = recordFailure(state, t, p);
    state = r.state;
    if (r.lockoutStarted) startedAt.push(t);
  }
  return { state, startedAt };
}

describe('keypad lockout', () => {
  it('nobody is locked out at first', () => {
    expect(isLockedOut(KEYPAD_IDLE, T0)).toBe(false);
  });

  it('starts exactly at the failures-th wrong PIN within the window', () => {
    const two = fail([T0, T0 + 1_000]);
    expect(two.startedAt).toEqual([]);
    expect(isLockedOut(two.state, T0 + 1_000)).toBe(false);

    const r = recordFailure(two.state, T0 + 2_000, policy);
    expect(r.lockoutStarted).toBe(true);
    expect(isLockedOut(r.state, T0 + 2_000)).toBe(true);
  });

  it('honours the configured number of failures', () => {
    const five = { ...policy, failures: 5 };
    expect(
      fail(
        [1, 2, 3, 4].map((i) => T0 + i * 1000),
        five,
      ).startedAt,
    ).toEqual([]);
    expect(
      fail(
        [1, 2, 3, 4, 5].map((i) => T0 + i * 1000),
        five,
      ).startedAt,
    ).toEqual([T0 + 5000]);
    expect(fail([T0], { ...policy, failures: 1 }).startedAt).toEqual([T0]);
  });

  it('failures outside the rolling window do not count', () => {
    // 0 s and 30 s, then 60 s: the first one has just left the 60 s window.
    const spread = fail([T0, T0 + 30_000, T0 + 60_000]);
    expect(spread.startedAt).toEqual([]);
    expect(isLockedOut(spread.state, T0 + 60_000)).toBe(false);
    // One millisecond earlier all three are inside it.
    expect(fail([T0, T0 + 30_000, T0 + 59_999]).startedAt).toEqual([T0 + 59_999]);
  });

  it('the window rolls: old failures drop out one by one, recent ones keep counting', () => {
    // Every 40 s: never 3 within 60 s.
    const slow = fail([0, 1, 2, 3, 4, 5].map((i) => T0 + i * 40_000));
    expect(slow.startedAt).toEqual([]);
    // Then two quick ones at 250 s and 255 s: with the one at 200 s they make three within 60 s.
    const quick = fail([T0 + 250_000, T0 + 255_000], policy, slow.state);
    expect(quick.startedAt).toEqual([T0 + 255_000]);
  });

  it('lasts lockoutSeconds: locked at lockedUntil - 1, free at lockedUntil', () => {
    const { state, startedAt } = fail([T0, T0 + 1_000, T0 + 2_000]);
    expect(startedAt).toEqual([T0 + 2_000]);
    const until = T0 + 2_000 + 300_000;
    expect(state.lockedUntil).toBe(until);
    expect(isLockedOut(state, T0 + 2_001)).toBe(true);
    expect(isLockedOut(state, until - 1)).toBe(true);
    expect(isLockedOut(state, until)).toBe(false);
    expect(isLockedOut(state, until + 60_000)).toBe(false);
  });

  it('lockoutStarted is true once only, even when wrong PINs keep coming during the lockout', () => {
    const times = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => T0 + i * 1_000);
    const { state, startedAt } = fail(times);
    expect(startedAt).toEqual([T0 + 2_000]);
    // More failures do not extend the lockout.
    expect(state.lockedUntil).toBe(T0 + 2_000 + 300_000);
  });

  it('after the lockout ends, it takes a full new series of failures to lock again', () => {
    const locked = fail([T0, T0 + 1_000, T0 + 2_000]);
    const until = T0 + 302_000;
    const after = fail([until, until + 1_000], policy, locked.state);
    expect(after.startedAt).toEqual([]);
    expect(isLockedOut(after.state, until + 1_000)).toBe(false);
    const again = recordFailure(after.state, until + 2_000, policy);
    expect(again.lockoutStarted).toBe(true);
    expect(isLockedOut(again.state, until + 2_000)).toBe(true);
    expect(again.state.lockedUntil).toBe(until + 2_000 + 300_000);
  });

  it('does not change the state it was given', () => {
    const before: KeypadState = { ...KEYPAD_IDLE, failures: [T0, T0 + 1_000] };
    const copy = structuredClone(before);
    recordFailure(before, T0 + 2_000, policy);
    expect(before).toEqual(copy);
    expect(KEYPAD_IDLE).toEqual({ failures: [], lockedUntil: null, lockoutMs: 0, streak: 0, lastFailure: null });
  });
});

describe('the growing keypad lockout (issue 32)', () => {
  const defaults: KeypadLockoutPolicy = { failures: 5, windowSeconds: 900, lockoutSeconds: 60, maxLockoutSeconds: 900 };

  /** Five quick wrong PINs as soon as each lockout ends, n times: the lockout lengths, in seconds. */
  function attack(n: number, p = defaults, from: KeypadState = KEYPAD_IDLE, start = T0) {
    let state = from;
    let t = start;
    const lengths: number[] = [];
    for (let round = 0; round < n; round++) {
      for (let i = 0; i < p.failures; i++) {
        const r = recordFailure(state, t, p);
        state = r.state;
        if (r.lockoutStarted) lengths.push(r.lockoutMs / 1000);
        t += 1_000;
      }
      t = state.lockedUntil!;
    }
    return { state, lengths, t };
  }

  it('each lockout in a row lasts twice the one before, up to maxLockoutSeconds', () => {
    expect(attack(7).lengths).toEqual([60, 120, 240, 480, 900, 900, 900]);
    expect(lockoutLengthMs(defaults, 0)).toBe(60_000);
    expect(lockoutLengthMs(defaults, 40)).toBe(900_000);
  });

  it('wrong PINs during a lockout neither count nor extend it', () => {
    const { state } = attack(1);
    const until = state.lockedUntil!;
    let s = state;
    for (let i = 0; i < 50; i++) s = recordFailure(s, until - 1 - i, defaults).state;
    expect(s).toBe(state);
    expect(isLockedOut(s, until)).toBe(false);
  });

  it('the doubling starts again after maxLockoutSeconds without a wrong PIN once the lockout ended', () => {
    const { state } = attack(3); // 60, 120, 240: the next would be 480
    const until = state.lockedUntil!;
    const early = attack(1, defaults, state, until + 899_000);
    expect(early.lengths).toEqual([480]);
    const quiet = attack(1, defaults, state, until + 900_000);
    expect(quiet.lengths).toEqual([60]);
  });

  it('a restart gives no fresh tries: failures count as typed now, a lockout in progress starts again in full', () => {
    const two = attack(2).state; // locked for 120 s, streak 2
    const at = two.lockedUntil! - 100_000; // 20 s into it
    const saved = saveKeypadState(two, at, defaults);
    expect(saved).toEqual({ failures: 0, lockoutMs: 120_000, streak: 2 });
    const restored = restoreKeypadState(JSON.parse(JSON.stringify(saved)), 5_000, defaults);
    expect(isLockedOut(restored, 5_000 + 119_999)).toBe(true);
    expect(isLockedOut(restored, 5_000 + 120_000)).toBe(false);
    expect(attack(1, defaults, restored, 5_000 + 120_000).lengths).toEqual([240]);

    let partial = KEYPAD_IDLE;
    for (const t of [T0, T0 + 1_000, T0 + 2_000, T0 + 3_000]) partial = recordFailure(partial, t, defaults).state;
    const back = restoreKeypadState(saveKeypadState(partial, T0 + 59_000, defaults), 7, defaults);
    expect(recordFailure(back, 8, defaults).lockoutStarted).toBe(true); // the fifth, after the restart
  });

  it('a saved state that is not one is ignored', () => {
    expect(restoreKeypadState(null, 1, defaults)).toBe(KEYPAD_IDLE);
    expect(restoreKeypadState('x', 1, defaults)).toBe(KEYPAD_IDLE);
    expect(restoreKeypadState({ failures: -3, lockoutMs: 'a', streak: NaN }, 1, defaults)).toBe(KEYPAD_IDLE);
    expect(isLockedOut(restoreKeypadState({ lockoutMs: 1e12 }, 0, defaults), 900_000)).toBe(false); // capped
  });
});

describe('countsAsGuess', () => {
  const refused = (reason: string, holders: unknown[] = [{}]) => ({ granted: false, reason, holders });
  it('refused known credentials count like unknown ones', () => {
    for (const reason of [
      'user_suspended',
      'not_authorized',
      'wrong_door',
      'link_expired',
      'link_not_yet_valid',
      'credential_expired',
      'credential_not_yet_valid',
      'outside_schedule',
      'holiday',
      'pin_too_short',
    ]) {
      expect(countsAsGuess(refused(reason)), reason).toBe(true);
    }
    expect(countsAsGuess(refused('unknown_credential', []))).toBe(true);
  });
  it('the lockdown (for a known credential), the clock and a lockout in progress do not count; a grant neither', () => {
    expect(countsAsGuess(refused('lockdown'))).toBe(false);
    expect(countsAsGuess(refused('lockdown', []))).toBe(true); // an unknown number is a guess, lockdown or not
    // The offline limit likewise: its holder is no guesser, an unknown number is.
    expect(countsAsGuess(refused('cache_too_old'))).toBe(false);
    expect(countsAsGuess(refused('cache_too_old', []))).toBe(true);
    expect(countsAsGuess(refused('clock_untrusted'))).toBe(false);
    expect(countsAsGuess(refused('keypad_locked_out', []))).toBe(false);
    expect(countsAsGuess(refused('card_locked_out', []))).toBe(false);
    expect(countsAsGuess({ granted: true, reason: null, holders: [{}] })).toBe(false);
  });
});
