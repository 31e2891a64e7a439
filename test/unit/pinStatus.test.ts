import { describe, expect, it } from 'vitest';
import { pinLines } from '../../src/commands/pinStatus.js';

const ENDED = '2026-11-24T09:01:00.000Z';

describe('status lines for PINs (issue 32)', () => {
  it('counts PINs that never open and shows the agent-wide keypad lockout as last saved', () => {
    // The short PINs' warning is the directory's (directoryFindings.test.ts): not said twice.
    expect(pinLines({ minPinLength: 4, shortPins: 1, keypad: null })).toEqual([]);
    expect(pinLines({ minPinLength: 4, shortPins: 0, keypad: { failures: 0, lockedOut: false, lockoutEndsAt: null, streak: 0 } })).toEqual([]);
    expect(pinLines({ minPinLength: 6, shortPins: 0, keypad: { failures: 0, lockedOut: true, lockoutEndsAt: ENDED, streak: 2 } })).toEqual([
      `keypads: LOCKED OUT (every door) until ${ENDED}; 2 lockouts in a row`,
    ]);
    expect(pinLines({ minPinLength: 6, shortPins: 0, keypad: { failures: 3, lockedOut: false, lockoutEndsAt: null, streak: 0 } })).toEqual([
      'keypads: 3 wrong PINs counted',
    ]);
    // One of each: singular.
    expect(pinLines({ minPinLength: 6, shortPins: 0, keypad: { failures: 1, lockedOut: false, lockoutEndsAt: null, streak: 1 } })).toEqual([
      'keypads: 1 wrong PIN counted; 1 lockout in a row',
    ]);
  });

  it('a lockout saved in progress that has ended since says so, with when, and keeps the lockouts in a row', () => {
    expect(pinLines({ minPinLength: 4, shortPins: 0, keypad: { failures: 0, lockedOut: false, lockoutEndsAt: ENDED, streak: 3 } })).toEqual([
      `keypads: not locked out (the last lockout ended ${ENDED}); 3 lockouts in a row`,
    ]);
    // Saved by a daemon from before the end was kept: as it was saved.
    expect(pinLines({ minPinLength: 4, shortPins: 0, keypad: { failures: 0, lockedOut: true, lockoutEndsAt: null, streak: 1 } })).toEqual([
      'keypads: LOCKED OUT (every door) at the last save; 1 lockout in a row',
    ]);
  });
});
