import { describe, expect, it } from 'vitest';
import { type InterlockDoorState, interlockBlocker, interlockIndex } from '../../src/core/interlock.js';

const CLOSED: InterlockDoorState = { unlocked: false, open: false };
const UNLOCKED: InterlockDoorState = { unlocked: true, open: false };
const OPEN: InterlockDoorState = { unlocked: false, open: true };
const HELD: InterlockDoorState = { unlocked: true, open: true };
const GROUP = ['outer', 'inner', 'side'];

describe('interlockBlocker', () => {
  it('lets a door unlock while every other door of the group is locked and closed', () => {
    const states = new Map(GROUP.map((d) => [d, CLOSED]));
    expect(interlockBlocker(GROUP, states, 'outer')).toBeNull();
  });

  it('every combination of the other doors: blocked by the first one unlocked, open or unknown', () => {
    const kinds: Array<[string, InterlockDoorState | undefined]> = [
      ['closed', CLOSED],
      ['unlocked', UNLOCKED],
      ['open', OPEN],
      ['unlocked and open', HELD],
      ['unknown', undefined],
    ];
    for (const [, inner] of kinds) {
      for (const [, side] of kinds) {
        // The door asking may be in any state itself (someone holding it open does not stop its own unlock).
        for (const [, own] of kinds) {
          const states = new Map<string, InterlockDoorState>();
          if (own) states.set('outer', own);
          if (inner) states.set('inner', inner);
          if (side) states.set('side', side);
          const blocks = (s: InterlockDoorState | undefined) => s === undefined || s.unlocked || s.open;
          const expected = blocks(inner) ? 'inner' : blocks(side) ? 'side' : null;
          expect(interlockBlocker(GROUP, states, 'outer')).toBe(expected);
          // The emergency release overrides the interlock.
          expect(interlockBlocker(GROUP, states, 'outer', true)).toBeNull();
        }
      }
    }
  });
});

describe('interlockIndex', () => {
  it('maps each door to the doors of its interlock; a door in none is absent', () => {
    const index = interlockIndex([{ doors: ['a', 'b'] }, { doors: ['c', 'd', 'e'] }]);
    expect(index.get('a')).toEqual(['a', 'b']);
    expect(index.get('e')).toEqual(['c', 'd', 'e']);
    expect(index.has('f')).toBe(false);
  });
});
