import { describe, it, expect } from 'vitest';
import { relayLevel, type FailMode, type Level, type LockStateName } from '../../src/core/relay.js';

describe('relayLevel', () => {
  // energized = UNLOCKED for secure (strike), LOCKED for safe (maglock); GPIO value = energized XOR activeLow.
  it.each<[LockStateName, FailMode, boolean, Level]>([
    ['UNLOCKED', 'secure', false, 1],
    ['LOCKED', 'secure', false, 0],
    ['UNLOCKED', 'safe', false, 0],
    ['LOCKED', 'safe', false, 1],
    ['UNLOCKED', 'secure', true, 0],
    ['LOCKED', 'secure', true, 1],
    ['UNLOCKED', 'safe', true, 1],
    ['LOCKED', 'safe', true, 0],
  ])('%s, fail-%s, activeLow %s -> %i', (state, failMode, activeLow, level) => {
    expect(relayLevel(state, failMode, activeLow)).toBe(level);
  });

  it.each<[FailMode, boolean]>([
    ['secure', false],
    ['secure', true],
    ['safe', false],
    ['safe', true],
  ])('fail-%s, activeLow %s: locked and unlocked levels differ', (failMode, activeLow) => {
    expect(relayLevel('LOCKED', failMode, activeLow)).not.toBe(relayLevel('UNLOCKED', failMode, activeLow));
  });

  it('a power loss (relay de-energized) leaves a fail-secure door locked and a fail-safe door unlocked', () => {
    // De-energized is GPIO 0 for an active-high board, 1 for an active-low one.
    for (const activeLow of [false, true]) {
      const off: Level = activeLow ? 1 : 0;
      expect(relayLevel('LOCKED', 'secure', activeLow)).toBe(off);
      expect(relayLevel('UNLOCKED', 'safe', activeLow)).toBe(off);
    }
  });
});
