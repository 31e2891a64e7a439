import { describe, expect, it } from 'vitest';
import { pinLines } from '../../src/commands/pinStatus.js';

describe('status lines for PINs (issue 32)', () => {
  it('counts PINs that never open and shows the agent-wide keypad lockout as last saved', () => {
    // The short PINs' warning is the directory's (directoryFindings.test.ts): not said twice.
    expect(pinLines({ minPinLength: 4, shortPins: 1, keypad: null })).toEqual([]);
    expect(pinLines({ minPinLength: 4, shortPins: 0, keypad: { failures: 0, lockedOut: false, streak: 0 } })).toEqual([]);
    expect(pinLines({ minPinLength: 6, shortPins: 0, keypad: { failures: 0, lockedOut: true, streak: 2 } })).toEqual([
      'keypads: LOCKED OUT (every door) at the last save; 2 lockouts in a row',
    ]);
    expect(pinLines({ minPinLength: 6, shortPins: 0, keypad: { failures: 3, lockedOut: false, streak: 0 } })).toEqual(['keypads: 3 wrong PINs counted']);
    // One of each: singular.
    expect(pinLines({ minPinLength: 6, shortPins: 0, keypad: { failures: 1, lockedOut: false, streak: 1 } })).toEqual([
      'keypads: 1 wrong PIN counted; 1 lockout in a row',
    ]);
  });
});
