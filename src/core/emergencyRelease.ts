import { lockedState, unlock, type LockLimits, type LockState } from './lockState.js';
import type { Level } from './relay.js';

/**
 * The fire alarm's release (issue 30 item 1). Pure: what the emergency input's levels mean, and what the lock state
 * machine does while the input holds a door released. The release is a state of the lock machine (unlocked, held,
 * no relock time, cause EMERGENCY_CAUSE), so the relay follows from it like from any other state: at the unlocked
 * level until the release ends, whatever a command, a lockdown, a schedule or a relock timer asks meanwhile.
 */

/** The lock cause of a door released by the emergency input (the audit log, the door state, the saved state). */
export const EMERGENCY_CAUSE = 'emergency release';
/** The lock cause when the input clears and nothing holds the door unlocked. */
const EMERGENCY_CLEARED_CAUSE = 'emergency cleared';
/** The causes of the relay moves the input makes (its lock changes pass its flood guard, core/toggledLockMoves.ts). */
export const EMERGENCY_LOCK_CAUSES: readonly string[] = [EMERGENCY_CAUSE, EMERGENCY_CLEARED_CAUSE];

/** The audit events (and alarms) of the emergency input. */
export const EMERGENCY_EVENT_TYPES = ['emergency_release', 'emergency_cleared', 'emergency_wiring', 'emergency_wiring_cleared'] as const;
export type EmergencyEventType = (typeof EMERGENCY_EVENT_TYPES)[number];

/**
 * What the input reads. `alarm`: the loop is open (the fire panel's relay has operated, or, without a confirm
 * input, a wire is cut: the two read the same). With a confirm input (the same relay's normally-open contact):
 * `wiring_open`, both contacts open (the common wire cut); `wiring_short`, both closed (a short, a welded contact).
 */
export type EmergencyReading = 'normal' | 'alarm' | 'wiring_open' | 'wiring_short';

/**
 * The reading from the levels. `alarmLevel` is the level of `pin` when its contact (normally closed) is open; a
 * closed contact reads the other level. The confirm contact (normally open) is wired the same way, so it reads
 * `alarmLevel` while open (normal) and the other level while closed (alarm).
 */
export function readEmergency(levels: { pin: Level; confirm: Level | null }, alarmLevel: Level): EmergencyReading {
  const loopOpen = levels.pin === alarmLevel;
  if (levels.confirm === null) return loopOpen ? 'alarm' : 'normal';
  const confirmOpen = levels.confirm === alarmLevel;
  if (loopOpen === confirmOpen) return loopOpen ? 'wiring_open' : 'wiring_short';
  return loopOpen ? 'alarm' : 'normal';
}

/** Every reading but normal releases the doors: a fault must never keep a door locked in a fire (fail-safe). */
export function releases(reading: EmergencyReading): boolean {
  return reading !== 'normal';
}

/** The wiring fault a reading shows, null when the pair is consistent (or there is no confirm input). */
export function wiringFault(reading: EmergencyReading): 'open' | 'short' | null {
  return reading === 'wiring_open' ? 'open' : reading === 'wiring_short' ? 'short' : null;
}

/** Whether the emergency input holds the door released. */
export function isReleased(state: Pick<LockState, 'state' | 'cause'>): boolean {
  return state.state === 'UNLOCKED' && state.cause === EMERGENCY_CAUSE;
}

/**
 * The release: unlocked, held, with no relock time (maxUnlockSeconds does not cut it: a fire lasts as long as it
 * lasts). An unlock in progress is taken over (its unlocked-since kept).
 */
export function release(current: LockState, now: number): LockState {
  if (isReleased(current)) return current;
  const unlockedSince = current.state === 'UNLOCKED' ? (current.unlockedSince ?? now) : now;
  return { state: 'UNLOCKED', relockAt: null, unlockedSince, held: true, cause: EMERGENCY_CAUSE };
}

/**
 * Any other step of the machine (an unlock, a lock, a relock timer) while the door is released: refused, the state
 * stays as it is (the relay at its unlocked level). Otherwise the step as asked.
 */
export function whileReleased(current: LockState, requested: LockState): LockState {
  return isReleased(current) ? current : requested;
}

/**
 * The release ended: the door goes to what it should be now, which the caller works out with the unlock schedule
 * (its hours, holidays, lockdown, first person in, a lock by hand): held unlocked under `holdCause` when the
 * schedule says so, else locked. Nothing else from before or during the release comes back.
 */
export function afterRelease(current: LockState, request: { now: number; holdCause: string | null }, limits: LockLimits): LockState {
  if (!isReleased(current)) return current;
  const locked = lockedState(EMERGENCY_CLEARED_CAUSE);
  return request.holdCause === null ? locked : unlock(locked, { now: request.now, seconds: null, cause: request.holdCause }, limits);
}
