import type { MqttClient } from 'mqtt';
import type { DoorEvents } from '../../door/doorEvents.js';
import type { Topics } from '../../protocol/topics.js';
import type { WireEvent } from '../../store/eventLog.js';
import { ALARM_TYPES } from '../../api/eventTypes.js';
import type { BrokerRefusals } from '../brokerRefusals.js';
import type { HandlerSubscription, MqttHandler } from '../handler.js';
import { haEventOf, isHaSource, unlockRefusedEvent, type HaEventMessage } from '../haEvents.js';
import { withProps } from '../../core/objects.js';

export interface HomeAssistantEventsDeps {
  client: MqttClient;
  topics: Topics;
  refusals: BrokerRefusals;
  /** The doors' alarms, published at once (before their audit event may be written, with a busy database). */
  doorEvents?: DoorEvents;
}

const ALARMS: ReadonlySet<string> = new Set<string>(ALARM_TYPES);

/**
 * What Home Assistant's event entities fire (haEvents.ts, one table): `{"event_type":...}` on
 * `P/doors/<uuid>/ha/<entity>` or `P/agents/<id>/ha/<entity>`, QoS 1, not retained, once per occurrence and only
 * while connected, like the alarms (the audit log, through the outbox, is the record that is never lost). Alarms
 * come from the door's alarm signal, the other events as they are written to the audit log, refused remote
 * unlocks from the door commands.
 */
export class HomeAssistantEventsHandler implements MqttHandler {
  readonly name = 'Home Assistant events';
  private readonly unsubscribe: Array<() => void> = [];

  constructor(private readonly deps: HomeAssistantEventsDeps) {
    if (deps.doorEvents) {
      this.unsubscribe.push(
        deps.doorEvents.on('alarm', (door, type, data, at) =>
          this.publish(haEventOf({ type, door, fields: withProps(data, { at: new Date(at).toISOString() }) })),
        ),
      );
    }
  }

  /** Publishes only. */
  subscriptions(): readonly HandlerSubscription[] {
    return [];
  }

  stop(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }

  /** An audit event was written (the alarms among them went out already). */
  eventWritten(event: WireEvent): void {
    if (ALARMS.has(event.type) || !isHaSource(event.type)) return;
    const { type, door, ...fields } = event;
    this.publish(haEventOf({ type, door, fields }));
  }

  /** A remote unlock of `door` was refused (lockdown, a wrong code, ...): Home Assistant's `unlock_refused`. */
  unlockRefused(door: string, reason: string, error: string, at: number): void {
    this.publish(unlockRefusedEvent(door, { reason, error, at: new Date(at).toISOString() }));
  }

  private publish(message: HaEventMessage | null): void {
    const { client, topics, refusals } = this.deps;
    if (message === null || !client.connected) return; // never queued: an event that cannot go out now is not shown late
    refusals.publishQuietly(client, topics.homeAssistantEvents(message.entity, message.door), JSON.stringify(message.payload), { qos: 1 });
  }
}
