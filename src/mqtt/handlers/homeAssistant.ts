import type { MqttClient } from 'mqtt';
import type { AreaOptions, DoorOptions } from '../../door/options.js';
import type { Topics } from '../../protocol/topics.js';
import type { BrokerRefusals } from '../brokerRefusals.js';
import { discoveryMessages, type DiscoveryMessage } from '../discovery.js';
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
  /** The devices' configuration_url (discovery.ts configurationUrlOf), absent: none. */
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
    const { refusals } = this.deps;
    await Promise.all(this.messages().map((m) => refusals.publish(client, m.topic, JSON.stringify(m.payload), { qos: 1, retain: true })));
  }

  /** The discovery topics the configuration produces now (what homeAssistantCleanup.ts keeps). */
  topics(): ReadonlySet<string> {
    return new Set(this.messages().map((m) => m.topic));
  }

  private messages(): DiscoveryMessage[] {
    const { topics, doors, version, signed, codeFormat, configurationUrl, projectUrl, areas } = this.deps;
    return discoveryMessages({ haPrefix: this.deps.prefix, topics, doors, version, signed, codeFormat, configurationUrl, projectUrl, areas });
  }
}
