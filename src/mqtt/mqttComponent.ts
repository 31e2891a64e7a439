import type { Logger } from 'pino';
import type { Env } from '../util/secretFiles.js';
import type { Door } from '../door/door.js';
import type { DoorEvents } from '../door/doorEvents.js';
import type { Component } from '../lifecycle.js';
import { connectBroker } from '../protocol/connection.js';
import type { MqttOptions } from '../protocol/options.js';
import { readCommandSecret } from '../util/secretFiles.js';
import { Topics } from '../protocol/topics.js';
import type { AgentStore } from '../store/agentStore.js';
import { ReplayCache } from '../store/replayCache.js';
import type { Clock, Timers } from '../util/clock.js';
import { MqttBridge } from './bridge.js';
import type { Lockdowns } from '../door/lockdowns.js';
import { OperationsBridge } from './operationsBridge.js';
import { GuestLinkIndexListener } from './guestLinkIndex.js';
import { RetainedClock } from './retainedClock.js';
import { resetOnSwitchToSigned } from './signingMode.js';
import { BrokerRefusals } from './brokerRefusals.js';

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
  /** The lockdowns in force (available once the doors have started). */
  lockdowns: () => Lockdowns;
  /** Holidays published by the service arrived. */
  onHolidays: (dates: string[], issuedAt: number | null) => void;
  heldHolidaysIssuedAt: () => number | null;
  /** The switch to signed mode: forget the holidays' issued_at an unsigned message set. */
  forgetHolidaysIssuedAt?: () => void;
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
    const replay = new ReplayCache(store.state, store.writes, () => clock.monoNow());
    replay.prune(clock.wallNow() - 2 * options.commandMaxAgeSeconds * 1000);
    const client = connectBroker(options, topics, this.deps.env, logger);
    const secret = readCommandSecret(options.commandSecretFile);
    const lockdowns = this.deps.lockdowns();
    const guestLinks = store.guestLinks();
    resetOnSwitchToSigned({
      state: store.state,
      signed: secret !== null,
      lockdowns,
      guestLinks,
      forgetHolidaysIssuedAt: this.deps.forgetHolidaysIssuedAt ?? (() => undefined),
      logger,
    });
    const times = new RetainedClock({ clock, futureSkewSeconds: options.futureSkewSeconds, record: (event) => store.events.append(event), logger });
    const refusals = new BrokerRefusals({ logger, wallNow: () => clock.wallNow(), onChange: (refused) => store.setBrokerRefusals(refused) });
    if (options.protocolVersion !== 5) {
      logger.warn('mqtt.protocolVersion 4 (MQTT 3.1.1): a broker that refuses a publish (its ACL) acknowledges it all the same, so the agent cannot tell; use 5');
    }
    const bridge = new MqttBridge({
      refusals,
      client,
      topics,
      doors: this.deps.doors.map((d) => ({
        door: d.options,
        controller: d.lock,
        contact: () => d.contactState(),
        lockdown: () => lockdowns.isLockedDown(d.options.uuid),
        extraState: () => d.publishedState(lockdowns.effective(d.options.uuid)),
      })),
      events: store.events,
      guestLinks,
      times,
      replay,
      writes: store.writes,
      secret,
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
    const operations = new OperationsBridge({
      refusals,
      client,
      topics,
      doorUuids: this.deps.doors.map((d) => d.options.uuid),
      lockdowns,
      secret,
      onHolidays: this.deps.onHolidays,
      heldHolidaysIssuedAt: this.deps.heldHolidaysIssuedAt,
      clock,
      times,
      retainedMaxAgeSeconds: options.retainedMaxAgeSeconds,
      logger,
    });
    if (secret !== null) {
      new GuestLinkIndexListener({ client, prefix: options.topicPrefix, secret, guestLinks, writes: store.writes, times, maxAgeSeconds: options.guestLinkMaxAgeSeconds, logger });
    }
    this.unsubscribe.push(
      doorEvents.on('lock', (door) => bridge.publishState(door)),
      doorEvents.on('position', (door) => bridge.publishState(door)),
      doorEvents.on('alarm', (door, type, data, at) => operations.publishAlarm(door, type, data, at)),
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
