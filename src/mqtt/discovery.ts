import type { DoorOptions } from '../door/options.js';
import type { Topics } from '../protocol/topics.js';
import { haEventTypes } from './haEvents.js';
import { withProps } from '../core/objects.js';

export interface DiscoveryMessage {
  topic: string;
  payload: Record<string, unknown>;
}

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

/** The lock's state: `ha_state` (core/haLockState.ts); an older agent's state has only `state` (LOCKED, UNLOCKED). */
const LOCK_VALUE_TEMPLATE = "{{ value_json.get('ha_state') or value_json.state }}";

/**
 * The names of Home Assistant's lock states on the state topic, each given explicitly (HA's defaults are the same
 * words). The agent sends LOCKED, UNLOCKED, OPEN and JAMMED; a relay moves at once, so never LOCKING, UNLOCKING or
 * OPENING (named all the same: every state Home Assistant knows has its name here).
 */
const LOCK_STATES = {
  state_locked: 'LOCKED',
  state_unlocked: 'UNLOCKED',
  state_open: 'OPEN',
  state_jammed: 'JAMMED',
  state_locking: 'LOCKING',
  state_unlocking: 'UNLOCKING',
  state_opening: 'OPENING',
} as const;

/** The agent's own device: `door-agent_<agent id>`; each door's device names it as its `via_device`. */
export function agentDeviceId(agentId: string): string {
  return `door-agent_${agentId}`;
}

/**
 * The devices' `configuration_url`: mqtt.homeAssistant.configurationUrl when set, else the operator's console of
 * the reference service the agent syncs with (`<service.baseUrl>/console`, which assumes the console is served by
 * that same service), else none.
 */
export function configurationUrlOf(configured: string | undefined, serviceBaseUrl: string | null | undefined): string | undefined {
  if (configured) return configured;
  if (!serviceBaseUrl) return undefined;
  return new URL('console', serviceBaseUrl.endsWith('/') ? serviceBaseUrl : `${serviceBaseUrl}/`).href;
}

/** On while the emergency input holds the door released (an older agent's state has no field: off). */
const EMERGENCY_VALUE_TEMPLATE = "{{ 'ON' if value_json.get('emergency') else 'OFF' }}";

const LOCKDOWN_VALUE_TEMPLATE = "{{ 'ON' if value_json.lockdown else 'OFF' }}";

/**
 * The lock's command with a code (mqtt.homeAssistant.codeFile): Home Assistant renders its payload (`value`: LOCK,
 * UNLOCK or OPEN) and the code typed (`code`, None without one) as JSON; `tojson` escapes whatever the code holds.
 */
const CODE_COMMAND_TEMPLATE = "{{ {'action': value, 'code': code} | tojson }}";

/** The agent's diagnostic sensors, each a value of the health message (protocol/health.ts); a null renders None: unknown. */
const HEALTH_SENSORS = [
  {
    key: 'outbox_depth',
    name: 'Outbox depth',
    value_template: '{{ value_json.outbox_depth }}',
    unit_of_measurement: 'events',
    state_class: 'measurement',
    icon: 'mdi:tray-full',
  },
  {
    key: 'cache_age',
    name: 'Cache age',
    value_template: '{{ value_json.cache.age_s }}',
    device_class: 'duration',
    unit_of_measurement: 's',
    state_class: 'measurement',
    json_attributes_template: "{{ {'revision': value_json.cache.revision} | tojson }}",
  },
  {
    key: 'readers_online',
    name: 'Readers online',
    value_template: '{{ value_json.readers.online }}',
    state_class: 'measurement',
    icon: 'mdi:card-account-details-outline',
    json_attributes_template: "{{ {'total': value_json.readers.total, 'per_door': value_json.readers.per_door} | tojson }}",
  },
  {
    key: 'event_loop_lag',
    name: 'Event loop lag p99',
    value_template: '{{ value_json.event_loop_lag_p99_ms }}',
    device_class: 'duration',
    unit_of_measurement: 'ms',
    state_class: 'measurement',
  },
  // The agent's start time, not a counter: Home Assistant shows "3 hours ago" and records no change per message. An
  // older agent's health has no started_at: None, unknown.
  { key: 'uptime', name: 'Started', value_template: "{{ value_json.get('started_at') }}", device_class: 'timestamp', icon: 'mdi:restart' },
] as const;

/**
 * Home Assistant MQTT discovery (retained), every entity unavailable with the agent's last will, each message
 * naming its origin (door-agent, its version). One device per door (model `door-agent door`, linked to the
 * agent's device by `via_device`, so each door can sit in its own area) and one for the agent (model `door-agent
 * controller`):
 * - per door, on its device: a `lock` (LOCK, UNLOCK = hold open, OPEN = unlockSeconds; with a code file, Home
 *   Assistant asks for the code and sends it) whose state is `ha_state` (LOCKED, UNLOCKED, OPEN, JAMMED), with
 *   lockdown, tamper, schedule, cause and relock_at of the state topic as attributes; `event` entities for its
 *   access decisions and its alarms (haEvents.ts); a door `binary_sensor` per contact, a tamper `binary_sensor`
 *   per tamper input, a `sensor` for the unlock schedule when it has one, a safety `binary_sensor` when the
 *   emergency input releases it;
 * - on the agent's device: its lockdown (with at least one door): a `switch` when commands are not signed, else
 *   (Home Assistant cannot sign) a read-only `binary_sensor` with the same unique_id, so there is no command topic;
 *   per area (docs/areas.md) a `sensor` of the count of who is in, the muster list as its attributes; diagnostic
 *   entities: sensors and a binary sensor from the health message (its start a timestamp sensor), and an `event`
 *   entity for its supervision events.
 * Every topic is `<prefix>/<component>/<agent id>_<...>/config`, every unique_id that of earlier releases.
 */
export function discoveryMessages(options: {
  haPrefix: string;
  topics: Topics;
  doors: readonly DoorOptions[];
  version: string;
  /** Whether commands and retained lockdowns must be signed (mqtt.commandSecretFile). */
  signed: boolean;
  /** The lock's `code_format` when Home Assistant's unlocks need a code (mqtt.homeAssistant.codeFile); absent: no code. */
  codeFormat?: string | null;
  /** The devices' `configuration_url` (configurationUrlOf); absent: none. */
  configurationUrl?: string;
  /** The origin's `support_url`: the project's address, when package.json names one. */
  projectUrl?: string | null;
  /** The agent's areas (docs/areas.md): a sensor each for the count of who is in. */
  areas?: ReadonlyArray<{ id: string; name: string }>;
}): DiscoveryMessage[] {
  const { haPrefix, topics, doors, version, signed } = options;
  const agent = topics.agentId;
  const link = options.configurationUrl ? { configuration_url: options.configurationUrl } : {};
  const device = Object.assign(
    { identifiers: [agentDeviceId(agent)], name: `door-agent ${agent}`, manufacturer: 'door-agent', model: 'door-agent controller', sw_version: version },
    link,
  );
  const origin = { name: 'door-agent', sw_version: version, ...(options.projectUrl ? { support_url: options.projectUrl } : {}) };
  const availability = { availability_topic: topics.status, payload_available: 'online', payload_not_available: 'offline' };
  const code = options.codeFormat ? { code_format: options.codeFormat, command_template: CODE_COMMAND_TEMPLATE } : {};
  const messages: DiscoveryMessage[] = [];
  for (const door of doors) {
    const id = `${agent}_${door.uuid}`;
    const state = topics.state(door.uuid);
    // The door's own device; its entities are named after it (the lock, its main feature, has no name of its own).
    const doorDevice = Object.assign(
      {
        identifiers: [`${agentDeviceId(agent)}_${door.uuid}`],
        name: door.name,
        manufacturer: 'door-agent',
        model: 'door-agent door',
        via_device: agentDeviceId(agent),
      },
      link,
    );
    messages.push({
      topic: `${haPrefix}/lock/${id}/config`,
      payload: {
        name: null,
        unique_id: id,
        command_topic: topics.set(door.uuid),
        state_topic: state,
        value_template: LOCK_VALUE_TEMPLATE,
        payload_lock: 'LOCK',
        payload_unlock: 'UNLOCK',
        payload_open: 'OPEN',
        ...LOCK_STATES,
        json_attributes_topic: state,
        json_attributes_template: LOCK_ATTRIBUTES_TEMPLATE,
        optimistic: false,
        qos: 1,
        retain: false,
        ...code,
        ...availability,
        device: doorDevice,
      },
    });
    if (door.contact) {
      messages.push({
        topic: `${haPrefix}/binary_sensor/${id}_door/config`,
        payload: {
          name: 'Contact',
          unique_id: `${id}_door`,
          device_class: 'door',
          state_topic: state,
          value_template: '{{ value_json.door }}',
          payload_on: 'OPEN',
          payload_off: 'CLOSED',
          qos: 1,
          ...availability,
          device: doorDevice,
        },
      });
    }
    if (door.tamper) {
      messages.push({
        topic: `${haPrefix}/binary_sensor/${id}_tamper/config`,
        payload: {
          name: 'Tamper',
          unique_id: `${id}_tamper`,
          device_class: 'tamper',
          state_topic: state,
          value_template: '{{ value_json.tamper }}',
          payload_on: 'ON',
          payload_off: 'OFF',
          qos: 1,
          ...availability,
          device: doorDevice,
        },
      });
    }
    if (door.emergencyRelease) {
      messages.push({
        topic: `${haPrefix}/binary_sensor/${id}_emergency/config`,
        payload: {
          name: 'Emergency release',
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
          device: doorDevice,
        },
      });
    }
    if (door.unlockSchedule) {
      messages.push({
        topic: `${haPrefix}/sensor/${id}_schedule/config`,
        payload: {
          name: 'Unlock schedule',
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
          device: doorDevice,
        },
      });
    }
    // The payload's own event_type picks the type; its other fields become the event's attributes.
    messages.push({
      topic: `${haPrefix}/event/${id}_access/config`,
      payload: {
        name: 'Access',
        unique_id: `${id}_access`,
        state_topic: topics.homeAssistantEvents('access', door.uuid),
        event_types: haEventTypes('access'),
        icon: 'mdi:badge-account',
        qos: 1,
        ...availability,
        device: doorDevice,
      },
    });
    messages.push({
      topic: `${haPrefix}/event/${id}_alarm/config`,
      payload: {
        name: 'Alarm',
        unique_id: `${id}_alarm`,
        state_topic: topics.homeAssistantEvents('alarm', door.uuid),
        event_types: haEventTypes('alarm'),
        icon: 'mdi:alarm-light',
        qos: 1,
        ...availability,
        device: doorDevice,
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
  for (const area of options.areas ?? []) {
    const occupancy = topics.areaOccupancy(area.id);
    messages.push({
      topic: `${haPrefix}/sensor/${agent}_area_${area.id}_occupancy/config`,
      payload: {
        name: `${area.name} occupancy`,
        unique_id: `${agent}_area_${area.id}_occupancy`,
        state_topic: occupancy,
        value_template: '{{ value_json.count }}',
        // The muster list (names, since when, which door) and the maximum as attributes.
        json_attributes_topic: occupancy,
        json_attributes_template: "{{ {'max': value_json.max, 'occupants': value_json.occupants} | tojson }}",
        unit_of_measurement: 'people',
        state_class: 'measurement',
        icon: 'mdi:account-group',
        qos: 1,
        ...availability,
        device,
      },
    });
  }
  const diagnostic = { entity_category: 'diagnostic', qos: 1, ...availability, device } as const;
  for (const { key, ...sensor } of HEALTH_SENSORS) {
    const health = { state_topic: topics.health, ...('json_attributes_template' in sensor ? { json_attributes_topic: topics.health } : {}) };
    messages.push({
      topic: `${haPrefix}/sensor/${agent}_${key}/config`,
      payload: withProps(sensor, { unique_id: `${agent}_${key}`, ...health, ...diagnostic }),
    });
  }
  messages.push({
    topic: `${haPrefix}/binary_sensor/${agent}_clock_trusted/config`,
    payload: {
      name: 'Clock trusted',
      unique_id: `${agent}_clock_trusted`,
      state_topic: topics.health,
      value_template: "{{ 'ON' if value_json.clock_trusted else 'OFF' }}",
      payload_on: 'ON',
      payload_off: 'OFF',
      icon: 'mdi:clock-check-outline',
      ...diagnostic,
    },
  });
  messages.push({
    topic: `${haPrefix}/event/${agent}_supervision/config`,
    payload: {
      name: 'Supervision',
      unique_id: `${agent}_supervision`,
      state_topic: topics.homeAssistantEvents('supervision', null),
      event_types: haEventTypes('supervision'),
      icon: 'mdi:shield-alert-outline',
      ...diagnostic,
    },
  });
  for (const message of messages) message.payload.origin = origin;
  // The agent's device first: Home Assistant links a door's device to its via_device only when that one exists.
  const rank = (message: DiscoveryMessage) => (message.payload.device === device ? 0 : 1);
  return messages.sort((a, b) => rank(a) - rank(b));
}
