import { describe, it, expect } from 'vitest';
import { KEYPAD_IDLE, isLockedOut, recordFailure, type KeypadLockoutPolicy, type KeypadState } from '../../src/core/keypad.js';

const policy: KeypadLockoutPolicy = { failures: 3, windowSeconds: 60, lockoutSeconds: 300 };
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
    expect(fail([1, 2, 3, 4].map((i) => T0 + i * 1000), five).startedAt).toEqual([]);
    expect(fail([1, 2, 3, 4, 5].map((i) => T0 + i * 1000), five).startedAt).toEqual([T0 + 5000]);
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
    const before: KeypadState = { failures: [T0, T0 + 1_000], lockedUntil: null };
    const copy = structuredClone(before);
    recordFailure(before, T0 + 2_000, policy);
    expect(before).toEqual(copy);
    expect(KEYPAD_IDLE).toEqual({ failures: [], lockedUntil: null });
  });
});
