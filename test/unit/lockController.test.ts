import { describe, it, expect } from 'vitest';
import { LockController, type LockSnapshot, type LockStatePersistence } from '../../src/door/lockController.js';
import type { DoorOptions } from '../../src/door/options.js';
import type { PersistedLock } from '../../src/core/lockState.js';
import type { FailMode, Level, LockStateName } from '../../src/core/relay.js';
import type { GpioOutput } from '../../src/hardware/gpio.js';
import { ManualTime } from '../support/manualTime.js';

const UUID = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const WALL0 = Date.parse('2026-07-01T12:00:00Z');

class RecordingGpio implements GpioOutput {
  readonly pin = 17;
  writes: Level[] = [];
  constructor(private readonly log: string[] = []) {}
  write(level: Level): void {
    this.writes.push(level);
    this.log.push(`relay ${level}`);
  }
  read(): Level {
    const last = this.writes[this.writes.length - 1];
    if (last === undefined) throw new Error('never written');
    return last;
  }
}

class MemoryPersistence implements LockStatePersistence {
  saved = new Map<string, { state: PersistedLock; changedAt: number }>();
  failWith: Error | null = null;
  constructor(
    initial?: PersistedLock,
    private readonly log: string[] = [],
  ) {
    if (initial) this.saved.set(UUID, { state: initial, changedAt: 0 });
  }
  load(doorUuid: string): PersistedLock | undefined {
    return this.saved.get(doorUuid)?.state;
  }
  save(doorUuid: string, state: PersistedLock, changedAt: number, durable?: (err: unknown) => void): void {
    this.log.push(`save ${state.state}`);
    if (this.failWith) throw this.failWith;
    this.saved.set(doorUuid, { state, changedAt });
    durable?.(null); // on "disk" at once
  }
}

function door(failMode: FailMode = 'secure', activeLow = false, maxUnlockSeconds = 0): DoorOptions {
  return {
    uuid: UUID,
    resourceId: 12,
    name: 'Front door',
    relay: { pin: 17, activeLow },
    failMode,
    unlockSeconds: 5,
    maxUnlockSeconds,
    heldOpenSeconds: 30,
    jammedAfterSeconds: 3,
    relockOnClose: true,
    mode: 'card_or_pin',
    keypadLockout: { failures: 5, windowSeconds: 60, lockoutSeconds: 60 },
    cardLockout: { failures: 10, windowSeconds: 60, lockoutSeconds: 30, quietSeconds: 3 },
  };
}

function setup(opts: { failMode?: FailMode; activeLow?: boolean; persisted?: PersistedLock; maxUnlockSeconds?: number; synchronized?: boolean } = {}) {
  const log: string[] = [];
  const time = new ManualTime({ wall: WALL0, mono: 1_000 });
  const gpio = new RecordingGpio(log);
  const persistence = new MemoryPersistence(opts.persisted, log);
  const changes: Array<[LockSnapshot, LockStateName]> = [];
  const persistErrors: unknown[] = [];
  const relayFaults: boolean[] = [];
  const controller = new LockController(door(opts.failMode, opts.activeLow, opts.maxUnlockSeconds), gpio, {
    clock: time,
    timers: time,
    persistence,
    onChange: (snapshot, previous) => changes.push([snapshot, previous]),
    onPersistError: (err) => persistErrors.push(err),
    onRelayFault: (failed) => relayFaults.push(failed),
    clockSynchronized: () => opts.synchronized ?? true,
  });
  return { log, time, gpio, persistence, changes, persistErrors, relayFaults, controller };
}

describe('LockController', () => {
  it('a relay write that fails at relock throws, keeps the state UNLOCKED, and a later lock() retries it', () => {
    const { gpio, time, controller, changes } = setup();
    controller.unlock(5, 'card');
    const broken = gpio.write.bind(gpio);
    gpio.write = () => {
      throw new Error('EIO');
    };
    expect(() => time.advance(5000)).toThrow('EIO');
    expect(controller.snapshot().state).toBe('UNLOCKED'); // never claims a level the relay did not take
    gpio.write = broken;
    expect(controller.lock('retry').state).toBe('LOCKED');
    expect(gpio.writes.at(-1)).toBe(0);
    expect(changes.at(-1)?.[0]).toMatchObject({ state: 'LOCKED', cause: 'retry' });
  });

  it('keeps a failed relay write as a fact (Home Assistant shows JAMMED) until a write succeeds, telling each change once', () => {
    const { gpio, controller, relayFaults } = setup();
    expect(controller.relayWriteFailed).toBe(false);
    const broken = gpio.write.bind(gpio);
    gpio.write = () => {
      throw new Error('EIO');
    };
    expect(() => controller.unlock(5, 'card')).toThrow('EIO');
    expect(() => controller.unlock(5, 'card')).toThrow('EIO');
    expect(controller.snapshot().state).toBe('LOCKED');
    expect(controller.relayWriteFailed).toBe(true);
    expect(relayFaults).toEqual([true]);
    gpio.write = broken;
    // The lock re-drives the locked level although the state was LOCKED all along: the fault is cleared.
    expect(controller.lock('retry').state).toBe('LOCKED');
    expect(controller.relayWriteFailed).toBe(false);
    expect(relayFaults).toEqual([true, false]);
  });

  it('an afterRelay that throws (its record failed) still leaves the unlock saved, announced and with its relock: the door locks on time', () => {
    const { gpio, time, controller, persistence, changes } = setup();
    expect(() =>
      controller.unlock(5, 'card', () => {
        throw new Error('SQLITE_FULL');
      }),
    ).toThrow('SQLITE_FULL');
    expect(gpio.writes.at(-1)).toBe(1); // the relay had moved
    // ...and the move is saved and announced all the same (the state file, the audit log, MQTT).
    expect(persistence.saved.get(UUID)?.state.state).toBe('UNLOCKED');
    expect(changes.at(-1)?.[0]).toMatchObject({ state: 'UNLOCKED', cause: 'card' });
    time.advance(5000);
    expect(gpio.writes.at(-1)).toBe(0);
    expect(controller.snapshot().state).toBe('LOCKED');
  });

  it('lock() while already LOCKED drives the locked level again (repairs a relay set behind its back)', () => {
    const { gpio, controller } = setup();
    gpio.writes = [];
    controller.lock('command');
    expect(gpio.writes).toEqual([0]);
  });

  it('refuses an unlock duration that is not an integer from 1 to 604800 s, leaving the door locked', () => {
    const { gpio, controller } = setup();
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 604_801]) {
      expect(() => controller.unlock(bad, 'x')).toThrow(RangeError);
    }
    expect(gpio.writes).toEqual([0]);
    expect(controller.snapshot().state).toBe('LOCKED');
  });

  it.each<[FailMode, boolean, Level]>([
    ['secure', false, 0],
    ['secure', true, 1],
    ['safe', false, 1],
    ['safe', true, 0],
  ])('drives the locked level at construction (fail-%s, activeLow %s -> %i)', (failMode, activeLow, locked) => {
    const { gpio, controller } = setup({ failMode, activeLow });
    expect(gpio.writes).toEqual([locked]);
    expect(controller.snapshot()).toMatchObject({ door: UUID, state: 'LOCKED', relockAt: null });
  });

  it('unlock(5) moves the relay at once and back after 5 s', () => {
    const { gpio, time, controller, persistence } = setup();
    const snap = controller.unlock(5, 'card');
    expect(gpio.writes).toEqual([0, 1]);
    expect(snap).toEqual({ door: UUID, state: 'UNLOCKED', relockAt: WALL0 + 5000, heldOpen: false, changedAt: WALL0, cause: 'card' });
    expect(persistence.load(UUID)).toMatchObject({ state: 'UNLOCKED', relockAt: WALL0 + 5000 });

    time.advance(4999);
    expect(gpio.writes).toEqual([0, 1]);
    expect(controller.snapshot().state).toBe('UNLOCKED');

    time.advance(1);
    expect(gpio.writes).toEqual([0, 1, 0]);
    expect(controller.snapshot()).toMatchObject({ state: 'LOCKED', relockAt: null, changedAt: WALL0 + 5000, cause: 'timer' });
    expect(persistence.load(UUID)).toMatchObject({ state: 'LOCKED', relockAt: null });
    expect(time.pendingCount).toBe(0);
  });

  it('drives the fail-safe levels (energize to lock)', () => {
    const { gpio, time, controller } = setup({ failMode: 'safe' });
    controller.unlock(5, 'card');
    time.advance(5000);
    expect(gpio.writes).toEqual([1, 0, 1]);
  });

  it('a second unlock extends the deadline without another relay write', () => {
    const { gpio, time, controller } = setup();
    controller.unlock(5, 'card');
    time.advance(3000);
    expect(controller.unlock(5, 'card').relockAt).toBe(WALL0 + 8000);
    time.advance(4000); // 7 s after the first unlock
    expect(gpio.writes).toEqual([0, 1]);
    time.advance(1000);
    expect(gpio.writes).toEqual([0, 1, 0]);
  });

  it('a timer that fires early does not relock before the deadline, and relocks at it', () => {
    const { gpio, time, controller } = setup();
    time.earlyFactor = 0.9;
    controller.unlock(5, 'card');
    time.advance(4500); // the first timer fires here, 500 ms early
    expect(gpio.writes).toEqual([0, 1]);
    time.advance(499);
    expect(gpio.writes).toEqual([0, 1]);
    expect(controller.snapshot().state).toBe('UNLOCKED');
    time.advance(1);
    expect(gpio.writes).toEqual([0, 1, 0]);
  });

  it('hold-open (null) stays unlocked until lock()', () => {
    const { gpio, time, controller } = setup();
    expect(controller.unlock(null, 'OPEN')).toMatchObject({ state: 'UNLOCKED', relockAt: null });
    time.advance(86_400_000);
    expect(gpio.writes).toEqual([0, 1]);
    expect(controller.lock('CLOSE')).toMatchObject({ state: 'LOCKED', cause: 'CLOSE' });
    expect(gpio.writes).toEqual([0, 1, 0]);
  });

  it('moves the relay before persisting', () => {
    const { log, controller } = setup();
    log.length = 0;
    controller.unlock(5, 'card');
    expect(log).toEqual(['relay 1', 'save UNLOCKED']);
  });

  it('calls onChange with the snapshot and the previous state', () => {
    const { time, controller, changes } = setup();
    controller.unlock(5, 'card');
    expect(changes).toEqual([[{ door: UUID, state: 'UNLOCKED', relockAt: WALL0 + 5000, heldOpen: false, changedAt: WALL0, cause: 'card' }, 'LOCKED']]);
    time.advance(5000);
    expect(changes).toHaveLength(2);
    expect(changes[1]).toEqual([{ door: UUID, state: 'LOCKED', relockAt: null, heldOpen: false, changedAt: WALL0 + 5000, cause: 'timer' }, 'UNLOCKED']);
  });

  it('a persistence failure does not stop the relay from moving, is reported and retried', () => {
    const { gpio, time, controller, persistence, persistErrors, changes } = setup();
    const boom = new Error('disk full');
    persistence.failWith = boom;
    expect(() => controller.unlock(5, 'card')).not.toThrow();
    expect(gpio.writes).toEqual([0, 1]);
    expect(persistErrors).toEqual([boom]);
    expect(controller.persisted).toBe(false);
    expect(changes).toHaveLength(1);
    time.advance(5000);
    expect(gpio.writes).toEqual([0, 1, 0]);
    expect(persistErrors.length).toBeGreaterThanOrEqual(2);
  });

  it('a save written behind that fails later is retried with backoff, and counts as saved only once on disk', () => {
    const time = new ManualTime({ wall: WALL0, mono: 1_000 });
    // The store writes behind (store/doorState.ts): save() returns at once, the disk's answer comes later.
    const durables: Array<(err: unknown) => void> = [];
    const persistence: LockStatePersistence = { load: () => undefined, save: (_door, _state, _at, durable) => void durables.push(durable!) };
    const errors: unknown[] = [];
    let recovered = 0;
    const controller = new LockController(door(), new RecordingGpio([]), {
      clock: time,
      timers: time,
      persistence,
      onPersistError: (err) => errors.push(err),
      onPersistRecovered: () => recovered++,
      clockSynchronized: () => true,
    });
    controller.unlock(null, 'hold');
    durables.shift()!(new Error('ENOSPC'));
    expect(errors).toHaveLength(1);
    expect(controller.persisted).toBe(false);
    time.advance(1000); // the first retry saves again...
    expect(durables).toHaveLength(1);
    expect([controller.persisted, recovered]).toEqual([false, 0]); // ...not on disk yet: not "saved again"
    durables.shift()!(new Error('ENOSPC'));
    time.advance(1999);
    expect(durables).toHaveLength(0); // backing off: 2 s now, not 1 s for ever
    time.advance(1);
    expect(durables).toHaveLength(1);
    durables.shift()!(null);
    expect([controller.persisted, recovered, errors.length]).toEqual([true, 1, 2]);
  });

  it('a LOCK that cannot be saved is retried until it is, and never comes back as the hold-open', () => {
    const { gpio, time, controller, persistence } = setup();
    controller.unlock(null, 'UNLOCK');
    expect(persistence.load(UUID)).toMatchObject({ state: 'UNLOCKED', relockAt: null });
    persistence.failWith = new Error('database is locked');
    controller.lock('LOCK');
    expect(gpio.writes).toEqual([0, 1, 0]);
    expect(controller.persisted).toBe(false);
    time.advance(1000); // first retry: still failing
    time.advance(2000); // second retry: still failing
    expect(persistence.load(UUID)).toMatchObject({ state: 'UNLOCKED' });
    persistence.failWith = null;
    time.advance(4000);
    expect(persistence.load(UUID)).toMatchObject({ state: 'LOCKED', cause: 'LOCK' });
    expect(controller.persisted).toBe(true);
    expect(time.pendingCount).toBe(0);
  });

  it('resume() does not resume a timed unlock while the clock is not known to be synchronized', () => {
    const persisted: PersistedLock = { state: 'UNLOCKED', relockAt: WALL0 + 3000, unlockedSince: WALL0 - 2000, cause: 'remote' };
    const { gpio, controller } = setup({ persisted, synchronized: false });
    expect(controller.resume()).toMatchObject({ state: 'LOCKED', cause: 'clock not synchronized at start' });
    expect(gpio.writes).toEqual([0, 0]);
  });

  it('resume() of an unexpired persisted unlock unlocks for the remaining time', () => {
    const persisted: PersistedLock = { state: 'UNLOCKED', relockAt: WALL0 + 3000, unlockedSince: WALL0 - 2000, cause: 'remote' };
    const { gpio, time, controller, changes } = setup({ persisted });
    const snap = controller.resume();
    expect(snap).toMatchObject({ state: 'UNLOCKED', relockAt: WALL0 + 3000, cause: 'resumed after restart' });
    expect(gpio.writes).toEqual([0, 1]);
    expect(changes).toHaveLength(1);
    time.advance(2999);
    expect(gpio.writes).toEqual([0, 1]);
    time.advance(1);
    expect(gpio.writes).toEqual([0, 1, 0]);
    expect(controller.snapshot().state).toBe('LOCKED');
  });

  it('resume() of a persisted hold-open holds the door open', () => {
    const persisted: PersistedLock = { state: 'UNLOCKED', relockAt: null, unlockedSince: WALL0 - 60_000, cause: 'OPEN' };
    const { gpio, time, controller } = setup({ persisted });
    expect(controller.resume()).toMatchObject({ state: 'UNLOCKED', relockAt: null });
    time.advance(3_600_000);
    expect(gpio.writes).toEqual([0, 1]);
  });

  it('resume() of an expired unlock stays LOCKED and records it', () => {
    const persisted: PersistedLock = { state: 'UNLOCKED', relockAt: WALL0 - 1, unlockedSince: WALL0 - 5001, cause: 'card' };
    const { gpio, controller, persistence, changes } = setup({ persisted });
    expect(controller.resume()).toMatchObject({ state: 'LOCKED', relockAt: null });
    expect(gpio.writes).toEqual([0, 0]); // the locked level is re-driven, never anything else
    expect(persistence.load(UUID)).toMatchObject({ state: 'LOCKED' });
    expect(changes).toHaveLength(0);
  });

  it('resume() with nothing persisted stays LOCKED without writing', () => {
    const { gpio, controller, persistence } = setup();
    expect(controller.resume().state).toBe('LOCKED');
    expect(gpio.writes).toEqual([0]);
    expect(persistence.saved.size).toBe(0);
  });

  it('shutdown() drives the locked level, stops the timer and keeps the persisted unlock', () => {
    const { gpio, time, controller, persistence, changes } = setup({ failMode: 'safe' });
    controller.unlock(5, 'card');
    controller.shutdown();
    expect(gpio.writes).toEqual([1, 0, 1]);
    expect(time.pendingCount).toBe(0);
    time.advance(10_000);
    expect(gpio.writes).toEqual([1, 0, 1]);
    expect(changes).toHaveLength(1);
    expect(persistence.load(UUID)).toMatchObject({ state: 'UNLOCKED', relockAt: WALL0 + 5000 });
  });

  it('maxUnlockSeconds relocks a hold-open', () => {
    const { gpio, time, controller } = setup({ maxUnlockSeconds: 60 });
    expect(controller.unlock(null, 'OPEN').relockAt).toBe(WALL0 + 60_000);
    time.advance(60_000);
    expect(gpio.writes).toEqual([0, 1, 0]);
  });
});
