import { withProps } from './objects.js';
/**
 * The agent's keypad lockout (one for all its doors): after `failures` wrong PINs within `windowSeconds`, PINs are
 * refused for `lockoutSeconds`; each further lockout in a row lasts twice the one before, up to
 * `maxLockoutSeconds`. The doubling starts again once no wrong PIN was typed for `maxLockoutSeconds` after the
 * last lockout ended (the quiet period).
 */
export interface KeypadLockoutPolicy {
  failures: number;
  windowSeconds: number;
  lockoutSeconds: number;
  maxLockoutSeconds: number;
}

export interface KeypadState {
  /** Times (monotonic ms) of recent wrong PINs since the last lockout, oldest first. */
  failures: readonly number[];
  lockedUntil: number | null;
  /** Length of the lockout in progress (or the last one), ms: a restart restarts it in full. */
  lockoutMs: number;
  /** Lockouts in a row: the next one lasts lockoutSeconds * 2^streak (capped). */
  streak: number;
  /** The last wrong PIN (monotonic ms), for the quiet period. */
  lastFailure: number | null;
}

export const KEYPAD_IDLE: KeypadState = { failures: [], lockedUntil: null, lockoutMs: 0, streak: 0, lastFailure: null };

export function isLockedOut(state: KeypadState, now: number): boolean {
  return state.lockedUntil !== null && now < state.lockedUntil;
}

/** How long the lockout after `streak` lockouts in a row lasts, ms. @internal */
export function lockoutLengthMs(policy: KeypadLockoutPolicy, streak: number): number {
  return Math.min(policy.lockoutSeconds * 2 ** Math.min(streak, 30), Math.max(policy.maxLockoutSeconds, policy.lockoutSeconds)) * 1000;
}

/**
 * Records a wrong PIN. Returns the next state and, when this failure started a lockout, its length. The window is
 * rolling: a correct PIN in between does not reset it, so guesses cannot hide behind a valid user's PIN. A wrong
 * PIN during a lockout changes nothing (the caller refuses it without counting): a lockout is never extended.
 */
export function recordFailure(
  state: KeypadState,
  now: number,
  policy: KeypadLockoutPolicy,
): { state: KeypadState; lockoutStarted: boolean; lockoutMs: number } {
  if (isLockedOut(state, now)) return { state, lockoutStarted: false, lockoutMs: 0 };
  const quietSince = Math.max(state.lockedUntil ?? -Infinity, state.lastFailure ?? -Infinity);
  const streak = state.streak > 0 && now - quietSince >= policy.maxLockoutSeconds * 1000 ? 0 : state.streak;
  const windowStart = now - policy.windowSeconds * 1000;
  const failures = [...state.failures.filter((t) => t > windowStart), now];
  if (failures.length >= policy.failures) {
    const lockoutMs = lockoutLengthMs(policy, streak);
    return { state: { failures: [], lockedUntil: now + lockoutMs, lockoutMs, streak: streak + 1, lastFailure: now }, lockoutStarted: true, lockoutMs };
  }
  return { state: withProps(state, { failures, streak, lastFailure: now }), lockoutStarted: false, lockoutMs: 0 };
}

/**
 * What state.db keeps of the keypad state. The daemon reads back no clock reading (the monotonic clock restarts
 * with the process); the end of a lockout in progress is kept by the wall clock for `door-agent status` only.
 */
export interface SavedKeypadState {
  /** Wrong PINs still inside the window when saved. */
  failures: number;
  /** The length (ms) of the lockout in progress when saved; 0: none. */
  lockoutMs: number;
  streak: number;
  /** With a lockout in progress and `wallNow` given: when it ends (ISO 8601, the wall clock). */
  lockoutEndsAt?: string;
}

export function saveKeypadState(state: KeypadState, now: number, policy: KeypadLockoutPolicy, wallNow?: number): SavedKeypadState {
  const windowStart = now - policy.windowSeconds * 1000;
  const lockedOut = isLockedOut(state, now);
  const saved: SavedKeypadState = {
    failures: state.failures.filter((t) => t > windowStart).length,
    lockoutMs: lockedOut ? state.lockoutMs : 0,
    streak: state.streak,
  };
  if (lockedOut && wallNow !== undefined) saved.lockoutEndsAt = new Date(wallNow + (state.lockedUntil! - now)).toISOString();
  return saved;
}

const count = (v: unknown, max: number): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.min(Math.floor(v), max) : 0);

/**
 * The state after a restart, conservatively: the saved failures count as typed just now, a lockout in progress
 * starts again in full, and the quiet period that ends the doubling starts again. A restart never gives fresh tries.
 */
export function restoreKeypadState(saved: unknown, now: number, policy: KeypadLockoutPolicy): KeypadState {
  if (typeof saved !== 'object' || saved === null) return KEYPAD_IDLE;
  const s = saved as Record<string, unknown>;
  const failures = count(s.failures, 1000);
  const lockoutMs = count(s.lockoutMs, lockoutLengthMs(policy, 30));
  const streak = count(s.streak, 30);
  if (failures === 0 && lockoutMs === 0 && streak === 0) return KEYPAD_IDLE;
  return {
    failures: Array.from({ length: failures }, () => now),
    lockedUntil: lockoutMs > 0 ? now + lockoutMs : null,
    lockoutMs,
    streak,
    lastFailure: now,
  };
}

/**
 * Whether a refused PIN, card or token counts toward its lockout: unknown and refused known credentials alike
 * (a suspended user's or an expired link's number is as good a guess as any). Not counted: a refusal for the
 * clock or a lockout in progress, and a known credential refused only for the lockdown or the offline limit
 * (cache_too_old: its holder is no guesser).
 * An unknown one refused for the lockdown still counts: otherwise a lockdown would be a free guessing window for
 * the responders' PINs.
 */
export function countsAsGuess(decision: { granted: boolean; reason: string | null; holders: readonly unknown[] }): boolean {
  if (decision.granted) return false;
  if (decision.reason === 'lockdown' || decision.reason === 'cache_too_old') return decision.holders.length === 0;
  return decision.reason !== 'clock_untrusted' && decision.reason !== 'keypad_locked_out' && decision.reason !== 'card_locked_out';
}

/** card_and_pin: how long a card accepted waits for one of its holders' PINs (door/pinAfterCard.ts). */
export const PIN_AFTER_CARD_MS = 10_000;
