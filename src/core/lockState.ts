import type { LockStateName } from './relay.js';

/**
 * The lock state machine of one door. Pure: every function takes the current state and the time, and returns
 * the next state. Times in LockState are monotonic milliseconds; PersistedLock holds wall-clock milliseconds
 * so that a deadline survives a restart.
 */
export interface LockState {
  state: LockStateName;
  /** When the door relocks (monotonic ms); null while locked, or while held open with no cap. */
  relockAt: number | null;
  /** When the current unlocked period began (monotonic ms); null while locked. */
  unlockedSince: number | null;
  /** Unlocked without a duration (hold-open), even if maxUnlockSeconds gave it a relock time. */
  held: boolean;
  cause: string;
}

export interface LockLimits {
  /** Cap on any continuous unlock, timed or held; 0 = none. */
  maxUnlockSeconds: number;
}

export interface PersistedLock {
  state: LockStateName;
  /** Wall-clock ms; null with state UNLOCKED means held open. */
  relockAt: number | null;
  unlockedSince: number | null;
  cause: string;
}

/** The longest timed unlock (7 days, docs/mqtt.md); a longer hold is an unlock without a duration. */
export const MAX_UNLOCK_SECONDS = 604_800;

export function lockedState(cause: string): LockState {
  return { state: 'LOCKED', relockAt: null, unlockedSince: null, held: false, cause };
}

/**
 * Unlocks for `seconds`, or holds open when `seconds` is null. maxUnlockSeconds caps each unlock, measured
 * from the request (a hold-open becomes an unlock of maxUnlockSeconds). A later unlock extends the deadline,
 * never shortens it, and never turns a hold-open into a timed unlock (nor changes the hold's cause).
 */
export function unlock(current: LockState, request: { now: number; seconds: number | null; cause: string }, limits: LockLimits): LockState {
  const { now, seconds, cause } = request;
  if (seconds !== null && !(Number.isInteger(seconds) && seconds >= 1 && seconds <= MAX_UNLOCK_SECONDS)) {
    throw new RangeError(`unlock seconds must be an integer from 1 to ${MAX_UNLOCK_SECONDS} (got ${seconds})`);
  }
  let relockAt: number | null = seconds === null ? null : now + seconds * 1000;
  if (limits.maxUnlockSeconds > 0) {
    const cap = now + limits.maxUnlockSeconds * 1000;
    relockAt = relockAt === null ? cap : Math.min(relockAt, cap);
  }
  if (current.state === 'UNLOCKED') {
    if (current.relockAt === null) relockAt = null;
    else if (relockAt !== null) relockAt = Math.max(relockAt, current.relockAt);
  }
  const unlockedSince = current.state === 'UNLOCKED' ? (current.unlockedSince ?? now) : now;
  const held = seconds === null || (current.state === 'UNLOCKED' && current.held);
  // A timed unlock within a hold-open changes nothing: the door stays unlocked for the hold's reason (an unlock
  // schedule ends only the holds it made itself).
  const joinsHold = seconds !== null && current.state === 'UNLOCKED' && current.held;
  return { state: 'UNLOCKED', relockAt, unlockedSince, held, cause: joinsHold ? current.cause : cause };
}

/** The cause of a relock when an unlock's time has run out. */
export const RELOCK_TIMER_CAUSE = 'timer';

export function lock(cause: string): LockState {
  return lockedState(cause);
}

/** Relocks when the deadline has passed; otherwise returns the state unchanged. */
export function expire(current: LockState, now: number): LockState {
  if (current.state === 'UNLOCKED' && current.relockAt !== null && now >= current.relockAt) {
    return lockedState(RELOCK_TIMER_CAUSE);
  }
  return current;
}

/** Milliseconds until the deadline (0 if due), or null when no timer is needed. */
export function msUntilRelock(current: LockState, now: number): number | null {
  if (current.state !== 'UNLOCKED' || current.relockAt === null) return null;
  return Math.max(0, current.relockAt - now);
}

export function toPersisted(current: LockState, wallNow: number, monoNow: number): PersistedLock {
  const toWall = (mono: number | null) => (mono === null ? null : wallNow + (mono - monoNow));
  return {
    state: current.state,
    relockAt: toWall(current.relockAt),
    unlockedSince: toWall(current.unlockedSince),
    cause: current.cause,
  };
}

/**
 * The state to resume after a restart. A hold-open resumes; a timed unlock resumes until its deadline when the
 * wall clock can be trusted and is known to be synchronized (a board without an RTC may boot hours behind, and
 * an expired unlock would then look unexpired); anything else starts LOCKED. A clock that went backwards never lengthens an unlock
 * beyond its planned duration, and maxUnlockSeconds (as configured now) caps what remains.
 */
export function resume(
  persisted: PersistedLock | undefined,
  clock: { wallNow: number; monoNow: number; wallTrusted: boolean; synchronized: boolean },
  limits: LockLimits,
): LockState {
  if (persisted?.state !== 'UNLOCKED') return lockedState('start');
  const { wallNow, monoNow, wallTrusted } = clock;
  const cap = limits.maxUnlockSeconds > 0 ? limits.maxUnlockSeconds * 1000 : Infinity;
  const elapsed = persisted.unlockedSince === null ? 0 : Math.max(0, wallNow - persisted.unlockedSince);
  const since = monoNow - elapsed;
  if (persisted.relockAt === null) {
    const relockAt = cap === Infinity ? null : monoNow + cap;
    return { state: 'UNLOCKED', relockAt, unlockedSince: since, held: true, cause: persisted.cause };
  }
  if (!wallTrusted) return lockedState('clock untrusted at start');
  if (!clock.synchronized) return lockedState('clock not synchronized at start');
  const planned = persisted.unlockedSince === null ? Infinity : persisted.relockAt - persisted.unlockedSince;
  const remaining = Math.min(persisted.relockAt - wallNow, planned, cap);
  if (!(remaining > 0)) return lockedState('expired while stopped');
  return { state: 'UNLOCKED', relockAt: monoNow + remaining, unlockedSince: since, held: false, cause: persisted.cause };
}
