import type { MqttClient } from 'mqtt';
import type { AreaOptions, DoorOptions } from '../../door/options.js';
import type { Topics } from '../../protocol/topics.js';
import type { BrokerRefusals } from '../brokerRefusals.js';
import { discoveryMessages } from '../discovery.js';
import type { HandlerSubscription, MqttHandler } from '../handler.js';

export interface HomeAssistantDeps {
  topics: Topics;
  doors: readonly DoorOptions[];
  /** homeAssistant.prefix. */
  prefix: string;
  version: string;
  /** Whether commands and retained lockdowns must be signed (the lockdown is then a read-only binary sensor). */
  signed: boolean;
  /** The lock's code_format when unlocks need a code (mqtt.homeAssistant.codeFile), else null. */
  codeFormat: string | null;
  /** mqtt.homeAssistant.configurationUrl. */
  configurationUrl?: string;
  /** The project's address (the discovery's origin), when package.json names one. */
  projectUrl: string | null;
  /** The agent's areas: a sensor each for its occupancy. */
  areas?: readonly AreaOptions[];
  refusals: BrokerRefusals;
}

/** Home Assistant MQTT discovery (discovery.ts), retained, at every connect; registered with homeAssistant.discovery. */
export class HomeAssistantHandler implements MqttHandler {
  readonly name = 'Home Assistant discovery';

  constructor(private readonly deps: HomeAssistantDeps) {}

  /** Publishes only: Home Assistant's commands come on the doors' and the lockdown's own topics. */
  subscriptions(): readonly HandlerSubscription[] {
    return [];
  }

  async onConnect(client: MqttClient): Promise<void> {
    const { topics, doors, version, signed, codeFormat, configurationUrl, projectUrl, areas, refusals } = this.deps;
    const messages = discoveryMessages({ haPrefix: this.deps.prefix, topics, doors, version, signed, codeFormat, configurationUrl, projectUrl, areas });
    await Promise.all(messages.map((m) => refusals.publish(client, m.topic, JSON.stringify(m.payload), { qos: 1, retain: true })));
  }
}
