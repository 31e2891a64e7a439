/**
 * Every audit event type an agent writes (src/store/eventLog.ts EventType) and the service knows, in one list both
 * sides can read: the service takes a webhook subscription's types from it (docs/audit.md, "Webhooks"). A test
 * keeps it and the agent's EventType the same.
 */
export const EVENT_TYPES = [
  'access_granted',
  'access_denied',
  'unlocked',
  'locked',
  'door_opened',
  'door_closed',
  'door_forced',
  'door_held_open',
  'exit_request',
  'keypad_locked_out',
  'card_locked_out',
  'reader_noise',
  'reader_online',
  'reader_offline',
  'reader_tamper',
  'reader_power',
  'command_rejected',
  'lockdown_started',
  'lockdown_ended',
  'duress',
  'duress_collision',
  'tamper',
  'first_person_in',
  'schedule_waiting_for_clock',
  'schedule_clock_synchronized',
  'schedule_waiting_for_interlock',
  'clock_skew',
  'cache_too_old',
  'cache_fresh',
  'cache_damaged',
  'cache_rebuilt',
  'granted_not_opened',
  'power_lost',
  'power_restored',
  'battery_low',
  'battery_ok',
  'link_lost',
  'link_restored',
  'sync_refused',
  'config_changed',
  'emergency_release',
  'emergency_cleared',
  'emergency_wiring',
  'emergency_wiring_cleared',
  'awaiting_second_person',
  'passback_violation',
  'area_reset',
  'area_checkpoint',
  'local_command',
  'learn_tap',
  'reader_firmware',
  // A chain's first record (protocol/auditChain.ts CHAIN_STARTED).
  'audit_chain_started',
] as const;

/** The event types raised as alarms (`P/doors/<uuid>/alarm`). */
export const ALARM_TYPES = [
  'duress',
  'tamper',
  'door_forced',
  'door_held_open',
  'emergency_release',
  'emergency_cleared',
  'emergency_wiring',
  'emergency_wiring_cleared',
] as const;

export type KnownEventType = (typeof EVENT_TYPES)[number];

const KNOWN: ReadonlySet<string> = new Set(EVENT_TYPES);

/** Whether `type` is an event type some agent writes. */
export function isKnownEventType(type: string): type is KnownEventType {
  return KNOWN.has(type);
}
