import type { DoorOptions } from '../door/options.js';
import type { Topics } from '../protocol/topics.js';
import { ALARM_TYPES } from '../store/eviction.js';

export interface DiscoveryMessage {
  topic: string;
  payload: Record<string, unknown>;
}

/** The `event_type`s published on `P/doors/<uuid>/alarm`. */
const ALARM_EVENT_TYPES = ALARM_TYPES;

/**
 * The `schedule.state` values of `P/doors/<uuid>/state`, plus `none` (the sensor's value when the state carries no
 * schedule). The schedule sensor is an enum sensor over exactly these: a state the agent adds must be added here.
 */
const SCHEDULE_SENSOR_STATES = ['closed', 'holiday', 'waiting_for_first_person', 'suspended', 'unlocked', 'none', 'waiting_for_clock'] as const;

/**
 * The lock's attributes, picked from the state topic. `.get` gives null for a field an older agent does not send,
 * where `value_json.x` would be undefined and break `tojson`.
 */
const LOCK_ATTRIBUTES_TEMPLATE =
  "{{ {'lockdown': value_json.get('lockdown'), 'tamper': value_json.get('tamper'), 'schedule': value_json.get('schedule'), " +
  "'emergency': value_json.get('emergency'), 'cause': value_json.get('cause'), 'relock_at': value_json.get('relock_at')} | tojson }}";

/** On while the emergency input holds the door released (an older agent's state has no field: off). */
const EMERGENCY_VALUE_TEMPLATE = "{{ 'ON' if value_json.get('emergency') else 'OFF' }}";

/** The access event entity's payload: a decision's type and who, by which level, or why not (nothing for other events). */
const ACCESS_EVENT_TEMPLATE =
  "{% if value_json.type in ['access_granted', 'access_denied'] %}{{ {'event_type': value_json.type, " +
  "'who': value_json.get('who'), 'level': value_json.get('level'), 'reason': value_json.get('reason'), " +
  "'kind': value_json.get('kind'), 'credential': value_json.get('hint')} | tojson }}{% endif %}";

const LOCKDOWN_VALUE_TEMPLATE = "{{ 'ON' if value_json.lockdown else 'OFF' }}";

/**
 * Home Assistant MQTT discovery (retained), all of one agent's entities under one device that goes unavailable
 * with the agent's last will:
 * - per door a `lock` (LOCK, UNLOCK = hold open, OPEN = unlockSeconds) with lockdown, tamper, schedule, cause and
 *   relock_at of the state topic as attributes; an `event` entity for its alarms; a door `binary_sensor` per
 *   contact, a tamper `binary_sensor` per tamper input, a `sensor` for the unlock schedule when it has one, a
 *   safety `binary_sensor` when the emergency input releases it;
 * - per agent (with at least one door) its lockdown: a `switch` when commands are not signed, else (Home
 *   Assistant cannot sign) a read-only `binary_sensor` with the same unique_id, so there is no command topic.
 */
export function discoveryMessages(options: {
  haPrefix: string;
  topics: Topics;
  doors: readonly DoorOptions[];
  version: string;
  /** Whether commands and retained lockdowns must be signed (mqtt.commandSecretFile). */
  signed: boolean;
}): DiscoveryMessage[] {
  const { haPrefix, topics, doors, version, signed } = options;
  const agent = topics.agentId;
  const device = {
    identifiers: [`door-agent_${agent}`],
    name: `door-agent ${agent}`,
    manufacturer: 'door-agent',
    model: 'door-agent',
    sw_version: version,
  };
  const availability = { availability_topic: topics.status, payload_available: 'online', payload_not_available: 'offline' };
  const messages: DiscoveryMessage[] = [];
  for (const door of doors) {
    const id = `${agent}_${door.uuid}`;
    const state = topics.state(door.uuid);
    messages.push({
      topic: `${haPrefix}/lock/${id}/config`,
      payload: {
        name: door.name,
        unique_id: id,
        command_topic: topics.set(door.uuid),
        state_topic: state,
        value_template: '{{ value_json.state }}',
        payload_lock: 'LOCK',
        payload_unlock: 'UNLOCK',
        payload_open: 'OPEN',
        state_locked: 'LOCKED',
        state_unlocked: 'UNLOCKED',
        json_attributes_topic: state,
        json_attributes_template: LOCK_ATTRIBUTES_TEMPLATE,
        optimistic: false,
        qos: 1,
        retain: false,
        ...availability,
        device,
      },
    });
    if (door.contact) {
      messages.push({
        topic: `${haPrefix}/binary_sensor/${id}_door/config`,
        payload: {
          name: `${door.name} contact`,
          unique_id: `${id}_door`,
          device_class: 'door',
          state_topic: state,
          value_template: '{{ value_json.door }}',
          payload_on: 'OPEN',
          payload_off: 'CLOSED',
          qos: 1,
          ...availability,
          device,
        },
      });
    }
    if (door.tamper) {
      messages.push({
        topic: `${haPrefix}/binary_sensor/${id}_tamper/config`,
        payload: {
          name: `${door.name} tamper`,
          unique_id: `${id}_tamper`,
          device_class: 'tamper',
          state_topic: state,
          value_template: '{{ value_json.tamper }}',
          payload_on: 'ON',
          payload_off: 'OFF',
          qos: 1,
          ...availability,
          device,
        },
      });
    }
    if (door.emergencyRelease) {
      messages.push({
        topic: `${haPrefix}/binary_sensor/${id}_emergency/config`,
        payload: {
          name: `${door.name} emergency release`,
          unique_id: `${id}_emergency`,
          // safety: on reads "Unsafe": the fire alarm input holds the door released.
          device_class: 'safety',
          state_topic: state,
          value_template: EMERGENCY_VALUE_TEMPLATE,
          payload_on: 'ON',
          payload_off: 'OFF',
          qos: 1,
          icon: 'mdi:fire-alert',
          ...availability,
          device,
        },
      });
    }
    if (door.unlockSchedule) {
      messages.push({
        topic: `${haPrefix}/sensor/${id}_schedule/config`,
        payload: {
          name: `${door.name} unlock schedule`,
          unique_id: `${id}_schedule`,
          device_class: 'enum',
          options: [...SCHEDULE_SENSOR_STATES],
          state_topic: state,
          value_template: "{{ value_json.schedule.state if value_json.schedule else 'none' }}",
          json_attributes_topic: state,
          json_attributes_template: "{{ {'next_change': value_json.schedule.next_change if value_json.schedule else none} | tojson }}",
          icon: 'mdi:calendar-clock',
          qos: 1,
          ...availability,
          device,
        },
      });
    }
    messages.push({
      topic: `${haPrefix}/event/${id}_access/config`,
      payload: {
        name: `${door.name} access`,
        unique_id: `${id}_access`,
        // Every audit event comes on the events topic; the template keeps the decisions (an empty rendering is
        // ignored) and names who opened the door and by which access level.
        state_topic: topics.events(door.uuid),
        value_template: ACCESS_EVENT_TEMPLATE,
        event_types: ['access_granted', 'access_denied'],
        icon: 'mdi:badge-account',
        qos: 1,
        ...availability,
        device,
      },
    });
    messages.push({
      topic: `${haPrefix}/event/${id}_alarm/config`,
      payload: {
        name: `${door.name} alarm`,
        unique_id: `${id}_alarm`,
        // The alarm payload's own event_type picks the type; its other fields become the event's attributes.
        state_topic: topics.alarm(door.uuid),
        event_types: [...ALARM_EVENT_TYPES],
        icon: 'mdi:alarm-light',
        qos: 1,
        ...availability,
        device,
      },
    });
  }
  if (doors.length > 0) {
    const id = `${agent}_lockdown`;
    if (!signed) {
      messages.push({
        topic: `${haPrefix}/switch/${id}/config`,
        payload: {
          name: 'Lockdown',
          unique_id: id,
          command_topic: topics.agentLockdown,
          payload_on: JSON.stringify({ lockdown: true, by: 'Home Assistant' }),
          payload_off: JSON.stringify({ lockdown: false, by: 'Home Assistant' }),
          // The lockdown topic holds state (retained): the agent reads it again after a restart.
          retain: true,
          state_topic: topics.agentLockdownState,
          value_template: LOCKDOWN_VALUE_TEMPLATE,
          state_on: 'ON',
          state_off: 'OFF',
          optimistic: false,
          qos: 1,
          icon: 'mdi:shield-lock',
          ...availability,
          device,
        },
      });
    } else {
      messages.push({
        topic: `${haPrefix}/binary_sensor/${id}/config`,
        payload: {
          name: 'Lockdown',
          unique_id: id,
          // No device_class: none means "lockdown". `lock` is inverted (on = unlocked), `safety` would show
          // "Unsafe" (a drill or a precaution is not a hazard the agent knows of) and `problem` "Problem"; plain
          // On/Off under the name Lockdown says what the agent holds, and the icon marks it.
          state_topic: topics.agentLockdownState,
          value_template: LOCKDOWN_VALUE_TEMPLATE,
          payload_on: 'ON',
          payload_off: 'OFF',
          qos: 1,
          icon: 'mdi:shield-lock',
          ...availability,
          device,
        },
      });
    }
  }
  return messages;
}
