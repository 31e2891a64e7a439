import { CLOSE_RELOCK_CAUSE, EXIT_BUTTON_CAUSE } from './doorSupervision.js';
import { EMERGENCY_LOCK_CAUSES } from './emergencyRelease.js';
import { RELOCK_TIMER_CAUSE } from './lockState.js';

/** The inputs an attacker (or a bad wire) can toggle that move a door's relay. */
export type ToggledLockInput = 'emergency input' | 'exit button' | 'contact';

/**
 * Which toggled input made a lock move, from the move's cause: the fire alarm input (its release and its end), the
 * exit button (its unlock, and the relock timer that ends it: `ended` is the cause of the unlock a relock ends), the
 * contact (a door closed behind someone relocked). Their moves pass that input's flood guard (door/lockAudit.ts).
 * Null for every other move, recorded one by one: a credential's unlock (each follows a recorded decision, and
 * guessing is limited by the card and keypad lockouts) and its relock timer, an MQTT command (signed; refused ones
 * are counted), the unlock schedule, a lockdown, a restart.
 */
export function toggledLockInput(cause: string, ended: string | null): ToggledLockInput | null {
  if (EMERGENCY_LOCK_CAUSES.includes(cause)) return 'emergency input';
  if (cause === EXIT_BUTTON_CAUSE) return 'exit button';
  if (cause === CLOSE_RELOCK_CAUSE) return 'contact';
  if (cause === RELOCK_TIMER_CAUSE && ended === EXIT_BUTTON_CAUSE) return 'exit button';
  return null;
}
