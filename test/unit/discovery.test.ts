import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { DoorOptions } from '../../src/door/options.js';
import { discoveryMessages, type DiscoveryMessage } from '../../src/mqtt/discovery.js';
import { Topics } from '../../src/protocol/topics.js';

const FRONT = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const BACK = '0b7a1e55-3c2d-4e8f-9a10-22334455aabb';
const AGENT = 'site-7_a';
const P = 'acme/doors-v1';
const HA = 'homeassistant';

/** Doors as the real config parser produces them: Front door without a contact, Back door with one. */
function doors(): DoorOptions[] {
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
`,
    'test config',
  ).doors;
}

function messages(ha = HA): DiscoveryMessage[] {
  return discoveryMessages({ haPrefix: ha, topics: new Topics(P, AGENT), doors: doors(), version: '1.2.3' });
}

function byTopic(topic: string): Record<string, unknown> {
  const found = messages().find((m) => m.topic === topic);
  if (!found) throw new Error(`no discovery message on ${topic}; topics: ${messages().map((m) => m.topic).join(', ')}`);
  return found.payload;
}

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
    availability_topic: `${P}/agents/${AGENT}/status`,
    payload_available: 'online',
    payload_not_available: 'offline',
    device: expectedDevice,
  };
}

/** Options of Home Assistant's MQTT lock and binary_sensor platforms (plus the device/availability blocks). */
const LOCK_OPTIONS = new Set([
  'availability', 'availability_mode', 'availability_template', 'availability_topic', 'code_format', 'command_template',
  'command_topic', 'device', 'enabled_by_default', 'encoding', 'entity_category', 'entity_picture', 'icon',
  'json_attributes_template', 'json_attributes_topic', 'name', 'object_id', 'optimistic', 'payload_available',
  'payload_lock', 'payload_not_available', 'payload_open', 'payload_reset', 'payload_unlock', 'platform', 'qos',
  'retain', 'state_jammed', 'state_locked', 'state_locking', 'state_open', 'state_opening', 'state_topic',
  'state_unlocked', 'state_unlocking', 'unique_id', 'value_template', 'default_entity_id',
]);
const BINARY_SENSOR_OPTIONS = new Set([
  'availability', 'availability_mode', 'availability_template', 'availability_topic', 'device', 'device_class',
  'enabled_by_default', 'encoding', 'entity_category', 'entity_picture', 'expire_after', 'force_update', 'icon',
  'json_attributes_template', 'json_attributes_topic', 'name', 'object_id', 'off_delay', 'payload_available',
  'payload_not_available', 'payload_off', 'payload_on', 'platform', 'qos', 'state_topic', 'unique_id', 'value_template',
  'default_entity_id',
]);
const DEVICE_OPTIONS = new Set([
  'configuration_url', 'connections', 'hw_version', 'identifiers', 'manufacturer', 'model', 'model_id', 'name',
  'serial_number', 'suggested_area', 'sw_version', 'via_device',
]);

function hasUndefined(value: unknown): boolean {
  if (value === undefined) return true;
  if (Array.isArray(value)) return value.some(hasUndefined);
  if (value !== null && typeof value === 'object') return Object.values(value).some(hasUndefined);
  return false;
}

describe('Home Assistant discovery', () => {
  it('publishes a lock for every door and a binary_sensor only for the door with a contact', () => {
    const topics = messages().map((m) => m.topic).sort();
    expect(topics).toEqual(
      [
        `${HA}/lock/${AGENT}_${FRONT}/config`,
        `${HA}/lock/${AGENT}_${BACK}/config`,
        `${HA}/binary_sensor/${AGENT}_${BACK}_door/config`,
      ].sort(),
    );
  });

  it('describes a door without a contact as a lock with the MQTT topics of design section 5', () => {
    expect(byTopic(`${HA}/lock/${AGENT}_${FRONT}/config`)).toMatchObject(expectedLock(FRONT, 'Front door'));
  });

  it('describes a door with a contact as a lock too', () => {
    expect(byTopic(`${HA}/lock/${AGENT}_${BACK}/config`)).toMatchObject(expectedLock(BACK, 'Back door'));
  });

  it('describes the contact as a door binary_sensor reading the door field of the state topic', () => {
    const sensor = byTopic(`${HA}/binary_sensor/${AGENT}_${BACK}_door/config`);
    expect(sensor).toMatchObject({
      device_class: 'door',
      state_topic: `${P}/doors/${BACK}/state`,
      value_template: '{{ value_json.door }}',
      payload_on: 'OPEN',
      payload_off: 'CLOSED',
      availability_topic: `${P}/agents/${AGENT}/status`,
      payload_available: 'online',
      payload_not_available: 'offline',
      device: expectedDevice,
    });
    expect(sensor.unique_id).toEqual(expect.any(String));
    expect(sensor.name).toMatch(/Back door/);
  });

  it('has no binary_sensor for the door without a contact', () => {
    expect(messages().filter((m) => m.topic.includes('binary_sensor') && m.topic.includes(FRONT))).toEqual([]);
  });

  it('uses the configured Home Assistant prefix', () => {
    expect(messages('ha-custom').every((m) => m.topic.startsWith('ha-custom/'))).toBe(true);
  });

  it('gives every entity a distinct unique_id and discovery topic', () => {
    const all = messages();
    const ids = all.map((m) => m.payload.unique_id);
    expect(new Set(ids).size).toBe(all.length);
    expect(new Set(all.map((m) => m.topic)).size).toBe(all.length);
  });

  it('groups all entities of the agent under one device naming the agent', () => {
    const devices = messages().map((m) => JSON.stringify(m.payload.device));
    expect(new Set(devices).size).toBe(1);
    const device = messages()[0]?.payload.device as { identifiers: string[]; name: string };
    expect(device.identifiers.join(' ')).toContain(AGENT);
    expect(device.identifiers.length).toBeGreaterThan(0);
  });

  it('uses only options of the Home Assistant MQTT schema, with topic-safe object ids', () => {
    for (const { topic, payload } of messages()) {
      const allowed = topic.includes('/lock/') ? LOCK_OPTIONS : BINARY_SENSOR_OPTIONS;
      expect(Object.keys(payload).filter((k) => !allowed.has(k)), topic).toEqual([]);
      expect(Object.keys(payload.device as object).filter((k) => !DEVICE_OPTIONS.has(k)), topic).toEqual([]);
      // <discovery_prefix>/<component>/<object_id>/config with object_id of [a-zA-Z0-9_-]
      expect(topic).toMatch(/^homeassistant\/(lock|binary_sensor)\/[a-zA-Z0-9_-]+\/config$/);
    }
  });

  it('produces JSON-serializable payloads without undefined values that survive a round trip', () => {
    for (const { payload } of messages()) {
      expect(hasUndefined(payload)).toBe(false);
      expect(JSON.parse(JSON.stringify(payload))).toEqual(payload);
    }
  });

  it('publishes nothing for an agent without doors', () => {
    expect(discoveryMessages({ haPrefix: HA, topics: new Topics(P, AGENT), doors: [], version: '1' })).toEqual([]);
  });
});
