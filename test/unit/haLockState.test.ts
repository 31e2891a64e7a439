import { describe, expect, it } from 'vitest';
import { haLockState, type LockFacts } from '../../src/core/haLockState.js';

const BOUND = 3000;
const facts = (over: Partial<LockFacts>): LockFacts => Object.assign({ relay: 'LOCKED', drivenAt: 10_000, writeFailed: false, contact: null }, over);
const closed = (since = 0) => ({ open: false, since });
const open = (since: number) => ({ open: true, since });

describe('the lock as Home Assistant shows it', () => {
  it('is the relay state while the door is closed, or without a contact', () => {
    for (const relay of ['LOCKED', 'UNLOCKED'] as const) {
      expect(haLockState(facts({ relay }), 50_000, BOUND)).toEqual({ state: relay, changesAt: null });
      expect(haLockState(facts({ relay, contact: closed() }), 50_000, BOUND)).toEqual({ state: relay, changesAt: null });
    }
  });

  it('is OPEN while the door stands open after an unlock, however long', () => {
    expect(haLockState(facts({ relay: 'UNLOCKED', contact: open(12_000) }), 13_000, BOUND)).toEqual({ state: 'OPEN', changesAt: null });
    expect(haLockState(facts({ relay: 'UNLOCKED', contact: open(12_000) }), 900_000, BOUND)).toEqual({ state: 'OPEN', changesAt: null });
  });

  it('is OPEN for a door forced open while locked: the lock did lock, then was defeated (door_forced says so)', () => {
    expect(haLockState(facts({ relay: 'LOCKED', drivenAt: 10_000, contact: open(20_000) }), 900_000, BOUND)).toEqual({ state: 'OPEN', changesAt: null });
  });

  it('is OPEN, then JAMMED once the bound has passed, when the relay was driven locked while the door stood open', () => {
    const relockedWhileOpen = facts({ relay: 'LOCKED', drivenAt: 10_000, contact: open(8_000) });
    expect(haLockState(relockedWhileOpen, 10_000, BOUND)).toEqual({ state: 'OPEN', changesAt: 13_000 });
    expect(haLockState(relockedWhileOpen, 12_999, BOUND)).toEqual({ state: 'OPEN', changesAt: 13_000 });
    expect(haLockState(relockedWhileOpen, 13_000, BOUND)).toEqual({ state: 'JAMMED', changesAt: null });
    // Opened at the very moment the relay was driven: it was not closed when the lock was to take it.
    expect(haLockState(facts({ relay: 'LOCKED', drivenAt: 10_000, contact: open(10_000) }), 13_000, BOUND).state).toBe('JAMMED');
  });

  it('is LOCKED again as soon as the door closes, and follows the bound it is given', () => {
    expect(haLockState(facts({ relay: 'LOCKED', drivenAt: 10_000, contact: closed(30_000) }), 31_000, BOUND).state).toBe('LOCKED');
    expect(haLockState(facts({ relay: 'LOCKED', drivenAt: 10_000, contact: open(8_000) }), 11_000, 1000).state).toBe('JAMMED');
  });

  it('is JAMMED while the last relay write has failed, whatever the contact says', () => {
    for (const contact of [null, closed(), open(1)]) {
      for (const relay of ['LOCKED', 'UNLOCKED'] as const) {
        expect(haLockState(facts({ relay, writeFailed: true, contact }), 10_000, BOUND)).toEqual({ state: 'JAMMED', changesAt: null });
      }
    }
  });
});
