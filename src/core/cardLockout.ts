import { withProps } from './objects.js';
/**
 * A reader's card lockout: after `failures` refused cards or tokens within `windowSeconds` the reader refuses
 * cards for a short while. It must never keep a valid card out for long (someone else's attempts are the
 * cause): it ends `quietSeconds` after the last guess it refused (a valid card refused during it does not prolong
 * it), and in any case `lockoutSeconds` after it started. The next one cannot start before the reader has been
 * open for `quietSeconds`: a stream of guesses that never stops still leaves a valid card tapped every few seconds
 * a window to get in at least every lockoutSeconds + quietSeconds (a stream no faster than the reader's pace,
 * readerPace.ts: a faster one takes the decisions of the window). Between lockouts the pace bounds the guesses.
 */
export interface CardLockoutPolicy {
  failures: number;
  windowSeconds: number;
  /** The longest a lockout lasts. */
  lockoutSeconds: number;
  /** A lockout ends this long after the last attempt it refused. */
  quietSeconds: number;
}

export interface CardLockoutState {
  /** Times (monotonic ms) of recent refused cards since the last lockout, oldest first. */
  failures: readonly number[];
  /** When the lockout in progress (or the last one) started; null: none yet. */
  startedAt: number | null;
  /** The last attempt that started or was refused during that lockout. */
  lastAttempt: number;
}

/** No card lockout lasts longer, whatever the configuration says (someone else's guesses must not keep a card out). */
export const MAX_CARD_LOCKOUT_SECONDS = 30;

export const CARD_IDLE: CardLockoutState = { failures: [], startedAt: null, lastAttempt: 0 };

/** When the lockout ends (monotonic ms), as things stand; null when there is none. */
export function cardLockoutEndsAt(state: CardLockoutState, policy: CardLockoutPolicy): number | null {
  if (state.startedAt === null) return null;
  const cap = Math.min(policy.lockoutSeconds, MAX_CARD_LOCKOUT_SECONDS) * 1000;
  return Math.min(state.startedAt + cap, state.lastAttempt + policy.quietSeconds * 1000);
}

export function isCardLockedOut(state: CardLockoutState, now: number, policy: CardLockoutPolicy): boolean {
  const end = cardLockoutEndsAt(state, policy);
  return end !== null && now < end;
}

/** A refused card or token (not during a lockout): counted; returns whether it started a lockout. */
export function recordCardFailure(state: CardLockoutState, now: number, policy: CardLockoutPolicy): { state: CardLockoutState; lockoutStarted: boolean } {
  if (isCardLockedOut(state, now, policy)) return { state, lockoutStarted: false };
  const windowStart = now - policy.windowSeconds * 1000;
  const failures = [...state.failures.filter((t) => t > windowStart), now];
  const lastEnd = cardLockoutEndsAt(state, policy);
  const rested = lastEnd === null || now >= lastEnd + policy.quietSeconds * 1000;
  if (failures.length >= policy.failures && rested) return { state: { failures: [], startedAt: now, lastAttempt: now }, lockoutStarted: true };
  return { state: withProps(state, { failures }), lockoutStarted: false };
}

/** A guess refused for the lockout: the lockout lasts until `quietSeconds` after it (never past its cap). */
export function recordCardRefused(state: CardLockoutState, now: number, policy: CardLockoutPolicy): CardLockoutState {
  return isCardLockedOut(state, now, policy) ? withProps(state, { lastAttempt: now }) : state;
}
