import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { DoorOptions } from '../../src/door/options.js';
import { discoveryMessages, type DiscoveryMessage } from '../../src/mqtt/discovery.js';
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

const expectedDevice = {
  identifiers: expect.arrayContaining([expect.any(String)]),
  name: expect.any(String),
  manufacturer: expect.any(String),
  model: expect.any(String),
  sw_version: '1.2.3',
};

function expectedLock(uuid: string, name: string) {
  return {
    name,
    unique_id: `${AGENT}_${uuid}`,
    command_topic: `${P}/doors/${uuid}/set`,
    state_topic: `${P}/doors/${uuid}/state`,
    value_template: '{{ value_json.state }}',
    payload_lock: 'LOCK',
    payload_unlock: 'UNLOCK',
    payload_open: 'OPEN',
    state_locked: 'LOCKED',
    state_unlocked: 'UNLOCKED',
    json_attributes_topic: `${P}/doors/${uuid}/state`,
    ...AVAILABILITY,
    device: expectedDevice,
  };
}

/** Options of Home Assistant's MQTT lock and binary_sensor platforms (plus the device/availability blocks). */
const LOCK_OPTIONS = new Set([
  'availability',
  'availability_mode',
  'availability_template',
  'availability_topic',
  'code_format',
  'command_template',
  'command_topic',
  'device',
  'enabled_by_default',
  'encoding',
  'entity_category',
  'entity_picture',
  'icon',
  'json_attributes_template',
  'json_attributes_topic',
  'name',
  'object_id',
  'origin',
  'optimistic',
  'payload_available',
  'payload_lock',
  'payload_not_available',
  'payload_open',
  'payload_reset',
  'payload_unlock',
  'platform',
  'qos',
  'retain',
  'state_jammed',
  'state_locked',
  'state_locking',
  'state_open',
  'state_opening',
  'state_topic',
  'state_unlocked',
  'state_unlocking',
  'unique_id',
  'value_template',
  'default_entity_id',
]);
const BINARY_SENSOR_OPTIONS = new Set([
  'availability',
  'availability_mode',
  'availability_template',
  'availability_topic',
  'device',
  'device_class',
  'enabled_by_default',
  'encoding',
  'entity_category',
  'entity_picture',
  'expire_after',
  'force_update',
  'icon',
  'json_attributes_template',
  'json_attributes_topic',
  'name',
  'object_id',
  'origin',
  'off_delay',
  'payload_available',
  'payload_not_available',
  'payload_off',
  'payload_on',
  'platform',
  'qos',
  'state_topic',
  'unique_id',
  'value_template',
  'default_entity_id',
]);
const SWITCH_OPTIONS = new Set([
  'availability',
  'availability_mode',
  'availability_template',
  'availability_topic',
  'command_template',
  'command_topic',
  'device',
  'device_class',
  'enabled_by_default',
  'encoding',
  'entity_category',
  'entity_picture',
  'icon',
  'json_attributes_template',
  'json_attributes_topic',
  'name',
  'object_id',
  'origin',
  'optimistic',
  'payload_available',
  'payload_not_available',
  'payload_off',
  'payload_on',
  'platform',
  'qos',
  'retain',
  'state_off',
  'state_on',
  'state_topic',
  'unique_id',
  'value_template',
  'default_entity_id',
]);
const EVENT_OPTIONS = new Set([
  'availability',
  'availability_mode',
  'availability_template',
  'availability_topic',
  'device',
  'device_class',
  'enabled_by_default',
  'encoding',
  'entity_category',
  'entity_picture',
  'event_types',
  'icon',
  'json_attributes_template',
  'json_attributes_topic',
  'name',
  'object_id',
  'origin',
  'payload_available',
  'payload_not_available',
  'platform',
  'qos',
  'state_topic',
  'unique_id',
  'value_template',
  'default_entity_id',
]);
const SENSOR_OPTIONS = new Set([
  'availability',
  'availability_mode',
  'availability_template',
  'availability_topic',
  'device',
  'device_class',
  'enabled_by_default',
  'encoding',
  'entity_category',
  'entity_picture',
  'expire_after',
  'force_update',
  'icon',
  'json_attributes_template',
  'json_attributes_topic',
  'last_reset_value_template',
  'name',
  'object_id',
  'origin',
  'options',
  'payload_available',
  'payload_not_available',
  'platform',
  'qos',
  'state_class',
  'state_topic',
  'suggested_display_precision',
  'unique_id',
  'unit_of_measurement',
  'value_template',
  'default_entity_id',
]);
const OPTIONS_BY_COMPONENT: Record<string, Set<string>> = {
  lock: LOCK_OPTIONS,
  binary_sensor: BINARY_SENSOR_OPTIONS,
  switch: SWITCH_OPTIONS,
  event: EVENT_OPTIONS,
  sensor: SENSOR_OPTIONS,
};
/** Home Assistant's discovery `origin` block. */
const ORIGIN_OPTIONS = new Set(['name', 'sw_version', 'support_url']);
const DEVICE_OPTIONS = new Set([
  'configuration_url',
  'connections',
  'hw_version',
  'identifiers',
  'manufacturer',
  'model',
  'model_id',
  'name',
  'serial_number',
  'suggested_area',
  'sw_version',
  'via_device',
]);

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
function jinjaAvailable(): boolean {
  return spawnSync('python3', ['-c', 'import jinja2'], { stdio: 'ignore' }).status === 0;
}
function renderAll(cases: Array<{ template: string; payload?: unknown; variables?: Record<string, unknown> }>): string[] {
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
      expect(config).toMatchObject({ state_topic: `${P}/doors/${uuid}/ha/access`, qos: 1, ...AVAILABILITY, device: expectedDevice });
      expect(config.event_types).toEqual(expect.arrayContaining(['access_granted', 'access_denied', 'unlock_refused', 'granted_not_opened']));
      // The agent publishes the event_type itself: no template to go wrong, nothing to ignore.
      expect(config).not.toHaveProperty('value_template');
      expect(config).not.toHaveProperty('entity_category');
    }
  });

  it('describes a door without a contact as a lock with the MQTT topics of docs/mqtt.md', () => {
    expect(byTopic(`${HA}/lock/${AGENT}_${FRONT}/config`)).toMatchObject(expectedLock(FRONT, 'Front door'));
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
      device: expectedDevice,
    });
    expect(sensor.unique_id).toEqual(expect.any(String));
    expect(sensor.name).toMatch(/Back door/);
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
      device: expectedDevice,
    });
    expect(sensor.name).toMatch(/Side door/);
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
      device: expectedDevice,
    });
    expect(sensor.options).toEqual(expect.arrayContaining(['closed', 'holiday', 'waiting_for_first_person', 'suspended', 'unlocked', 'none']));
    expect(sensor.json_attributes_template).toContain('next_change');
    expect(sensor.name).toMatch(/Side door/);
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
        name: `${name} alarm`,
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
        device: expectedDevice,
      });
    }
  });

  it('gives a door the emergency input releases a safety binary_sensor on its state (emergency), and no other door one', () => {
    const all = messages(HA, false, {}, 'emergency: { pin: 26, doors: [Side door] }');
    const sensors = all.filter((m) => m.topic.endsWith('_emergency/config'));
    expect(sensors.map((m) => m.topic)).toEqual([`${HA}/binary_sensor/${AGENT}_${SIDE}_emergency/config`]);
    expect(sensors[0]!.payload).toMatchObject({
      name: 'Side door emergency release',
      unique_id: `${AGENT}_${SIDE}_emergency`,
      device_class: 'safety',
      state_topic: STATE(SIDE),
      payload_on: 'ON',
      payload_off: 'OFF',
      ...AVAILABILITY,
      device: expectedDevice,
    });
    for (const key of Object.keys(sensors[0]!.payload)) expect(BINARY_SENSOR_OPTIONS.has(key) || key === 'device', key).toBe(true);
    // Without an emergency section: none.
    expect(messages().filter((m) => m.topic.endsWith('_emergency/config'))).toEqual([]);
    if (!jinjaAvailable()) throw new Error('python3 with jinja2 is needed to render the templates: apt-get install python3-jinja2');
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

  it.skipIf(!jinjaAvailable())('renders the templates to what Home Assistant needs (Jinja2, python3)', () => {
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

  it('groups all entities of the agent under one device naming the agent', () => {
    const devices = messages().map((m) => JSON.stringify(m.payload.device));
    expect(new Set(devices).size).toBe(1);
    const device = messages()[0]?.payload.device as { identifiers: string[]; name: string };
    expect(device.identifiers.join(' ')).toContain(AGENT);
    expect(device.identifiers.length).toBeGreaterThan(0);
  });

  it('uses only options of the Home Assistant MQTT schema, with topic-safe object ids', () => {
    for (const { topic, payload } of [...messages(), ...messages(HA, true)]) {
      // <discovery_prefix>/<component>/<object_id>/config with object_id of [a-zA-Z0-9_-]
      const match = /^homeassistant\/(lock|binary_sensor|switch|event|sensor)\/[a-zA-Z0-9_-]+\/config$/.exec(topic);
      expect(match, topic).not.toBeNull();
      const allowed = OPTIONS_BY_COMPONENT[match![1]!]!;
      expect(
        Object.keys(payload).filter((k) => !allowed.has(k)),
        topic,
      ).toEqual([]);
      expect(
        Object.keys(payload.device as object).filter((k) => !DEVICE_OPTIONS.has(k)),
        topic,
      ).toEqual([]);
      expect(
        Object.keys(payload.origin as object).filter((k) => !ORIGIN_OPTIONS.has(k)),
        topic,
      ).toEqual([]);
    }
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

  it('gives the device a configuration_url only when mqtt.homeAssistant.configurationUrl is set', () => {
    for (const { payload } of messages()) expect(payload.device).not.toHaveProperty('configuration_url');
    for (const { payload } of messages(HA, false, { configurationUrl: 'https://door.example.org/' })) {
      expect(payload.device).toMatchObject({ configuration_url: 'https://door.example.org/' });
    }
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
    if (!jinjaAvailable()) throw new Error('python3 with jinja2 is needed to render the templates: apt-get install python3-jinja2');
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

  it.skipIf(!jinjaAvailable())('reads each diagnostic value from a health message (Jinja2, python3)', () => {
    const health = parseHealth(
      JSON.stringify({
        at: '2026-11-24T09:00:00.000Z',
        uptime_s: 3600,
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
    const fresh = { ...health, cache: { revision: null, age_s: null }, clock_trusted: false, event_loop_lag_p99_ms: null };
    const sensors = ['outbox_depth', 'cache_age', 'readers_online', 'event_loop_lag', 'uptime'].map((key) => byTopic(`${HA}/sensor/${AGENT}_${key}/config`));
    const clock = byTopic(`${HA}/binary_sensor/${AGENT}_clock_trusted/config`);
    const cases = [health, fresh].flatMap((payload) => [
      ...sensors.map((s) => ({ template: s.value_template as string, payload })),
      { template: clock.value_template as string, payload },
    ]);
    // Home Assistant takes 'None' as unknown.
    expect(renderAll(cases)).toEqual(['7', '125', '1', '3.5', '3600', 'ON', '7', 'None', '1', 'None', '3600', 'OFF']);
    const attributes = sensors.filter((s) => s.json_attributes_template);
    const rendered = renderAll(attributes.map((s) => ({ template: s.json_attributes_template as string, payload: health }))).map((r) => JSON.parse(r));
    expect(rendered).toEqual([{ revision: 42 }, { total: 2, per_door: { [FRONT]: true, [BACK]: false } }]);
  });
});
