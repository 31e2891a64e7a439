/** Keypad lockout: after `failures` wrong PINs within `windowSeconds`, PINs are refused for `lockoutSeconds`. */
export interface KeypadLockoutPolicy {
  failures: number;
  windowSeconds: number;
  lockoutSeconds: number;
}

export interface KeypadState {
  /** Times (monotonic ms) of recent wrong PINs, oldest first. */
  failures: readonly number[];
  lockedUntil: number | null;
}

export const KEYPAD_IDLE: KeypadState = { failures: [], lockedUntil: null };

export function isLockedOut(state: KeypadState, now: number): boolean {
  return state.lockedUntil !== null && now < state.lockedUntil;
}

/**
 * Records a wrong PIN. Returns the next state and whether this failure started a lockout. The window is
 * rolling: a correct PIN in between does not reset it, so guesses cannot hide behind a valid user's PIN.
 */
export function recordFailure(
  state: KeypadState,
  now: number,
  policy: KeypadLockoutPolicy,
): { state: KeypadState; lockoutStarted: boolean } {
  const windowStart = now - policy.windowSeconds * 1000;
  const failures = [...state.failures.filter((t) => t > windowStart), now];
  if (failures.length >= policy.failures && !isLockedOut(state, now)) {
    return { state: { failures: [], lockedUntil: now + policy.lockoutSeconds * 1000 }, lockoutStarted: true };
  }
  return { state: { failures, lockedUntil: state.lockedUntil }, lockoutStarted: false };
}

/** card_and_pin: a card accepted for these users waits for one of their PINs until `expiresAt`. */
export interface PendingCard {
  emailIds: readonly number[];
  hint: string;
  expiresAt: number;
}

export const PIN_AFTER_CARD_MS = 10_000;
