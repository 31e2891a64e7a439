import type { LockStateName } from '../core/relay.js';
import { haLockState, type HaLockState } from '../core/haLockState.js';
import { withProps } from '../core/objects.js';

/**
 * What the agent publishes about each door (docs/mqtt.md, "Door state" and "Alarms"):
 * - `P/doors/<uuid>/state`, retained: `{"state":"UNLOCKED","relock_at":ISO|null,"door":"OPEN"|"CLOSED"|null,
 *   "changed_at":ISO,"cause":"...","ha_state":"LOCKED"|"UNLOCKED"|"OPEN"|"JAMMED","lockdown":bool,
 *   "lockdown_scope":"door"|"agent"|null,"lockdown_by":...,"tamper":"ON"|"OFF"|null,
 *   "schedule":{"state":...,"next_change":ISO|null}|null,"emergency":bool}` (`ha_state`: Home Assistant's lock,
 *   core/haLockState.ts);
 * - `P/doors/<uuid>/alarm`, QoS 1, not retained: the alarm's fields with `event_type`, `door` and `at`;
 * - `P/agents/<id>/status`, retained (and the last will): `online` / `offline`.
 */

export const AVAILABILITY_ONLINE = 'online';
export const AVAILABILITY_OFFLINE = 'offline';

/** The lock as the controller holds it (wall ms). */
export interface LockFields {
  state: LockStateName;
  relockAt: number | null;
  changedAt: number;
  cause: string;
}

/**
 * The door's state beyond its lock and contact: its lockdown (own or the agent's), tamper input, unlock schedule,
 * and whether the emergency input holds it released (always false for a door the input does not release).
 */
export interface DoorOperationsFields {
  lockdown: { active: boolean; scope: 'door' | 'agent' | null; by: string | null };
  tamper: 'ON' | 'OFF' | null;
  schedule: { state: string; nextChange: number | null } | null;
  emergency?: boolean;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * The retained state payload, with Home Assistant's lock state when known; without `operations` (a door handled on
 * its own, in tests) only the lock and the contact.
 */
export function doorStatePayload(lock: LockFields, door: 'OPEN' | 'CLOSED' | null, operations?: DoorOperationsFields, haState?: HaLockState): string {
  const payload: Record<string, unknown> = {
    state: lock.state,
    relock_at: iso(lock.relockAt),
    door,
    changed_at: iso(lock.changedAt),
    cause: lock.cause,
  };
  if (haState !== undefined) payload.ha_state = haState;
  if (operations) {
    const { lockdown, schedule } = operations;
    Object.assign(payload, {
      lockdown: lockdown.active,
      lockdown_scope: lockdown.scope,
      lockdown_by: lockdown.by,
      tamper: operations.tamper,
      schedule: schedule === null ? null : { state: schedule.state, next_change: iso(schedule.nextChange) },
      emergency: operations.emergency ?? false,
    });
  }
  return JSON.stringify(payload);
}

/** The state published as the agent stops (every relay already driven locked, just now). */
export function stoppedDoorStatePayload(door: 'OPEN' | 'CLOSED' | null, at: number): string {
  const contact = door === null ? null : { open: door === 'OPEN', since: 0 };
  const ha = haLockState({ relay: 'LOCKED', drivenAt: 0, writeFailed: false, contact }, 0, 1).state;
  return JSON.stringify({ state: 'LOCKED', relock_at: null, door, changed_at: iso(at), cause: 'agent stopped', ha_state: ha });
}

/** An alarm: duress, tamper, door_forced, door_held_open, and the emergency input's (store/eviction.ts ALARM_TYPES). */
export function alarmPayload(door: string, type: string, data: Record<string, unknown>, at: number): string {
  return JSON.stringify(withProps(data, { event_type: type, door, at: iso(at) }));
}
