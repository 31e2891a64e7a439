import type { DoorOptions } from '../door/options.js';
import type { Topics } from '../protocol/topics.js';

export interface DiscoveryMessage {
  topic: string;
  payload: Record<string, unknown>;
}

/**
 * Home Assistant MQTT discovery (retained): a `lock` per door (LOCK, UNLOCK = hold open, OPEN = unlockSeconds)
 * and a `binary_sensor` with device_class door per configured contact. All of one agent's entities belong to
 * one device, and go unavailable with the agent's last will.
 */
export function discoveryMessages(options: {
  haPrefix: string;
  topics: Topics;
  doors: readonly DoorOptions[];
  version: string;
}): DiscoveryMessage[] {
  const { haPrefix, topics, doors, version } = options;
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
    messages.push({
      topic: `${haPrefix}/lock/${id}/config`,
      payload: {
        name: door.name,
        unique_id: id,
        command_topic: topics.set(door.uuid),
        state_topic: topics.state(door.uuid),
        value_template: '{{ value_json.state }}',
        payload_lock: 'LOCK',
        payload_unlock: 'UNLOCK',
        payload_open: 'OPEN',
        state_locked: 'LOCKED',
        state_unlocked: 'UNLOCKED',
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
          state_topic: topics.state(door.uuid),
          value_template: '{{ value_json.door }}',
          payload_on: 'OPEN',
          payload_off: 'CLOSED',
          qos: 1,
          ...availability,
          device,
        },
      });
    }
  }
  return messages;
}
