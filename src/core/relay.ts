export type LockStateName = 'LOCKED' | 'UNLOCKED';
export type FailMode = 'secure' | 'safe';
export type Level = 0 | 1;

/**
 * The GPIO level for a lock state. A fail-secure strike is energized to unlock, a fail-safe maglock is
 * energized to lock; activeLow inverts the output (relay boards that switch on a low input).
 */
export function relayLevel(state: LockStateName, failMode: FailMode, activeLow: boolean): Level {
  const energized = failMode === 'secure' ? state === 'UNLOCKED' : state === 'LOCKED';
  return energized !== activeLow ? 1 : 0;
}
