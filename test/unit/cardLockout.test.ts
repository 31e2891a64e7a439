import { describe, expect, it } from 'vitest';
import { CARD_IDLE, cardLockoutEndsAt, isCardLockedOut, recordCardFailure, recordCardRefused, type CardLockoutPolicy } from '../../src/core/cardLockout.js';

const policy: CardLockoutPolicy = { failures: 3, windowSeconds: 60, lockoutSeconds: 30, quietSeconds: 3 };
const T0 = 1_000_000;

function lockAt(t: number) {
  let s = CARD_IDLE;
  for (const at of [t - 2, t - 1, t]) s = recordCardFailure(s, at, policy).state;
  return s;
}

describe('card lockout (issue 32 item 3)', () => {
  it('starts at the failures-th refused card and ends quietSeconds after the last guess it refused', () => {
    let s = lockAt(T0);
    expect(isCardLockedOut(s, T0 + 2_999, policy)).toBe(true);
    expect(isCardLockedOut(s, T0 + 3_000, policy)).toBe(false);
    s = lockAt(T0);
    s = recordCardRefused(s, T0 + 2_000, policy);
    expect(cardLockoutEndsAt(s, policy)).toBe(T0 + 5_000);
  });

  it('lasts lockoutSeconds at most, however long the guesses go on', () => {
    let s = lockAt(T0);
    for (let t = T0; t < T0 + 60_000; t += 200) s = recordCardRefused(s, t, policy);
    expect(isCardLockedOut(s, T0 + 29_999, policy)).toBe(true);
    expect(isCardLockedOut(s, T0 + 30_000, policy)).toBe(false);
  });

  it('a configured lockoutSeconds over 30 is taken as 30', () => {
    const long = { ...policy, lockoutSeconds: 600 };
    let s = CARD_IDLE;
    for (const at of [T0 - 2, T0 - 1, T0]) s = recordCardFailure(s, at, long).state;
    for (let t = T0; t < T0 + 60_000; t += 200) s = recordCardRefused(s, t, long);
    expect(isCardLockedOut(s, T0 + 30_000, long)).toBe(false);
  });

  it('does not start again before the reader has been open for quietSeconds', () => {
    let s = lockAt(T0); // ends at T0 + 3 s
    for (const t of [T0 + 3_000, T0 + 3_500, T0 + 4_000, T0 + 5_000]) {
      const r = recordCardFailure(s, t, policy);
      expect(r.lockoutStarted).toBe(false);
      s = r.state;
    }
    expect(recordCardFailure(s, T0 + 6_000, policy).lockoutStarted).toBe(true);
  });
});
