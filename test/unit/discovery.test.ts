import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { DoorOptions } from '../../src/door/options.js';
import { configurationUrlOf, discoveryMessages, type DiscoveryMessage } from '../../src/mqtt/discovery.js';
import { parseHealth } from '../../src/protocol/health.js';
import { parseLockdownMessage } from '../../src/protocol/lockdown.js';
import { Topics } from '../../src/protocol/topics.js';

const FRONT = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const BACK = '0b7a1e55-3c2d-4e8f-9a10-22334455aabb';
const SIDE = '9d8c7b6a-5f4e-4d3c-8b2a-1a0b0c0d0e0f';
const AGENT = 'site-7_a';
const P = 'acme/doors-v1';
const HA = 'homeassistant';

/**
 * Doors as the real config parser produces them: Front door without a contact, Back door with one, Side door
 * with a tamper input and an unlock schedule (weekdays 8-17).
 */
function doors(extra = ''): DoorOptions[] {
  return parseConfig(
    `agent: { id: ${AGENT}, dataDir: /tmp/unused, timezone: Europe/Berlin }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: /tmp/unused-gpio }
doors:
  - uuid: ${FRONT}
    resourceId: 12
    name: Front door
    relay: { pin: 17 }
  - uuid: ${BACK}
    resourceId: 13
    name: Back door
    relay: { pin: 18 }
    contact: { pin: 22 }
  - uuid: ${SIDE}
    resourceId: 14
    name: Side door
    relay: { pin: 23 }
    tamper: { pin: 24 }
    unlockSchedule: [[], [[8, 17]], [[8, 17]], [[8, 17]], [[8, 17]], [[8, 17]], []]
${extra}
`,
    'test config',
  ).doors;
}

function messages(ha = HA, signed = false, more: { codeFormat?: string; configurationUrl?: string; projectUrl?: string } = {}, extra = ''): DiscoveryMessage[] {
  return discoveryMessages({ haPrefix: ha, topics: new Topics(P, AGENT), doors: doors(extra), version: '1.2.3', signed, ...more });
}

function byTopic(topic: string, signed = false): Record<string, unknown> {
  const all = messages(HA, signed);
  const found = all.find((m) => m.topic === topic);
  if (!found) throw new Error(`no discovery message on ${topic}; topics: ${all.map((m) => m.topic).join(', ')}`);
  return found.payload;
}

const STATE = (uuid: string) => `${P}/doors/${uuid}/state`;
const AVAILABILITY = {
  availability_topic: `${P}/agents/${AGENT}/status`,
  payload_available: 'online',
  payload_not_available: 'offline',
};
const LOCKDOWN_TOPIC = `${P}/agents/${AGENT}/lockdown`;
const HEALTH_TOPIC = `${P}/agents/${AGENT}/health`;
/** The agent's diagnostic entities: from the health message, and its supervision events. */
const AGENT_DIAGNOSTICS = [
  ...['outbox_depth', 'cache_age', 'readers_online', 'event_loop_lag', 'uptime'].map((key) => `${HA}/sensor/${AGENT}_${key}/config`),
  `${HA}/binary_sensor/${AGENT}_clock_trusted/config`,
  `${HA}/event/${AGENT}_supervision/config`,
];
const LOCKDOWN_STATE_TOPIC = `${P}/agents/${AGENT}/lockdown/state`;

/** The agent's own device: its health, lockdown, areas and supervision. */
const expectedDevice = {
  identifiers: [`door-agent_${AGENT}`],
  name: `door-agent ${AGENT}`,
  manufacturer: 'door-agent',
  model: 'door-agent controller',
  sw_version: '1.2.3',
};

/** A door's own device, linked to the agent's (via_device): the door can sit in an area of its own. */
function doorDevice(uuid: string, name: string) {
  return { identifiers: [`door-agent_${AGENT}_${uuid}`], name, manufacturer: 'door-agent', model: 'door-agent door', via_device: `door-agent_${AGENT}` };
}
const NAMES: Record<string, string> = { [FRONT]: 'Front door', [BACK]: 'Back door', [SIDE]: 'Side door' };

function expectedLock(uuid: string, name: string) {
  return {
    name: null, // the door's main feature: Home Assistant names it after the door's device
    unique_id: `${AGENT}_${uuid}`,
    command_topic: `${P}/doors/${uuid}/set`,
    state_topic: `${P}/doors/${uuid}/state`,
    value_template: "{{ value_json.get('ha_state') or value_json.state }}",
    payload_lock: 'LOCK',
    payload_unlock: 'UNLOCK',
    payload_open: 'OPEN',
    state_locked: 'LOCKED',
    state_unlocked: 'UNLOCKED',
    state_open: 'OPEN',
    state_jammed: 'JAMMED',
    state_locking: 'LOCKING',
    state_unlocking: 'UNLOCKING',
    state_opening: 'OPENING',
    json_attributes_topic: `${P}/doors/${uuid}/state`,
    ...AVAILABILITY,
    device: doorDevice(uuid, name),
  };
}

/*
 * Home Assistant's MQTT discovery schemas, written out as data from its source (home-assistant/core,
 * homeassistant/components/mqtt/; read from the schema-only copy openhab/openhab-addons keeps of it,
 * bundles/org.openhab.binding.homeassistant/src/main/python/homeassistant/components/mqtt/):
 * - config.py: MQTT_BASE_SCHEMA (qos, encoding, group), MQTT_RO_SCHEMA (+ state_topic required, value_template),
 *   MQTT_RW_SCHEMA (+ command_topic required, optimistic, retain, state_topic);
 * - schemas.py: MQTT_ENTITY_COMMON_SCHEMA (the availability options, device, entity_picture, origin,
 *   enabled_by_default, entity_category, icon, json_attributes_topic/template, object_id, unique_id; 2025.10 added
 *   default_entity_id in place of object_id), MQTT_ENTITY_DEVICE_INFO_SCHEMA (and validate_device_has_at_least_one_
 *   identifier), MQTT_ORIGIN_INFO_SCHEMA (name required);
 * - lock.py, binary_sensor.py, sensor.py (and validate_sensor_state_and_device_class_config), switch.py, event.py:
 *   each platform's own options (PLATFORM_SCHEMA_MODERN / _PLATFORM_SCHEMA_BASE), extra keys removed
 *   (DISCOVERY_SCHEMA: vol.REMOVE_EXTRA), so a misspelt key would be dropped without a word;
 * - const.py: the lock's state defaults (DEFAULT_STATE_LOCKED ... DEFAULT_STATE_JAMMED).
 */
const BASE_OPTIONS = ['qos', 'encoding', 'group'];
const RO_OPTIONS = [...BASE_OPTIONS, 'state_topic', 'value_template'];
const RW_OPTIONS = [...BASE_OPTIONS, 'command_topic', 'optimistic', 'retain', 'state_topic'];
const ENTITY_COMMON_OPTIONS = [
  'availability',
  'availability_mode',
  'availability_template',
  'availability_topic',
  'payload_available',
  'payload_not_available',
  'device',
  'entity_picture',
  'origin',
  'enabled_by_default',
  'entity_category',
  'icon',
  'json_attributes_topic',
  'json_attributes_template',
  'object_id',
  'default_entity_id',
  'unique_id',
];
/** The lock's state options and their names (lock.py, const.py); the agent gives each explicitly. */
const LOCK_STATE_OPTIONS = {
  state_jammed: 'JAMMED',
  state_locked: 'LOCKED',
  state_locking: 'LOCKING',
  state_open: 'OPEN',
  state_opening: 'OPENING',
  state_unlocked: 'UNLOCKED',
  state_unlocking: 'UNLOCKING',
};
const PLATFORMS: Record<string, { options: Set<string>; required: string[] }> = {
  lock: {
    options: new Set([
      ...RW_OPTIONS,
      ...ENTITY_COMMON_OPTIONS,
      'code_format',
      'command_template',
      'name',
      'payload_lock',
      'payload_unlock',
      'payload_open',
      'payload_reset',
      ...Object.keys(LOCK_STATE_OPTIONS),
      'value_template',
    ]),
    required: ['command_topic'],
  },
  binary_sensor: {
    options: new Set([
      ...RO_OPTIONS,
      ...ENTITY_COMMON_OPTIONS,
      'device_class',
      'expire_after',
      'force_update',
      'name',
      'off_delay',
      'payload_off',
      'payload_on',
    ]),
    required: ['state_topic'],
  },
  sensor: {
    options: new Set([
      ...RO_OPTIONS,
      ...ENTITY_COMMON_OPTIONS,
      'device_class',
      'expire_after',
      'force_update',
      'last_reset_value_template',
      'name',
      'options',
      'suggested_display_precision',
      'state_class',
      'unit_of_measurement',
    ]),
    required: ['state_topic'],
  },
  switch: {
    options: new Set([
      ...RW_OPTIONS,
      ...ENTITY_COMMON_OPTIONS,
      'command_template',
      'name',
      'payload_off',
      'payload_on',
      'state_off',
      'state_on',
      'value_template',
      'device_class',
    ]),
    required: ['command_topic'],
  },
  event: { options: new Set([...RO_OPTIONS, ...ENTITY_COMMON_OPTIONS, 'device_class', 'name', 'event_types']), required: ['state_topic', 'event_types'] },
};
/** MQTT_ENTITY_DEVICE_INFO_SCHEMA (schemas.py). */
const DEVICE_OPTIONS = new Set([
  'identifiers',
  'connections',
  'manufacturer',
  'model',
  'model_id',
  'name',
  'hw_version',
  'serial_number',
  'sw_version',
  'via_device',
  'suggested_area',
  'configuration_url',
]);
/** MQTT_ORIGIN_INFO_SCHEMA (schemas.py). */
const ORIGIN_OPTIONS = new Set(['name', 'sw_version', 'support_url']);
/** BinarySensorDeviceClass (homeassistant/components/binary_sensor/__init__.py). */
const BINARY_SENSOR_DEVICE_CLASSES = new Set(
  'battery battery_charging carbon_monoxide cold connectivity door garage_door gas heat light lock moisture motion moving occupancy opening plug power presence problem running safety smoke sound tamper update vibration window'.split(
    ' ',
  ),
);
/** The SensorDeviceClass members the agent may use (homeassistant/components/sensor/const.py): duration, enum, timestamp. */
const SENSOR_DEVICE_CLASSES = new Set(['duration', 'enum', 'timestamp']);
/** ENTITY_CATEGORIES_SCHEMA (homeassistant/helpers/entity.py). */
const ENTITY_CATEGORIES = new Set(['config', 'diagnostic']);

/**
 * Each discovery payload against Home Assistant's schema: only its platform's options, the required ones present,
 * the values' rules its validators enforce (a device with an identifier, a `configuration_url` of http(s), a name for
 * the origin, an enum sensor's `options` only with device_class enum and neither state_class nor unit, a timestamp
 * sensor with neither, a known device class and entity category). Returns what is wrong, empty when nothing.
 */
function schemaProblems(topic: string, payload: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const match = /^homeassistant\/(lock|binary_sensor|switch|event|sensor)\/[a-zA-Z0-9_-]+\/config$/.exec(topic);
  if (!match) return [`${topic}: not <prefix>/<component>/<object_id>/config with an object id of [a-zA-Z0-9_-]`];
  const component = match[1]!;
  const platform = PLATFORMS[component]!;
  for (const key of Object.keys(payload)) if (!platform.options.has(key)) problems.push(`${key}: not an option of ${component}`);
  for (const key of platform.required) if (payload[key] === undefined) problems.push(`${key}: required by ${component}`);
  const device = payload.device as Record<string, unknown> | undefined;
  if (!device) problems.push('device: missing (every entity of the agent belongs to a device)');
  else {
    for (const key of Object.keys(device)) if (!DEVICE_OPTIONS.has(key)) problems.push(`device.${key}: not a device option`);
    if (!Array.isArray(device.identifiers) || device.identifiers.length === 0) problems.push('device: no identifiers');
    if (device.configuration_url !== undefined && !/^https?:\/\/[^/]/.test(String(device.configuration_url)))
      problems.push('device.configuration_url: not http(s)');
    for (const key of ['name', 'model', 'manufacturer', 'via_device', 'sw_version']) {
      if (device[key] !== undefined && typeof device[key] !== 'string') problems.push(`device.${key}: not a string`);
    }
  }
  const origin = payload.origin as Record<string, unknown> | undefined;
  if (!origin || typeof origin.name !== 'string') problems.push('origin.name: required');
  else for (const key of Object.keys(origin)) if (!ORIGIN_OPTIONS.has(key)) problems.push(`origin.${key}: not an origin option`);
  if (payload.name !== undefined && payload.name !== null && typeof payload.name !== 'string') problems.push('name: not a string or null');
  if (payload.entity_category !== undefined && !ENTITY_CATEGORIES.has(String(payload.entity_category))) problems.push('entity_category: unknown');
  if (component === 'binary_sensor' && payload.device_class !== undefined && !BINARY_SENSOR_DEVICE_CLASSES.has(String(payload.device_class))) {
    problems.push(`device_class ${String(payload.device_class)}: not a binary sensor class`);
  }
  if (component === 'sensor') {
    if (payload.device_class !== undefined && !SENSOR_DEVICE_CLASSES.has(String(payload.device_class))) problems.push('device_class: unknown');
    if (payload.options !== undefined) {
      if (payload.device_class !== 'enum') problems.push('options: only with device_class enum');
      if (payload.state_class !== undefined || payload.unit_of_measurement !== undefined) problems.push('options: not with state_class or a unit');
      if (!Array.isArray(payload.options) || payload.options.length === 0) problems.push('options: an empty list');
    }
    if (payload.device_class === 'timestamp' && (payload.state_class !== undefined || payload.unit_of_measurement !== undefined)) {
      problems.push('a timestamp sensor has neither state_class nor unit');
    }
    if (payload.last_reset_value_template !== undefined && payload.state_class !== 'total')
      problems.push('last_reset_value_template: only with state_class total');
  }
  if (component === 'event' && (!Array.isArray(payload.event_types) || payload.event_types.length === 0)) problems.push('event_types: an empty list');
  if (component === 'lock') {
    for (const [key, name] of Object.entries(LOCK_STATE_OPTIONS)) if (payload[key] !== name) problems.push(`${key}: not given as ${name}`);
  }
  return problems.map((p) => `${topic}: ${p}`);
}

function hasUndefined(value: unknown): boolean {
  if (value === undefined) return true;
  if (Array.isArray(value)) return value.some(hasUndefined);
  if (value !== null && typeof value === 'object') return Object.values(value).some(hasUndefined);
  return false;
}

/**
 * Renders Home Assistant templates with Jinja2's immutable sandbox (what Home Assistant's template environment
 * builds on), `value_json` being the parsed payload. The test using it is skipped without python3 and jinja2.
 */
/** Home Assistant renders its templates with Jinja2: so do these tests (python3 with python3-jinja2). */
function requireJinja(): void {
  if (spawnSync('python3', ['-c', 'import jinja2'], { stdio: 'ignore' }).status !== 0)
    throw new Error(
      'these tests render the templates with Jinja2, as Home Assistant does: sudo apt-get install -y python3-jinja2 (npm test installs it as root)',
    );
}
function renderAll(cases: Array<{ template: string; payload?: unknown; variables?: Record<string, unknown> }>): string[] {
  requireJinja();
  const script = [
    'import json, sys',
    'from jinja2.sandbox import ImmutableSandboxedEnvironment',
    'env = ImmutableSandboxedEnvironment()',
    'cases = json.load(sys.stdin)',
    'print(json.dumps([env.from_string(c["template"]).render(value_json=c.get("payload"), **c.get("variables", {})) for c in cases]))',
  ].join('\n');
  const run = spawnSync('python3', ['-c', script], { input: JSON.stringify(cases), encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`jinja2 failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as string[];
}

/** State payloads of the wire contract: a door in lockdown with tamper active and a suspended schedule; a plain one; an older agent's. */
const STATE_LOCKDOWN = {
  state: 'LOCKED',
  relock_at: null,
  door: 'CLOSED',
  changed_at: '2026-11-24T09:00:00.000Z',
  cause: 'lockdown',
  lockdown: true,
  tamper: 'ON',
  schedule: { state: 'suspended', next_change: '2026-11-24T17:00:00.000Z' },
  emergency: false,
};
const STATE_PLAIN = {
  state: 'UNLOCKED',
  relock_at: '2026-11-24T09:00:08.120Z',
  door: null,
  changed_at: '2026-11-24T09:00:03.120Z',
  cause: 'remote command r1',
  lockdown: false,
  tamper: null,
  schedule: null,
  emergency: false,
};
const STATE_OLD_AGENT = { state: 'LOCKED', relock_at: null, door: null, changed_at: '2026-11-24T09:00:00.000Z', cause: 'boot' };

describe('Home Assistant discovery', () => {
  it('publishes per door a lock, access and alarm events, contact, tamper and schedule entities only where configured, the agent lockdown and diagnostics', () => {
    const topics = messages()
      .map((m) => m.topic)
      .sort();
    expect(topics).toEqual(
      [
        `${HA}/lock/${AGENT}_${FRONT}/config`,
        `${HA}/event/${AGENT}_${FRONT}_alarm/config`,
        `${HA}/event/${AGENT}_${FRONT}_access/config`,
        `${HA}/lock/${AGENT}_${BACK}/config`,
        `${HA}/event/${AGENT}_${BACK}_access/config`,
        `${HA}/binary_sensor/${AGENT}_${BACK}_door/config`,
        `${HA}/event/${AGENT}_${BACK}_alarm/config`,
        `${HA}/lock/${AGENT}_${SIDE}/config`,
        `${HA}/binary_sensor/${AGENT}_${SIDE}_tamper/config`,
        `${HA}/sensor/${AGENT}_${SIDE}_schedule/config`,
        `${HA}/event/${AGENT}_${SIDE}_alarm/config`,
        `${HA}/event/${AGENT}_${SIDE}_access/config`,
        `${HA}/switch/${AGENT}_lockdown/config`,
        ...AGENT_DIAGNOSTICS,
      ].sort(),
    );
  });

  it('gives every door an access event entity on its Home Assistant event topic: decisions and refused remote unlocks', () => {
    for (const uuid of [FRONT, BACK, SIDE]) {
      const config = byTopic(`${HA}/event/${AGENT}_${uuid}_access/config`);
      expect(config).toMatchObject({ state_topic: `${P}/doors/${uuid}/ha/access`, qos: 1, ...AVAILABILITY, device: doorDevice(uuid, NAMES[uuid]!) });
      expect(config.event_types).toEqual(expect.arrayContaining(['access_granted', 'access_denied', 'unlock_refused', 'granted_not_opened']));
      // The agent publishes the event_type itself: no template to go wrong, nothing to ignore.
      expect(config).not.toHaveProperty('value_template');
      expect(config).not.toHaveProperty('entity_category');
    }
  });

  it('describes a door without a contact as a lock with the MQTT topics of docs/mqtt.md', () => {
    expect(byTopic(`${HA}/lock/${AGENT}_${FRONT}/config`)).toMatchObject(expectedLock(FRONT, 'Front door'));
  });

  it("shows the lock's ha_state (LOCKED, UNLOCKED, OPEN, JAMMED), each one of the state names Home Assistant was given (Jinja2, python3)", () => {
    const lock = byTopic(`${HA}/lock/${AGENT}_${BACK}/config`);
    const payloads = ['LOCKED', 'UNLOCKED', 'OPEN', 'JAMMED'].map((ha) => Object.assign({}, STATE_PLAIN, { ha_state: ha, door: 'OPEN' }));
    const rendered = renderAll([...payloads, STATE_OLD_AGENT].map((payload) => ({ template: lock.value_template as string, payload })));
    expect(rendered).toEqual(['LOCKED', 'UNLOCKED', 'OPEN', 'JAMMED', 'LOCKED']);
    const names = new Set(
      Object.entries(lock)
        .filter(([key]) => key.startsWith('state_') && key !== 'state_topic')
        .map(([, name]) => name),
    );
    for (const state of rendered) expect(names.has(state), state).toBe(true);
  });

  it("shows the agent's start as a timestamp sensor (started_at of the health message), not a counter", () => {
    expect(byTopic(`${HA}/sensor/${AGENT}_uptime/config`)).toEqual(
      expect.objectContaining({ name: 'Started', device_class: 'timestamp', state_topic: HEALTH_TOPIC, value_template: "{{ value_json.get('started_at') }}" }),
    );
    expect(byTopic(`${HA}/sensor/${AGENT}_uptime/config`)).not.toHaveProperty('unit_of_measurement');
    expect(byTopic(`${HA}/sensor/${AGENT}_uptime/config`)).not.toHaveProperty('state_class');
  });

  it('describes a door with a contact as a lock too', () => {
    expect(byTopic(`${HA}/lock/${AGENT}_${BACK}/config`)).toMatchObject(expectedLock(BACK, 'Back door'));
  });

  it('gives the lock lockdown, tamper, schedule, cause and relock_at of the state topic as attributes', () => {
    const lock = byTopic(`${HA}/lock/${AGENT}_${SIDE}/config`);
    expect(lock).toMatchObject(expectedLock(SIDE, 'Side door'));
    const template = lock.json_attributes_template as string;
    for (const field of ['lockdown', 'tamper', 'schedule', 'cause', 'relock_at']) expect(template).toContain(`'${field}'`);
    expect(template).toMatch(/\|\s*tojson\s*}}$/);
  });

  it('describes the contact as a door binary_sensor reading the door field of the state topic', () => {
    const sensor = byTopic(`${HA}/binary_sensor/${AGENT}_${BACK}_door/config`);
    expect(sensor).toMatchObject({
      device_class: 'door',
      state_topic: STATE(BACK),
      value_template: '{{ value_json.door }}',
      payload_on: 'OPEN',
      payload_off: 'CLOSED',
      ...AVAILABILITY,
      device: doorDevice(BACK, 'Back door'),
    });
    expect(sensor.unique_id).toEqual(expect.any(String));
    expect(sensor.name).toBe('Contact'); // Home Assistant shows: Back door Contact
  });

  it('has no contact binary_sensor for a door without a contact', () => {
    expect(messages().filter((m) => m.topic.includes('binary_sensor') && m.topic.includes(FRONT))).toEqual([]);
    expect(messages().some((m) => m.topic.includes(`${SIDE}_door`))).toBe(false);
  });

  it('describes a tamper input as a tamper binary_sensor reading the tamper field (ON/OFF) of the state topic', () => {
    const sensor = byTopic(`${HA}/binary_sensor/${AGENT}_${SIDE}_tamper/config`);
    expect(sensor).toMatchObject({
      unique_id: `${AGENT}_${SIDE}_tamper`,
      device_class: 'tamper',
      state_topic: STATE(SIDE),
      value_template: '{{ value_json.tamper }}',
      payload_on: 'ON',
      payload_off: 'OFF',
      ...AVAILABILITY,
      device: doorDevice(SIDE, 'Side door'),
    });
    expect(sensor.name).toBe('Tamper');
    expect(
      messages()
        .filter((m) => m.topic.includes('_tamper/'))
        .map((m) => m.topic),
    ).toEqual([`${HA}/binary_sensor/${AGENT}_${SIDE}_tamper/config`]);
  });

  it('describes an unlock schedule as an enum sensor of schedule.state (none without one) with next_change as attribute', () => {
    const sensor = byTopic(`${HA}/sensor/${AGENT}_${SIDE}_schedule/config`);
    expect(sensor).toMatchObject({
      unique_id: `${AGENT}_${SIDE}_schedule`,
      state_topic: STATE(SIDE),
      value_template: "{{ value_json.schedule.state if value_json.schedule else 'none' }}",
      json_attributes_topic: STATE(SIDE),
      device_class: 'enum',
      ...AVAILABILITY,
      device: doorDevice(SIDE, 'Side door'),
    });
    expect(sensor.options).toEqual(expect.arrayContaining(['closed', 'holiday', 'waiting_for_first_person', 'suspended', 'unlocked', 'none']));
    expect(sensor.json_attributes_template).toContain('next_change');
    expect(sensor.name).toBe('Unlock schedule');
    expect(
      messages()
        .filter((m) => m.topic.includes('/sensor/') && m.topic.includes('_schedule/'))
        .map((m) => m.topic),
    ).toEqual([`${HA}/sensor/${AGENT}_${SIDE}_schedule/config`]);
  });

  it('gives every door an alarm event entity with tamper and its clearing as two event types', () => {
    for (const [uuid, name] of [
      [FRONT, 'Front door'],
      [BACK, 'Back door'],
      [SIDE, 'Side door'],
    ] as const) {
      expect(byTopic(`${HA}/event/${AGENT}_${uuid}_alarm/config`)).toMatchObject({
        name: 'Alarm',
        unique_id: `${AGENT}_${uuid}_alarm`,
        state_topic: `${P}/doors/${uuid}/ha/alarm`,
        event_types: [
          'duress',
          'tamper',
          'tamper_cleared',
          'door_forced',
          'door_held_open',
          'emergency_release',
          'emergency_cleared',
          'emergency_wiring',
          'emergency_wiring_cleared',
        ],
        qos: 1,
        ...AVAILABILITY,
        device: doorDevice(uuid, name),
      });
    }
  });

  it('gives a door the emergency input releases a safety binary_sensor on its state (emergency), and no other door one', () => {
    const all = messages(HA, false, {}, 'emergency: { pin: 26, doors: [Side door] }');
    const sensors = all.filter((m) => m.topic.endsWith('_emergency/config'));
    expect(sensors.map((m) => m.topic)).toEqual([`${HA}/binary_sensor/${AGENT}_${SIDE}_emergency/config`]);
    expect(sensors[0]!.payload).toMatchObject({
      name: 'Emergency release',
      unique_id: `${AGENT}_${SIDE}_emergency`,
      device_class: 'safety',
      state_topic: STATE(SIDE),
      payload_on: 'ON',
      payload_off: 'OFF',
      ...AVAILABILITY,
      device: doorDevice(SIDE, 'Side door'),
    });
    expect(schemaProblems(sensors[0]!.topic, sensors[0]!.payload)).toEqual([]);
    // Without an emergency section: none.
    expect(messages().filter((m) => m.topic.endsWith('_emergency/config'))).toEqual([]);
    const template = sensors[0]!.payload.value_template as string;
    const rendered = renderAll([
      { template, payload: { ...STATE_PLAIN, cause: 'emergency release', emergency: true } },
      { template, payload: STATE_PLAIN },
      { template, payload: STATE_OLD_AGENT },
    ]);
    expect(rendered).toEqual(['ON', 'OFF', 'OFF']);
  });

  it('offers the agent lockdown as a retained switch when commands are not signed, with payloads the agent accepts', () => {
    const sw = byTopic(`${HA}/switch/${AGENT}_lockdown/config`);
    expect(sw).toMatchObject({
      name: 'Lockdown',
      unique_id: `${AGENT}_lockdown`,
      command_topic: LOCKDOWN_TOPIC,
      retain: true,
      state_topic: LOCKDOWN_STATE_TOPIC,
      value_template: "{{ 'ON' if value_json.lockdown else 'OFF' }}",
      state_on: 'ON',
      state_off: 'OFF',
      qos: 1,
      icon: 'mdi:shield-lock',
      ...AVAILABILITY,
      device: expectedDevice,
    });
    expect(JSON.parse(sw.payload_on as string)).toEqual({ lockdown: true, by: 'Home Assistant' });
    expect(JSON.parse(sw.payload_off as string)).toEqual({ lockdown: false, by: 'Home Assistant' });
    const scope = { kind: 'agent', id: AGENT } as const;
    expect(parseLockdownMessage(scope, Buffer.from(sw.payload_on as string), null)).toEqual({
      kind: 'set',
      body: { lockdown: true, by: 'Home Assistant' },
      issuedAt: null,
    });
    expect(parseLockdownMessage(scope, Buffer.from(sw.payload_off as string), null)).toEqual({
      kind: 'set',
      body: { lockdown: false, by: 'Home Assistant' },
      issuedAt: null,
    });
  });

  it('shows the lockdown read-only when commands are signed: a binary_sensor, and no command topic for lockdown anywhere', () => {
    const all = messages(HA, true);
    expect(all.some((m) => m.topic.includes('/switch/'))).toBe(false);
    const sensor = byTopic(`${HA}/binary_sensor/${AGENT}_lockdown/config`, true);
    expect(sensor).toMatchObject({
      name: 'Lockdown',
      unique_id: `${AGENT}_lockdown`,
      state_topic: LOCKDOWN_STATE_TOPIC,
      value_template: "{{ 'ON' if value_json.lockdown else 'OFF' }}",
      payload_on: 'ON',
      payload_off: 'OFF',
      ...AVAILABILITY,
      device: expectedDevice,
    });
    expect(sensor).not.toHaveProperty('command_topic');
    for (const { topic, payload } of all) {
      expect(JSON.stringify(payload), topic).not.toContain('/lockdown"');
      if ('command_topic' in payload) expect(payload.command_topic, topic).toMatch(/\/doors\/[^/]+\/set$/);
    }
  });

  it('differs between signed and unsigned only in the lockdown entity', () => {
    const notLockdown = (m: DiscoveryMessage) => !m.topic.includes('_lockdown/');
    expect(messages(HA, true).filter(notLockdown)).toEqual(messages(HA, false).filter(notLockdown));
  });

  it('renders the templates to what Home Assistant needs (Jinja2, python3)', () => {
    const lock = byTopic(`${HA}/lock/${AGENT}_${SIDE}/config`);
    const tamper = byTopic(`${HA}/binary_sensor/${AGENT}_${SIDE}_tamper/config`);
    const schedule = byTopic(`${HA}/sensor/${AGENT}_${SIDE}_schedule/config`);
    const sw = byTopic(`${HA}/switch/${AGENT}_lockdown/config`);
    const sensor = byTopic(`${HA}/binary_sensor/${AGENT}_lockdown/config`, true);
    const states = [STATE_LOCKDOWN, STATE_PLAIN, STATE_OLD_AGENT];
    const lockdownStates = [
      { lockdown: true, by: 'Home Assistant', reason: null, since: '2026-11-24T09:00:00.000Z' },
      { lockdown: false, by: null, reason: null, since: null },
    ];
    const cases = [
      ...states.map((payload) => ({ template: lock.value_template as string, payload })),
      ...states.map((payload) => ({ template: lock.json_attributes_template as string, payload })),
      ...states.map((payload) => ({ template: tamper.value_template as string, payload })),
      ...states.map((payload) => ({ template: schedule.value_template as string, payload })),
      ...states.map((payload) => ({ template: schedule.json_attributes_template as string, payload })),
      ...lockdownStates.map((payload) => ({ template: sw.value_template as string, payload })),
      ...lockdownStates.map((payload) => ({ template: sensor.value_template as string, payload })),
    ];
    const [l1, l2, l3, a1, a2, a3, t1, t2, t3, s1, s2, s3, n1, n2, n3, sw1, sw2, bs1, bs2] = renderAll(cases);
    // These states carry no ha_state (an older agent's): the relay's state.
    expect([l1, l2, l3]).toEqual(['LOCKED', 'UNLOCKED', 'LOCKED']);
    expect(JSON.parse(a1!)).toEqual({ lockdown: true, tamper: 'ON', schedule: STATE_LOCKDOWN.schedule, emergency: false, cause: 'lockdown', relock_at: null });
    expect(JSON.parse(a2!)).toEqual({
      lockdown: false,
      tamper: null,
      schedule: null,
      emergency: false,
      cause: 'remote command r1',
      relock_at: STATE_PLAIN.relock_at,
    });
    // An older agent's state (no lockdown, tamper, schedule, emergency) still gives a JSON object, not a template error.
    expect(JSON.parse(a3!)).toEqual({ lockdown: null, tamper: null, schedule: null, emergency: null, cause: 'boot', relock_at: null });
    expect([t1, t2, t3]).toEqual(['ON', 'None', '']); // Home Assistant: 'None' is unknown, '' is ignored
    expect([s1, s2, s3]).toEqual(['suspended', 'none', 'none']);
    expect(schedule.options).toEqual(expect.arrayContaining([s1, s2]));
    expect([n1, n2, n3].map((n) => JSON.parse(n!))).toEqual([{ next_change: '2026-11-24T17:00:00.000Z' }, { next_change: null }, { next_change: null }]);
    expect([sw1, sw2]).toEqual([sw.state_on, sw.state_off]);
    expect([bs1, bs2]).toEqual([sensor.payload_on, sensor.payload_off]);
  });

  it('uses the configured Home Assistant prefix', () => {
    expect(messages('ha-custom').every((m) => m.topic.startsWith('ha-custom/'))).toBe(true);
    expect(messages('ha-custom', true).every((m) => m.topic.startsWith('ha-custom/'))).toBe(true);
  });

  it('gives every entity a distinct unique_id and discovery topic', () => {
    for (const signed of [false, true]) {
      const all = messages(HA, signed);
      const ids = all.map((m) => m.payload.unique_id);
      expect(new Set(ids).size).toBe(all.length);
      expect(new Set(all.map((m) => m.topic)).size).toBe(all.length);
    }
  });

  it('puts each door on a device of its own, linked to the agent by via_device; the agent keeps its own device; a distinct model per kind', () => {
    const all = messages();
    const devices = new Map(all.map((m) => [JSON.stringify(m.payload.device), m.payload.device as Record<string, unknown>]));
    expect([...devices.values()]).toEqual(
      expect.arrayContaining([expectedDevice, doorDevice(FRONT, 'Front door'), doorDevice(BACK, 'Back door'), doorDevice(SIDE, 'Side door')]),
    );
    expect(devices.size).toBe(4);
    for (const uuid of [FRONT, BACK, SIDE]) {
      const own = all.filter((m) => m.topic.includes(uuid));
      expect(own.length).toBeGreaterThanOrEqual(3); // lock, access, alarm
      for (const { topic, payload } of own) expect(payload.device, topic).toEqual(doorDevice(uuid, NAMES[uuid]!));
    }
    for (const { topic, payload } of all.filter((m) => !/[0-9a-f]{8}-[0-9a-f]{4}/.test(m.topic))) expect(payload.device, topic).toEqual(expectedDevice);
    // The agent's device is announced first: Home Assistant links a door to its via_device only once that exists.
    const kinds = all.map((m) => (m.payload.device as { model: string }).model);
    expect(kinds.indexOf('door-agent door')).toBeGreaterThan(kinds.lastIndexOf('door-agent controller'));
  });

  it("matches Home Assistant's MQTT schemas key by key for every payload: lock, sensor, binary_sensor, switch, event, device, origin", () => {
    const variants = [
      messages(),
      messages(HA, true),
      messages(HA, false, { codeFormat: '^\\d{4,}$', configurationUrl: 'https://svc.example.org/console', projectUrl: 'https://example.org/p' }),
      messages(HA, false, {}, 'emergency: { pin: 26, doors: [Side door] }'),
      discoveryMessages({ haPrefix: HA, topics: new Topics(P, AGENT), doors: doors(), version: '1.2.3', signed: false, areas: [{ id: 'lab', name: 'Lab' }] }),
    ];
    const problems = variants.flat().flatMap(({ topic, payload }) => schemaProblems(topic, payload));
    expect(problems).toEqual([]);
    // The checker itself finds what it is for.
    const lock = byTopic(`${HA}/lock/${AGENT}_${FRONT}/config`);
    expect(schemaProblems(`${HA}/lock/x/config`, Object.assign({}, lock, { state_jamed: 'JAMMED', state_jammed: undefined }))).toEqual([
      `${HA}/lock/x/config: state_jamed: not an option of lock`,
      `${HA}/lock/x/config: state_jammed: not given as JAMMED`,
    ]);
    const uptime = byTopic(`${HA}/sensor/${AGENT}_uptime/config`);
    expect(schemaProblems(`${HA}/sensor/x/config`, Object.assign({}, uptime, { unit_of_measurement: 's' }))).toEqual([
      `${HA}/sensor/x/config: a timestamp sensor has neither state_class nor unit`,
    ]);
    expect(schemaProblems(`${HA}/sensor/x/config`, Object.assign({}, uptime, { device: { name: 'x' } }))).toEqual([
      `${HA}/sensor/x/config: device: no identifiers`,
    ]);
  });

  it('produces JSON-serializable payloads without undefined values that survive a round trip', () => {
    for (const { payload } of [...messages(), ...messages(HA, true)]) {
      expect(hasUndefined(payload)).toBe(false);
      expect(JSON.parse(JSON.stringify(payload))).toEqual(payload);
    }
  });

  it('publishes only the agent diagnostics, no lockdown entity, for an agent without doors', () => {
    for (const signed of [false, true]) {
      const topics = discoveryMessages({ haPrefix: HA, topics: new Topics(P, AGENT), doors: [], version: '1', signed }).map((m) => m.topic);
      expect(topics.sort()).toEqual([...AGENT_DIAGNOSTICS].sort());
    }
  });

  it('names its origin in every message (name, sw_version, support_url when package.json has one)', () => {
    for (const { topic, payload } of messages()) expect(payload.origin, topic).toEqual({ name: 'door-agent', sw_version: '1.2.3' });
    for (const { topic, payload } of messages(HA, false, { projectUrl: 'https://example.org/door-agent' })) {
      expect(payload.origin, topic).toEqual({ name: 'door-agent', sw_version: '1.2.3', support_url: 'https://example.org/door-agent' });
    }
  });

  it("gives every device a configuration_url: mqtt.homeAssistant.configurationUrl, else the service's console, else none", () => {
    for (const { payload } of messages()) expect(payload.device).not.toHaveProperty('configuration_url');
    for (const { payload } of messages(HA, false, { configurationUrl: 'https://door.example.org/' })) {
      expect(payload.device).toMatchObject({ configuration_url: 'https://door.example.org/' });
    }
    expect(configurationUrlOf(undefined, 'https://svc.example.org')).toBe('https://svc.example.org/console');
    expect(configurationUrlOf(undefined, 'https://svc.example.org/')).toBe('https://svc.example.org/console');
    expect(configurationUrlOf(undefined, 'http://10.0.0.5:8080/doors/')).toBe('http://10.0.0.5:8080/doors/console');
    expect(configurationUrlOf('https://door.example.org/', 'https://svc.example.org')).toBe('https://door.example.org/');
    expect(configurationUrlOf(undefined, null)).toBeUndefined();
    expect(configurationUrlOf(undefined, undefined)).toBeUndefined();
  });

  it('asks Home Assistant for a code (code_format) and sends it (command_template) only with a code file', () => {
    for (const { payload } of messages().filter((m) => m.topic.includes('/lock/'))) {
      expect(payload).not.toHaveProperty('code_format');
      expect(payload).not.toHaveProperty('command_template');
    }
    const withCode = messages(HA, false, { codeFormat: '^\\d{4,}$' });
    const locks = withCode.filter((m) => m.topic.includes('/lock/'));
    expect(locks).toHaveLength(3);
    for (const { payload } of locks) {
      expect(payload).toMatchObject({ code_format: '^\\d{4,}$', command_template: expect.stringContaining('code'), payload_unlock: 'UNLOCK' });
    }
    // Only the locks take a code.
    expect(withCode.filter((m) => 'code_format' in m.payload)).toHaveLength(3);
    const template = locks[0]!.payload.command_template as string;
    const rendered = renderAll([
      { template, variables: { value: 'UNLOCK', code: '1234' } },
      { template, variables: { value: 'OPEN', code: 'a"b\\c</x>' } },
      { template, variables: { value: 'LOCK', code: null } },
    ]).map((r) => JSON.parse(r));
    expect(rendered).toEqual([
      { action: 'UNLOCK', code: '1234' },
      { action: 'OPEN', code: 'a"b\\c</x>' },
      { action: 'LOCK', code: null },
    ]);
  });

  it('puts the agent diagnostics under entity_category diagnostic, on the health topic and the supervision events', () => {
    const diagnostic = messages().filter((m) => m.payload.entity_category === 'diagnostic');
    expect(diagnostic.map((m) => m.topic).sort()).toEqual([...AGENT_DIAGNOSTICS].sort());
    for (const { topic, payload } of diagnostic) {
      expect(payload, topic).toMatchObject({ qos: 1, ...AVAILABILITY, device: expectedDevice });
      if (!topic.includes('/event/')) expect(payload.state_topic, topic).toBe(HEALTH_TOPIC);
    }
    expect(byTopic(`${HA}/event/${AGENT}_supervision/config`)).toMatchObject({
      name: 'Supervision',
      state_topic: `${P}/agents/${AGENT}/ha/supervision`,
      event_types: expect.arrayContaining(['power_lost', 'power_restored', 'link_lost', 'link_restored', 'cache_too_old', 'config_changed']),
    });
    expect(byTopic(`${HA}/binary_sensor/${AGENT}_clock_trusted/config`)).toMatchObject({ payload_on: 'ON', payload_off: 'OFF' });
  });

  it('reads each diagnostic value from a health message (Jinja2, python3)', () => {
    const health = parseHealth(
      JSON.stringify({
        at: '2026-11-24T09:00:00.000Z',
        uptime_s: 3600,
        started_at: '2026-11-24T08:00:00.000Z',
        version: '1.2.3',
        outbox_depth: 7,
        cache: { revision: 42, age_s: 125 },
        readers: { online: 1, total: 2, per_door: { [FRONT]: true, [BACK]: false } },
        clock_trusted: true,
        doors: [],
        memory: { rss: 50_000_000, heap_used: 20_000_000 },
        event_loop_lag_p99_ms: 3.5,
      }),
    );
    // And an agent from before started_at.
    const fresh = { ...health, started_at: undefined, cache: { revision: null, age_s: null }, clock_trusted: false, event_loop_lag_p99_ms: null };
    const sensors = ['outbox_depth', 'cache_age', 'readers_online', 'event_loop_lag', 'uptime'].map((key) => byTopic(`${HA}/sensor/${AGENT}_${key}/config`));
    const clock = byTopic(`${HA}/binary_sensor/${AGENT}_clock_trusted/config`);
    const cases = [health, fresh].flatMap((payload) => [
      ...sensors.map((s) => ({ template: s.value_template as string, payload })),
      { template: clock.value_template as string, payload },
    ]);
    // Home Assistant takes 'None' as unknown.
    expect(renderAll(cases)).toEqual(['7', '125', '1', '3.5', '2026-11-24T08:00:00.000Z', 'ON', '7', 'None', '1', 'None', 'None', 'OFF']);
    const attributes = sensors.filter((s) => s.json_attributes_template);
    const rendered = renderAll(attributes.map((s) => ({ template: s.json_attributes_template as string, payload: health }))).map((r) => JSON.parse(r));
    expect(rendered).toEqual([{ revision: 42 }, { total: 2, per_door: { [FRONT]: true, [BACK]: false } }]);
  });
});
