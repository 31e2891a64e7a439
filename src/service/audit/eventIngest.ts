import type { IPublishPacket, MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import { clientOptions, connectWithBackoff } from '../../protocol/connection.js';
import { resendPayload, type ResendRequest } from '../../protocol/auditResend.js';
import type { MqttOptions } from '../../protocol/options.js';
import { DoorTopics } from '../../protocol/topics.js';
import type { Clock } from '../../util/clock.js';
import type { Env } from '../../util/secretFiles.js';
import type { AuditEventStore } from './eventStore.js';
import type { StoredEvents } from './storedEvents.js';
import { parseWireEvent, WireEventProblem, type IngestedEvent } from './wireEvent.js';

/**
 * How long the broker keeps this process's session while it is away (MQTT 5; with 3.1.1 the broker's own
 * persistent_client_expiration decides): long enough for a service down over a long weekend and more.
 */
const SESSION_EXPIRY_SECONDS = 30 * 86_400;

/** What an outage means for this session: the broker keeps the events for it (clean: false). */
const EVENTS_SESSION_LOST = "broker connection lost; the doors' events wait at the broker for this session";

/** The default client id of a process's events session: one per machine and port, stable across restarts. */
export function defaultEventsClientId(hostname: string, port: number): string {
  return `door-agent-service-events-${hostname.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 80)}-${port}`;
}

export interface EventIngestCounts {
  stored: number;
  /** Taken again (the outbox resent it, or another process stored it first). */
  duplicates: number;
  /** Payloads that did not parse: acknowledged, never stored. */
  dropped: number;
}

/**
 * Takes every agent's audit events off the broker into the database (docs/audit.md, "Where events are kept"): a
 * broker session of this process's own that outlives it (clean: false), QoS 1 on `P/doors/+/events`, each event
 * stored in one transaction and only then acknowledged, so an event the process dies holding comes again. mqtt.js
 * acknowledges a QoS 1 message (PUBACK) once the client's handleMessage(packet, callback) calls back, and hands the
 * next message only then: events are stored one at a time, in the order the broker sends them.
 */
export class EventIngest {
  readonly counts: EventIngestCounts = { stored: 0, duplicates: 0, dropped: 0 };
  private readonly client: MqttClient;
  private readonly filter: string;
  private readonly topics: DoorTopics;

  constructor(
    config: MqttOptions,
    env: Env,
    private readonly deps: { clientId: string; store: AuditEventStore; stored: StoredEvents; clock: Clock; logger: Logger },
  ) {
    this.filter = `${config.topicPrefix}/doors/+/events`;
    this.topics = new DoorTopics(config.topicPrefix);
    const options = Object.assign(clientOptions(config, env, { clientId: deps.clientId }), {
      clean: false,
      ...(config.protocolVersion === 5 ? { properties: { sessionExpiryInterval: SESSION_EXPIRY_SECONDS } } : {}),
    });
    this.client = connectWithBackoff(config.url, options, deps.logger, { lostMessage: EVENTS_SESSION_LOST });
    this.client.handleMessage = (packet, callback) => {
      this.take(packet).then(
        () => callback(),
        (err: unknown) => {
          // Not acknowledged: the broker keeps it in the session. A new connection makes the broker send it again.
          deps.logger.warn({ err, topic: packet.topic }, 'audit event not stored; the broker will send it again');
          this.client.stream?.destroy();
          callback(err as Error);
        },
      );
    };
    this.client.on('connect', () => {
      this.client.subscribeAsync(this.filter, { qos: 1 }).then(
        () => deps.logger.info({ clientId: deps.clientId }, 'audit events session connected'),
        (err: unknown) => deps.logger.warn({ err }, 'cannot subscribe to the audit events'),
      );
    });
  }

  private async take(packet: IPublishPacket): Promise<void> {
    if (!this.matches(packet.topic)) return;
    let event: IngestedEvent;
    try {
      event = parseWireEvent(Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload));
    } catch (err) {
      if (!(err instanceof WireEventProblem)) throw err;
      this.counts.dropped++;
      this.deps.logger.debug({ topic: packet.topic, problem: err.message }, 'audit event dropped: it does not parse');
      return;
    }
    const result = await this.deps.store.store(event, this.deps.clock.wallNow());
    if (result.gapClosed) this.deps.logger.info({ agent: event.agentId, chain: event.chainId, ...result.gapClosed }, 'audit gap closed');
    if (result.stored) this.counts.stored++;
    else this.counts.duplicates++;
    if (result.eventId !== null) this.deps.stored.emit({ eventId: result.eventId, event });
  }

  private matches(topic: string): boolean {
    const parts = topic.split('/');
    const prefix = this.filter.split('/');
    return parts.length === prefix.length && parts.every((part, i) => prefix[i] === '+' || prefix[i] === part);
  }

  /**
   * Asks an agent to send events again (gapRequests.ts), QoS 1, not retained, on this session (its broker user
   * writes P/agents/+/audit/resend). False when not connected: a request is not queued, it is asked again later.
   */
  async requestResend(agentId: string, request: ResendRequest): Promise<boolean> {
    if (!this.client.connected) return false;
    await this.client.publishAsync(this.topics.auditResendOf(agentId), resendPayload(request), { qos: 1 });
    return true;
  }

  /** Whether the session is connected now. */
  get connected(): boolean {
    return this.client.connected;
  }

  async close(): Promise<void> {
    await this.client.endAsync().catch(() => undefined);
  }
}
