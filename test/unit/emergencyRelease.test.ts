import { describe, expect, it } from 'vitest';
import {
  afterRelease,
  EMERGENCY_CAUSE,
  isReleased,
  readEmergency,
  release,
  releases,
  whileReleased,
  wiringFault,
  type EmergencyReading,
} from '../../src/core/emergencyRelease.js';
import { expire, lock, lockedState, unlock, type LockLimits, type LockState } from '../../src/core/lockState.js';
import { relayLevel, type FailMode, type Level } from '../../src/core/relay.js';

const NO_CAP: LockLimits = { maxUnlockSeconds: 0 };
const CAP_60: LockLimits = { maxUnlockSeconds: 60 };

describe('what the emergency input reads', () => {
  // The loop's contact (normally closed) pulled up to 1, to GND when closed: open = 1 = alarm (activeLevel 1).
  // The confirm contact (normally open) wired alike: open reads 1, closed reads 0.
  const cases: Array<[string, Level, Level | null, Level, EmergencyReading, boolean, 'open' | 'short' | null]> = [
    ['loop closed, no confirm input', 0, null, 1, 'normal', false, null],
    ['loop open (the alarm, or a cut wire: the same), no confirm input', 1, null, 1, 'alarm', true, null],
    ['NC closed, NO open: normal', 0, 1, 1, 'normal', false, null],
    ['NC open, NO closed: the alarm', 1, 0, 1, 'alarm', true, null],
    ['both open: the common wire cut', 1, 1, 1, 'wiring_open', true, 'open'],
    ['both closed: a short or a welded contact', 0, 0, 1, 'wiring_short', true, 'short'],
    // activeLevel 0 (a loop pulled down, closed to 3.3 V): every level the other way round.
    ['activeLevel 0: loop closed reads 1', 1, null, 0, 'normal', false, null],
    ['activeLevel 0: loop open reads 0', 0, null, 0, 'alarm', true, null],
    ['activeLevel 0: NC open, NO closed', 0, 1, 0, 'alarm', true, null],
    ['activeLevel 0: both open', 0, 0, 0, 'wiring_open', true, 'open'],
    ['activeLevel 0: both closed', 1, 1, 0, 'wiring_short', true, 'short'],
  ];
  it.each(cases)('%s', (_what, pin, confirm, alarmLevel, reading, released, fault) => {
    const read = readEmergency({ pin, confirm }, alarmLevel);
    expect(read).toBe(reading);
    expect(releases(read)).toBe(released);
    expect(wiringFault(read)).toBe(fault);
  });
});

describe('the lock state machine while released', () => {
  const start = lockedState('start');
  const timed = unlock(start, { now: 1000, seconds: 5, cause: 'card …78' }, NO_CAP); // relocks at 6000
  const schedule = unlock(start, { now: 1000, seconds: null, cause: 'unlock schedule' }, NO_CAP);
  const lockdown = lock('lockdown');
  const capped = unlock(start, { now: 1000, seconds: null, cause: 'remote command r1' }, CAP_60); // held, relock at 61000

  const before: Array<[string, LockState]> = [
    ['locked', start],
    ['in a timed unlock', timed],
    ['held by the unlock schedule', schedule],
    ['locked by a lockdown', lockdown],
    ['held open with maxUnlockSeconds', capped],
  ];

  it.each(before)('a door %s is released: unlocked, held, no relock time', (_what, current) => {
    const released = release(current, 2000);
    expect(released).toMatchObject({ state: 'UNLOCKED', relockAt: null, held: true, cause: EMERGENCY_CAUSE });
    expect(isReleased(released)).toBe(true);
    expect(released.unlockedSince).toBe(current.state === 'UNLOCKED' ? 1000 : 2000);
    expect(release(released, 3000)).toBe(released); // again: nothing changes
  });

  // Whatever is asked while released, the state stays, so the relay stays at its unlocked level.
  const requests: Array<[string, (s: LockState) => LockState]> = [
    ['a remote lock', () => lock('remote command r2')],
    ['a lockdown', () => lock('lockdown')],
    ['the unlock schedule ending', () => lock('unlock schedule ended')],
    ['the door closing behind a card', () => lock('door closed')],
    ['a relock timer, long after', (s) => expire(s, 1e12)],
    ['a card grant', (s) => unlock(s, { now: 5000, seconds: 5, cause: 'card …78' }, NO_CAP)],
    ['a remote hold-open', (s) => unlock(s, { now: 5000, seconds: null, cause: 'remote command r3' }, NO_CAP)],
  ];
  const relays: Array<[FailMode, boolean]> = [
    ['secure', false],
    ['secure', true],
    ['safe', false],
    ['safe', true],
  ];

  it.each(before.flatMap(([what, s]) => requests.map(([asked, step]) => [what, asked, s, step] as const)))(
    'released from %s, %s is refused',
    (_what, _asked, current, step) => {
      const released = release(current, 2000);
      const next = whileReleased(released, step(released));
      expect(next).toBe(released);
      for (const [failMode, activeLow] of relays) expect(relayLevel(next.state, failMode, activeLow)).toBe(relayLevel('UNLOCKED', failMode, activeLow));
    },
  );

  it('not released: every step goes as asked', () => {
    const asked = lock('remote command r2');
    expect(whileReleased(timed, asked)).toBe(asked);
    expect(whileReleased(schedule, expire(schedule, 1e12))).toBe(schedule);
  });

  it('a hold with the cause "emergency release" that is not unlocked is not a release', () => {
    expect(isReleased({ state: 'LOCKED', cause: EMERGENCY_CAUSE })).toBe(false);
    expect(isReleased(schedule)).toBe(false);
  });

  it('when it clears: locked, whatever was asked before or during the release', () => {
    for (const [, current] of before) {
      const next = afterRelease(release(current, 2000), { now: 9000, holdCause: null }, NO_CAP);
      expect(next).toEqual(lockedState('emergency cleared'));
    }
  });

  it('when it clears and the unlock schedule says unlocked now: held by the schedule (its cause), capped as any hold', () => {
    const released = release(start, 2000);
    expect(afterRelease(released, { now: 9000, holdCause: 'unlock schedule' }, NO_CAP)).toEqual({
      state: 'UNLOCKED',
      relockAt: null,
      unlockedSince: 9000,
      held: true,
      cause: 'unlock schedule',
    });
    expect(afterRelease(released, { now: 9000, holdCause: 'unlock schedule' }, CAP_60)).toMatchObject({ relockAt: 69_000, cause: 'unlock schedule' });
  });

  it('afterRelease on a door that is not released changes nothing', () => {
    expect(afterRelease(timed, { now: 9000, holdCause: null }, NO_CAP)).toBe(timed);
  });
});
