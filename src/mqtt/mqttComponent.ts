import type { Logger } from 'pino';
import type { Env } from '../config/secrets.js';
import type { Door } from '../door/door.js';
import type { DoorEvents } from '../door/doorEvents.js';
import type { Component } from '../lifecycle.js';
import { connectBroker } from '../protocol/connection.js';
import type { MqttOptions } from '../protocol/options.js';
import { readSecret } from '../config/secrets.js';
import { Topics } from '../protocol/topics.js';
import type { AgentStore } from '../store/agentStore.js';
import type { Clock, Timers } from '../util/clock.js';
import { MqttBridge } from './bridge.js';

export interface MqttComponentDeps {
  options: MqttOptions;
  agentId: string;
  doors: readonly Door[];
  store: AgentStore;
  doorEvents: DoorEvents;
  env: Env;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  version: string;
  /** `P/agents/<id>/sync` arrived (absent without a service). */
  onSyncRequest?: () => void;
  onDirectoryRevision?: (payload: Buffer) => void;
}

/** The agent on the broker (see MqttBridge): started after the doors, stopped before them. */
export class MqttComponent implements Component {
  readonly name = 'mqtt';
  private bridge: MqttBridge | null = null;
  private readonly unsubscribe: Array<() => void> = [];

  constructor(private readonly deps: MqttComponentDeps) {}

  start(): void {
    const { options, store, doorEvents, clock, logger } = this.deps;
    const topics = new Topics(options.topicPrefix, this.deps.agentId);
    const replay = store.replayCache();
    replay.prune(clock.wallNow() - 2 * options.commandMaxAgeSeconds * 1000);
    const bridge = new MqttBridge({
      client: connectBroker(options, topics, this.deps.env, logger),
      topics,
      doors: this.deps.doors.map((d) => ({ door: d.options, controller: d.lock, contact: () => d.contactState() })),
      events: store.events,
      guestLinks: store.guestLinks(),
      replay,
      writes: store.writes,
      secret: readSecret('mqtt.commandSecretFile', options.commandSecretFile, {}) ?? null,
      maxAgeSeconds: options.commandMaxAgeSeconds,
      guestLinkMaxAgeSeconds: options.guestLinkMaxAgeSeconds,
      homeAssistant: options.homeAssistant,
      version: this.deps.version,
      clock,
      timers: this.deps.timers,
      logger,
      onSyncRequest: this.deps.onSyncRequest,
      onDirectoryRevision: this.deps.onDirectoryRevision,
    });
    this.bridge = bridge;
    this.unsubscribe.push(
      doorEvents.on('lock', (door) => bridge.publishState(door)),
      doorEvents.on('position', (door) => bridge.publishState(door)),
    );
    store.onEventWritten(() => this.bridge?.eventAppended());
  }

  async stop(): Promise<void> {
    for (const off of this.unsubscribe.splice(0)) off();
    const bridge = this.bridge;
    this.bridge = null;
    await bridge?.stop();
  }
}
