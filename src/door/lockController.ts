import type { DoorOptions } from './options.js';
import { isClockTrusted } from '../core/decision.js';
import { afterRelease, isReleased, release, whileReleased } from '../core/emergencyRelease.js';
import * as machine from '../core/lockState.js';
import type { LockState } from '../core/lockState.js';
import { relayLevel, type LockStateName } from '../core/relay.js';
import type { GpioOutput } from '../hardware/gpio.js';
import type { PersistedLock } from '../core/lockState.js';
import type { Clock, Timers } from '../util/clock.js';
import { withProps } from '../core/objects.js';

export interface LockStatePersistence {
  load(doorUuid: string): PersistedLock | undefined;
  /**
   * Saves the state, or throws: what a crash must never find (an unlock that was ended) is gone before it returns;
   * the rest may be written later, off the event loop. `durable` is told once, when the state is on disk or a later
   * save made it moot (null), or why it could not be written.
   */
  save(doorUuid: string, state: PersistedLock, changedAt: number, durable?: (err: unknown) => void): void;
}

/** A door's lock state as reported to people and programs: wall-clock times. */
export interface LockSnapshot {
  door: string;
  state: LockStateName;
  /** Wall-clock ms of the relock; null when locked or held open without a cap. */
  relockAt: number | null;
  /** Unlocked on request without a duration (a hold-open), even when maxUnlockSeconds caps it. */
  heldOpen: boolean;
  changedAt: number;
  cause: string;
}

export interface LockControllerDeps {
  clock: Clock;
  timers: Timers;
  persistence: LockStatePersistence;
  /** Called after the relay has moved and persisting was attempted (a failure goes to onPersistError). */
  onChange?: (snapshot: LockSnapshot, previous: LockStateName) => void;
  /** Called when persisting fails: the door still acts, the failure is reported, and saving is retried. */
  onPersistError?: (err: unknown) => void;
  /** Called once a save succeeds after failures. */
  onPersistRecovered?: () => void;
  /**
   * The relay's last write failed (true; the relay may not be at the state's level), or a write succeeded again
   * after one had failed (false). In the daemon a failed write ends the process at once (RelayBank's policy).
   */
  onRelayFault?: (failed: boolean) => void;
  /**
   * Whether the wall clock is known to be synchronized (NTP, or a battery-backed RTC). A timed unlock is resumed
   * after a restart only then: a board without an RTC may boot with its clock hours behind.
   */
  clockSynchronized?: () => boolean;
}

/** Retries of a failed save: 1 s, doubling, at most 30 s apart, until it succeeds. */
const PERSIST_RETRY_MS = 1000;
const PERSIST_RETRY_MAX_MS = 30_000;

/**
 * Drives one door's relay from the pure lock state machine: relay first, then persistence, then the relock
 * timer (monotonic). The relay output must already be at the locked level when this is constructed.
 */
export class LockController {
  private state: LockState = machine.lockedState('start');
  private changedAt: number;
  private timer: unknown = null;
  private persistRetry: unknown = null;
  private persistFailures = 0;
  /** Counts saves: a sync that fails after a newer save was made is that newer save's business. */
  private saves = 0;
  private halted = false;
  private relayFault = false;
  /** Read at each step from the door's options: a cap changed at run time (fleet/liveApply.ts) holds from the next unlock on. */
  private get limits(): machine.LockLimits {
    return { maxUnlockSeconds: this.door.maxUnlockSeconds };
  }

  constructor(
    private readonly door: DoorOptions,
    private readonly relay: GpioOutput,
    private readonly deps: LockControllerDeps,
  ) {
    this.changedAt = deps.clock.wallNow();
    this.relay.write(this.levelFor('LOCKED'));
  }

  private levelFor(state: LockStateName) {
    return relayLevel(state, this.door.failMode, this.door.relay.activeLow);
  }

  /**
   * Resumes a persisted hold-open or unexpired timed unlock; anything else stays LOCKED. With `lockedBecause`
   * (a lockdown in force) nothing resumes, nor does an unlock that `resumable` refuses (the unlock schedule's
   * hold: the schedule decides again at start): a persisted unlock is recorded as ended for that reason.
   * `resumable` is asked about every persisted unlock, also in a lockdown (its caller learns what was saved).
   */
  resume(lockedBecause: string | null = null, resumable: (persisted: PersistedLock) => string | null = () => null): LockSnapshot {
    const { clock } = this.deps;
    const wallNow = clock.wallNow();
    const persisted = this.deps.persistence.load(this.door.uuid);
    const refused = persisted?.state === 'UNLOCKED' ? resumable(persisted) : null;
    lockedBecause ??= refused;
    if (lockedBecause !== null) {
      if (persisted?.state === 'UNLOCKED') this.apply(machine.lockedState(lockedBecause), true);
      return this.snapshot();
    }
    const next = machine.resume(
      persisted,
      {
        wallNow,
        monoNow: clock.monoNow(),
        wallTrusted: isClockTrusted(wallNow),
        synchronized: this.deps.clockSynchronized?.() ?? false,
      },
      this.limits,
    );
    // The relay was locked at start, so a resumed unlock moves it again: recorded as such. A persisted unlock
    // that does not resume is recorded as ended (with why), so it is not retried.
    if (next.state === 'UNLOCKED') this.apply(withProps(next, { cause: 'resumed after restart' }), true);
    else if (persisted?.state === 'UNLOCKED') this.apply(next, true);
    return this.snapshot();
  }

  /**
   * Unlocks for `seconds`, or holds open when null. `afterRelay` runs right after the relay has moved and its relock
   * timer is set, before anything else (the place to record what caused it). Returns the resulting state.
   */
  unlock(seconds: number | null, cause: string, afterRelay?: () => void): LockSnapshot {
    const requested = machine.unlock(this.state, { now: this.deps.clock.monoNow(), seconds, cause }, this.limits);
    this.apply(whileReleased(this.state, requested), false, afterRelay);
    return this.snapshot();
  }

  /** Locks, unless the emergency input holds the door released (then nothing moves: see `released`). */
  lock(cause: string, afterRelay?: () => void): LockSnapshot {
    this.apply(whileReleased(this.state, machine.lock(cause)), false, afterRelay);
    return this.snapshot();
  }

  /** Whether the emergency input holds the door released: no lock, unlock or relock timer moves it meanwhile. */
  get released(): boolean {
    return isReleased(this.state);
  }

  /** The emergency input is active: the door is released at once, whatever it was doing (core/emergencyRelease.ts). */
  release(): LockSnapshot {
    this.apply(release(this.state, this.deps.clock.monoNow()), true);
    return this.snapshot();
  }

  /**
   * The emergency input cleared: the door is locked, or held unlocked under `holdCause` when the unlock schedule
   * says it should be now. Saved whatever changed (the cause too: a hold the schedule takes over resumes as its own).
   */
  endRelease(holdCause: string | null): LockSnapshot {
    this.apply(afterRelease(this.state, { now: this.deps.clock.monoNow(), holdCause }, this.limits), true);
    return this.snapshot();
  }

  snapshot(): LockSnapshot {
    const { clock } = this.deps;
    const relockAt = this.state.relockAt === null ? null : clock.wallNow() + (this.state.relockAt - clock.monoNow());
    const heldOpen = this.state.state === 'UNLOCKED' && this.state.held;
    return { door: this.door.uuid, state: this.state.state, relockAt, heldOpen, changedAt: this.changedAt, cause: this.state.cause };
  }

  /** Whether the relay's last write failed (cleared by the next write that succeeds): it may not be at the state's level. */
  get relayWriteFailed(): boolean {
    return this.relayFault;
  }

  /** Whether the current state has been saved (false while a failed save is being retried). */
  get persisted(): boolean {
    return this.persistFailures === 0;
  }

  /** Drives the relay to its locked level and stops the timers, leaving the persisted state for the next start. */
  shutdown(): void {
    this.halted = true;
    this.clearTimer();
    this.clearPersistRetry();
    this.relay.write(this.levelFor('LOCKED'));
  }

  private apply(next: LockState, forcePersist = false, afterRelay?: () => void): void {
    const previous = this.state;
    // The relay first, and the state is committed only once the relay has taken it: a failed write throws
    // (the process then dies locked, see cli.ts) and never leaves the state claiming a level the relay lacks.
    // The locked level is always re-driven, so a lock also repairs a relay that was set behind our back.
    if (next.state !== previous.state || next.state === 'LOCKED') this.drive(next.state);
    this.state = next;
    if (next.state !== previous.state) this.changedAt = this.deps.clock.wallNow();
    // The relock timer before anything else the move causes: a failing `afterRelay` (recording, supervision) must
    // never leave an unlocked door without its relock.
    if (next !== previous) this.schedule();
    try {
      afterRelay?.();
    } finally {
      // Saved and announced whatever afterRelay did: a move the relay made is never left out of the state file,
      // the audit log or MQTT (afterRelay's error then goes on to the caller).
      if (next !== previous) this.saveAndAnnounce(next, previous, forcePersist);
    }
  }

  /** Writes the relay's level for `state`; a failure is kept as a fact (relayWriteFailed) and thrown on. */
  private drive(state: LockStateName): void {
    try {
      this.relay.write(this.levelFor(state));
    } catch (err) {
      this.relayFaultIs(true);
      throw err;
    }
    this.relayFaultIs(false);
  }

  private relayFaultIs(failed: boolean): void {
    if (failed === this.relayFault) return;
    this.relayFault = failed;
    this.deps.onRelayFault?.(failed);
  }

  private saveAndAnnounce(next: LockState, previous: LockState, forcePersist: boolean): void {
    const changed = forcePersist || next.state !== previous.state || next.relockAt !== previous.relockAt || next.unlockedSince !== previous.unlockedSince;
    if (!changed) return;
    this.persist();
    if (next.state !== previous.state || next.relockAt !== previous.relockAt) {
      this.deps.onChange?.(this.snapshot(), previous.state);
    }
  }

  /**
   * Saves the current state. A failure (disk full, I/O error) is reported and retried with backoff, always with
   * the state current at the retry: the last relay move is what must survive a restart.
   */
  private persist(): void {
    this.clearPersistRetry();
    const { clock } = this.deps;
    const save = ++this.saves;
    try {
      this.deps.persistence.save(this.door.uuid, machine.toPersisted(this.state, clock.wallNow(), clock.monoNow()), this.changedAt, (err) => {
        // What was written behind (off the event loop) is on disk, or why not. Only the last save counts, and not
        // once the controller was shut down (the next start reads what is there). A failure is saved again, with
        // backoff; recovery is reported only once a save is really on disk.
        if (save !== this.saves || this.halted) return;
        if (err) this.persistFailed(err);
        else this.persistRecovered();
      });
    } catch (err) {
      this.persistFailed(err);
    }
  }

  private persistRecovered(): void {
    if (this.persistFailures === 0) return;
    this.persistFailures = 0;
    this.deps.onPersistRecovered?.();
  }

  /** A failed save is reported and tried again with backoff (the state current then is saved). */
  private persistFailed(err: unknown): void {
    this.persistFailures++;
    this.deps.onPersistError?.(err);
    this.clearPersistRetry();
    const delay = Math.min(PERSIST_RETRY_MS * 2 ** (this.persistFailures - 1), PERSIST_RETRY_MAX_MS);
    this.persistRetry = this.deps.timers.setTimeout(() => {
      this.persistRetry = null;
      this.persist();
    }, delay);
  }

  private clearPersistRetry(): void {
    if (this.persistRetry !== null) this.deps.timers.clearTimeout(this.persistRetry);
    this.persistRetry = null;
  }

  private clearTimer(): void {
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    this.clearTimer();
    const due = machine.msUntilRelock(this.state, this.deps.clock.monoNow());
    if (due === null) return;
    // Node timers hold at most 2^31-1 ms (24.8 days); a longer wait wakes early and re-arms.
    const delay = Math.min(due, 2 ** 31 - 1);
    this.timer = this.deps.timers.setTimeout(() => {
      this.timer = null;
      const next = whileReleased(this.state, machine.expire(this.state, this.deps.clock.monoNow()));
      if (next === this.state)
        this.schedule(); // woke early: wait for the rest
      else this.apply(next);
    }, delay);
  }
}
