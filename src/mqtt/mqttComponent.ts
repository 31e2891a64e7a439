import type { MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { Env } from '../util/secretFiles.js';
import type { Door } from '../door/door.js';
import type { DoorEvents } from '../door/doorEvents.js';
import type { Component } from '../lifecycle.js';
import { connectBroker } from '../protocol/connection.js';
import type { MqttOptions } from '../protocol/options.js';
import { readCommandSecret, readHomeAssistantCode } from '../util/secretFiles.js';
import { Topics } from '../protocol/topics.js';
import type { AgentStore } from '../store/agentStore.js';
import { ReplayCache } from '../store/replayCache.js';
import type { Clock, Timers } from '../util/clock.js';
import type { Lockdowns } from '../door/lockdowns.js';
import { RetainedClock } from './retainedClock.js';
import { resetOnSwitchToSigned } from './signingMode.js';
import { BrokerRefusals } from './brokerRefusals.js';
import { settlesWithin, type MqttHandler } from './handler.js';
import { HandlerList } from './handlerList.js';
import type { MqttDoor } from './handlers/mqttDoor.js';
import { DoorCommandsHandler } from './handlers/doorCommands.js';
import { GuestLinksHandler } from './handlers/guestLinks.js';
import { GuestLinkIndexHandler } from './handlers/guestLinkIndex.js';
import { DirectoryHandler } from './handlers/directory.js';
import { OperationsHandler } from './handlers/operations.js';
import { HomeAssistantHandler } from './handlers/homeAssistant.js';
import { HomeAssistantCleanupHandler } from './handlers/homeAssistantCleanup.js';
import { configurationUrlOf } from './discovery.js';
import { DoorStateHandler } from './handlers/doorState.js';
import { HealthHandler, type HealthSources } from './handlers/health.js';
import { HomeAssistantEventsHandler } from './handlers/homeAssistantEvents.js';
import { HomeAssistantCode } from './homeAssistantCode.js';
import { AreasHandler } from './handlers/areas.js';
import { ReplyTopics } from './replyTopic.js';
import { AuditResendHandler } from './handlers/auditResend.js';
import type { AreaRuntime } from '../door/areaRuntime.js';

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
  /** The project's address (Home Assistant's discovery origin), when package.json names one. */
  projectUrl?: string | null;
  /** service.baseUrl: Home Assistant's devices link to its console (unless mqtt.homeAssistant.configurationUrl says otherwise). */
  serviceUrl?: string | null;
  /** What the health message reports beyond MQTT: the cache's revision and age, the clock's trust. */
  health?: HealthSources;
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
  /** The agent's areas (docs/areas.md): their muster lists and the reset command; absent without areas. */
  areas?: AreaRuntime | null;
  /** Told of each connection made and each one lost or refused (link_lost / link_restored, util/linkWatch.ts). */
  brokerLink?: { failed(): void; succeeded(): void };
}

/**
 * The agent on the broker: one client and one list of handlers (handler.ts), one per topic family, started after
 * the doors and stopped before them. The list is the only place a topic family is registered; HandlerList
 * subscribes to their filters once per connection and hands each message to the handler whose filter matches.
 */
export class MqttComponent implements Component {
  readonly name = 'mqtt';
  private handlers: HandlerList | null = null;
  private client: MqttClient | null = null;
  private doorState: DoorStateHandler | null = null;
  private guestLinkHandlers: MqttHandler[] = [];

  constructor(private readonly deps: MqttComponentDeps) {}

  /** A rebuilt cache replaced a damaged one: the retained guest links (and their index) come again, to be stored in it. */
  cacheReplaced(): void {
    void this.handlers?.resubscribe(this.guestLinkHandlers);
  }

  start(): void {
    const { options, store, doorEvents, clock, timers, logger } = this.deps;
    const topics = new Topics(options.topicPrefix, this.deps.agentId);
    const replay = new ReplayCache(store.state, store.writes, () => clock.monoNow());
    replay.prune(clock.wallNow() - 2 * options.commandMaxAgeSeconds * 1000);
    const client = connectBroker(options, topics, this.deps.env, logger);
    const link = this.deps.brokerLink;
    if (link) {
      client.on('connect', () => link.succeeded());
      client.on('close', () => {
        if (!client.disconnecting && !client.disconnected) link.failed(); // not our own stop
      });
    }
    const secret = readCommandSecret(options.commandSecretFile);
    const { codeFile } = options.homeAssistant;
    const haCode = codeFile ? new HomeAssistantCode(readHomeAssistantCode(codeFile), { monoNow: () => clock.monoNow(), logger }) : null;
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
      logger.warn(
        'mqtt.protocolVersion 4 (MQTT 3.1.1): a broker that refuses a publish (its ACL) acknowledges it all the same, so the agent cannot tell; use 5',
      );
    }
    const doors: MqttDoor[] = this.deps.doors.map((d) => ({
      door: d.options,
      controller: d.lock,
      contact: () => d.contactState(),
      lockdown: () => lockdowns.isLockedDown(d.options.uuid),
      readerOnline: () => d.readerConnected(),
      emergency: () => d.emergencyReleased(),
      interlock: () => d.interlockBlocker(),
      operations: () => ({
        lockdown: lockdowns.effective(d.options.uuid),
        tamper: d.tamperState(),
        schedule: d.scheduleState(),
        emergency: d.emergencyReleased(),
      }),
    }));
    // Guest links live in the cache: written through store.cacheWrites (none while it is damaged), delivered again
    // once a rebuilt cache replaces a damaged one (cacheReplaced).
    const guestLinkHandlers: MqttHandler[] = [
      new GuestLinksHandler({
        topics,
        guestLinks,
        writes: store.cacheWrites,
        secret,
        guestLinkMaxAgeSeconds: options.guestLinkMaxAgeSeconds,
        times,
        clock,
        logger,
        connected: () => client.connected,
      }),
      ...(secret !== null
        ? [
            new GuestLinkIndexHandler({
              prefix: options.topicPrefix,
              secret,
              guestLinks,
              writes: store.cacheWrites,
              times,
              maxAgeSeconds: options.guestLinkMaxAgeSeconds,
              logger,
            }),
          ]
        : []),
    ];
    this.guestLinkHandlers = guestLinkHandlers;
    const doorState = new DoorStateHandler({ client, topics, doors, events: store.events, doorEvents, clock, timers, logger, refusals });
    const haEvents = options.homeAssistant.discovery ? new HomeAssistantEventsHandler({ client, topics, refusals, doorEvents }) : null;
    const discovery = options.homeAssistant.discovery
      ? new HomeAssistantHandler({
          topics,
          doors: doors.map((d) => d.door),
          prefix: options.homeAssistant.prefix,
          version: this.deps.version,
          signed: secret !== null,
          codeFormat: haCode?.format ?? null,
          configurationUrl: configurationUrlOf(options.homeAssistant.configurationUrl, this.deps.serviceUrl),
          projectUrl: this.deps.projectUrl ?? null,
          areas: this.deps.areas?.configured ?? [],
          refusals,
        })
      : null;
    // The one list of topic families. Connect runs in this order (the door state and availability near the end:
    // `online` and the outbox once the rest is in place; then the health, which so reports the outbox as it was at
    // the connect); stop in the reverse (the health's timers end before the doors are published LOCKED).
    const replyTopics = new ReplyTopics({
      own: { prefix: options.topicPrefix, agentId: this.deps.agentId, discoveryPrefix: options.homeAssistant.prefix },
      logger,
    });
    const handlers: MqttHandler[] = [
      new DoorCommandsHandler({
        client,
        topics,
        doors,
        events: store.events,
        replay,
        secret,
        maxAgeSeconds: options.commandMaxAgeSeconds,
        clock,
        timers,
        logger,
        refusals,
        replyTopics,
        homeAssistantCode: haCode,
        onUnlockRefused: haEvents ? (door, reason, error, at) => haEvents.unlockRefused(door, reason, error, at) : undefined,
      }),
      ...guestLinkHandlers,
      new DirectoryHandler({ topics, logger, onSyncRequest: this.deps.onSyncRequest, onDirectoryRevision: this.deps.onDirectoryRevision }),
      new OperationsHandler({
        client,
        topics,
        doorUuids: this.deps.doors.map((d) => d.options.uuid),
        lockdowns,
        secret,
        onHolidays: this.deps.onHolidays,
        heldHolidaysIssuedAt: this.deps.heldHolidaysIssuedAt,
        times,
        retainedMaxAgeSeconds: options.retainedMaxAgeSeconds,
        logger,
        refusals,
        doorEvents,
      }),
      // The discovery, then (once per start) the removal of what the configuration no longer produces.
      ...(discovery
        ? [
            discovery,
            new HomeAssistantCleanupHandler({
              prefix: options.homeAssistant.prefix,
              agentId: this.deps.agentId,
              current: () => discovery.topics(),
              refusals,
              timers,
              logger,
            }),
          ]
        : []),
      ...(haEvents ? [haEvents] : []),
      ...(this.deps.areas
        ? [
            new AreasHandler({
              client,
              topics,
              areas: this.deps.areas,
              userName: (emailId) => {
                try {
                  return store.credentials().userName(emailId);
                } catch {
                  return null; // the list is published without the name rather than not at all
                }
              },
              doorName: (uuid) => this.deps.doors.find((d) => d.options.uuid === uuid)?.options.name ?? uuid,
              secret,
              maxAgeSeconds: options.commandMaxAgeSeconds,
              replay,
              clock,
              logger,
              refusals,
              replyTopics,
            }),
          ]
        : []),
      doorState,
      new AuditResendHandler({ topics, events: store.events, clock, logger, onRepublished: () => doorState.eventsToSendAgain() }),
      new HealthHandler({
        client,
        topics,
        version: this.deps.version,
        doors,
        outboxDepth: () => store.events.unpublishedCount(),
        sources: this.deps.health,
        doorEvents,
        clock,
        timers,
        logger,
        refusals,
      }),
    ];
    this.handlers = new HandlerList(handlers, { client, refusals, logger }).attach();
    this.client = client;
    this.doorState = doorState;
    store.onEventsDurable(() => this.doorState?.eventAppended());
    store.onEventWritten((event) => {
      if (this.handlers) haEvents?.eventWritten(event);
    });
  }

  /**
   * Graceful, and bounded: the handlers stop (the doors, already locked by the caller, published LOCKED, then
   * retained offline); a broker that does not answer within 2 s is dropped (the last will covers it).
   */
  async stop(): Promise<void> {
    const { handlers, client } = this;
    this.handlers = null;
    this.client = null;
    this.doorState = null;
    this.guestLinkHandlers = [];
    await handlers?.stop();
    if (client && !(await settlesWithin(client.endAsync(false), 1000))) await settlesWithin(client.endAsync(true), 500);
  }
}
