import type { CommandTarget } from '../../door/doorCommand.js';
import type { DoorOptions } from '../../door/options.js';
import type { DoorOperationsFields } from '../../protocol/doorState.js';

/**
 * One of the agent's doors as the MQTT handlers see it (the component builds these from the Door components): a
 * command target (door/doorCommand.ts: its lock controller; lockdown and interlock refuse remote unlocks, the
 * emergency input remote locks, 409) and what its state messages publish.
 */
export interface MqttDoor extends CommandTarget {
  door: DoorOptions;
  contact: () => 'OPEN' | 'CLOSED' | null;
  /** The rest of the door's published state: lockdown, tamper, unlock schedule, emergency (absent: only lock and contact). */
  operations?: () => DoorOperationsFields;
  /** Whether its reader is connected, null without a reader (the health message). */
  readerOnline?: () => boolean | null;
}
