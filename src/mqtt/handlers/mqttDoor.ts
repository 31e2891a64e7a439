import type { LockController } from '../../door/lockController.js';
import type { DoorOptions } from '../../door/options.js';
import type { DoorOperationsFields } from '../../protocol/doorState.js';

/** One of the agent's doors as the MQTT handlers see it (the component builds these from the Door components). */
export interface MqttDoor {
  door: DoorOptions;
  controller: LockController;
  contact: () => 'OPEN' | 'CLOSED' | null;
  /** In lockdown, remote unlocks are refused (409). */
  lockdown?: () => boolean;
  /** The door of its interlock that keeps it from unlocking now (remote unlocks are refused, 409), or null. */
  interlock?: () => string | null;
  /** Released by the emergency input: remote locks are refused (409). */
  emergency?: () => boolean;
  /** The rest of the door's published state: lockdown, tamper, unlock schedule, emergency (absent: only lock and contact). */
  operations?: () => DoorOperationsFields;
  /** Whether its reader is connected, null without a reader (the health message). */
  readerOnline?: () => boolean | null;
}
