import type { MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { DoorEvents } from '../../door/doorEvents.js';
import { AVAILABILITY_OFFLINE, AVAILABILITY_ONLINE, doorStatePayload, stoppedDoorStatePayload } from '../../protocol/doorState.js';
import type { Topics } from '../../protocol/topics.js';
import type { EventLog, WireEvent } from '../../store/eventLog.js';
import type { Clock, Timers } from '../../util/clock.js';
import type { BrokerRefusals } from '../brokerRefusals.js';
import { settlesWithin, type HandlerSubscription, type MqttHandler } from '../handler.js';
import { OutboxPublisher } from '../outboxPublisher.js';
import type { MqttDoor } from './mqttDoor.js';
import { HomeAssistantLock } from './homeAssistantLock.js';

export interface DoorStateDeps {
  client: MqttClient;
  topics: Topics;
  doors: readonly MqttDoor[];
  /** The audit log, whose outbox goes out on `P/doors/<uuid>/events`. */
  events: EventLog;
  /** Lock and position changes (absent: published only at connect and by `publishState`). */
  doorEvents?: DoorEvents;
  clock: Clock;
  timers?: Timers;
  logger: Logger;
  refusals: BrokerRefusals;
}

/**
 * What the agent says about itself and its doors: retained `P/doors/<uuid>/state` at connect and on every lock,
 * position or published-state change, retained availability on `P/agents/<id>/status` (`online` at connect;
 * `offline` at stop, else the last will), and the event outbox drained to `P/doors/<uuid>/events` while connected.
 * At stop every door is published LOCKED (the caller drove the relays locked) before `offline`.
 */
export class DoorStateHandler implements MqttHandler {
  readonly name = 'door state and availability';
  private readonly byUuid = new Map<string, MqttDoor>();
  private readonly outbox: OutboxPublisher;
  private readonly unsubscribe: Array<() => void> = [];
  /** Home Assistant's lock state of each door (`ha_state`). */
  private readonly haLock: HomeAssistantLock;
  private session = 0;

  constructor(private readonly deps: DoorStateDeps) {
    for (const d of deps.doors) this.byUuid.set(d.door.uuid, d); // configured UUIDs are lower case
    this.outbox = new OutboxPublisher(deps.events, (event) => this.publishEvent(event), { logger: deps.logger, clock: deps.clock, timers: deps.timers });
    this.haLock = new HomeAssistantLock({ doors: deps.doors, clock: deps.clock, timers: deps.timers, onDue: (uuid) => this.publishState(uuid) });
    if (deps.doorEvents) {
      this.unsubscribe.push(
        deps.doorEvents.on('lock', (door) => {
          this.haLock.lockChanged(door);
          this.publishState(door);
        }),
        deps.doorEvents.on('position', (door) => {
          this.haLock.positionChanged(door);
          this.publishState(door);
        }),
      );
    }
  }

  /** Publishes only. */
  subscriptions(): readonly HandlerSubscription[] {
    return [];
  }

  async onConnect(client: MqttClient): Promise<void> {
    const session = ++this.session;
    for (const d of this.byUuid.values()) this.publishState(d.door.uuid);
    await this.deps.refusals.publish(client, this.deps.topics.status, AVAILABILITY_ONLINE, { qos: 1, retain: true });
    if (session !== this.session) return; // a newer connection took over while this one was set up
    this.deps.logger.info({ doors: this.byUuid.size }, 'connected to the broker');
    this.outbox.start();
  }

  onClose(): void {
    this.outbox.stop();
  }

  /** An event was appended to the log. */
  eventAppended(): void {
    this.outbox.kick();
  }

  /** Events already published were made unpublished again: the outbox sends them again, oldest first. */
  eventsToSendAgain(): void {
    this.outbox.rewind();
  }

  /** Retained `P/doors/<uuid>/state`; only the controller's own state is published, never a guess. */
  publishState(uuid: string): void {
    const d = this.byUuid.get(uuid.toLowerCase());
    if (!d || !this.deps.client.connected) return;
    const payload = doorStatePayload(d.controller.snapshot(), d.contact(), d.operations?.(), this.haLock.state(d.door.uuid));
    this.deps.refusals.publishQuietly(this.deps.client, this.deps.topics.state(d.door.uuid), payload, { qos: 1, retain: true });
  }

  /** True on PUBACK, false when the broker refused it (it stays in the outbox); rejects when the connection failed. */
  private publishEvent(event: WireEvent): Promise<boolean> {
    if (!this.deps.client.connected) return Promise.reject(new Error('not connected'));
    return this.deps.refusals.publish(this.deps.client, this.deps.topics.events(event.door ?? 'agent'), JSON.stringify(event), { qos: 1 });
  }

  /** The doors (already locked by the caller) published LOCKED, then retained offline, waiting at most 1 s. */
  async stop(): Promise<void> {
    for (const off of this.unsubscribe.splice(0)) off();
    this.haLock.stop();
    this.outbox.stop();
    const { client, topics } = this.deps;
    if (!client.connected) return;
    for (const d of this.byUuid.values()) {
      client.publish(topics.state(d.door.uuid), stoppedDoorStatePayload(d.contact(), this.deps.clock.wallNow()), { qos: 1, retain: true });
    }
    await settlesWithin(client.publishAsync(topics.status, AVAILABILITY_OFFLINE, { qos: 1, retain: true }), 1000);
  }
}
