import type { IPublishPacket, MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { AreaRuntime } from '../../door/areaRuntime.js';
import { musterList, occupancyPayload, parseAreaReset } from '../../protocol/areas.js';
import { commandReplyPayload } from '../../protocol/commands.js';
import type { Topics } from '../../protocol/topics.js';
import type { ReplayCache } from '../../store/replayCache.js';
import type { Clock } from '../../util/clock.js';
import type { BrokerRefusals } from '../brokerRefusals.js';
import type { HandlerSubscription, MqttHandler } from '../handler.js';
import type { ReplyTopics } from '../replyTopic.js';

export interface AreasHandlerDeps {
  client: MqttClient;
  topics: Topics;
  areas: AreaRuntime;
  /** A user's name (the directory's), null when not known. */
  userName: (emailId: number) => string | null;
  doorName: (uuid: string) => string;
  /** The command secret when commands must be signed (mqtt.commandSecretFile). */
  secret: string | null;
  /** mqtt.commandMaxAgeSeconds: a signed reset older (or that much ahead) is refused. */
  maxAgeSeconds: number;
  /** Signed resets' request ids, as the door commands' (a captured reset is not replayed). */
  replay: ReplayCache;
  clock: Clock;
  logger: Logger;
  refusals: BrokerRefusals;
  /** Where a reply goes: the reset's response topic, unless it is one of the agent's own (replyTopic.ts). */
  replyTopics: ReplyTopics;
}

/**
 * The agent's areas on the broker (docs/mqtt.md, "Areas"): each area's muster list retained on
 * `P/agents/<id>/areas/<area>/occupancy`, published at each connect and at each change while connected; the reset
 * command in on `P/agents/<id>/areas/reset` (not retained: a retained reset would reset again at each connect).
 */
export class AreasHandler implements MqttHandler {
  readonly name = 'areas';
  private stopped = false;

  constructor(private readonly deps: AreasHandlerDeps) {
    deps.areas.onChange((area) => {
      if (!this.stopped && deps.client.connected) this.publish(area);
    });
  }

  subscriptions(): readonly HandlerSubscription[] {
    return [{ filter: this.deps.topics.areasReset, options: { qos: 1, rap: true } }];
  }

  onConnect(): void {
    for (const area of this.deps.areas.ids) this.publish(area);
  }

  stop(): void {
    this.stopped = true;
  }

  /** The area's muster list, retained (what a muster display shows, right after a restart too). */
  private publish(id: string): void {
    const { areas, client, topics, refusals } = this.deps;
    const area = areas.area(id);
    if (!area) return;
    const list = musterList(areas.occupants(id), { user: this.deps.userName, door: this.deps.doorName });
    refusals.publishQuietly(client, topics.areaOccupancy(id), occupancyPayload(area, list, this.deps.clock.wallNow()), { qos: 1, retain: true });
  }

  onMessage(topic: string, payload: Buffer, packet: IPublishPacket): void {
    if (topic !== this.deps.topics.areasReset) return;
    const { logger, clock, secret } = this.deps;
    if (packet.retain) return void logger.warn({ topic }, 'retained area reset ignored: a reset is a command, not a state');
    const reset = parseAreaReset(payload, this.deps.topics.agentId, secret);
    if ('refused' in reset) return this.refuse(packet, reset.refused, reset.status, reset.requestId);
    if (secret !== null && reset.issuedAt !== null) {
      const age = Math.floor(clock.wallNow() / 1000) - reset.issuedAt;
      if (Math.abs(age) > this.deps.maxAgeSeconds)
        return this.refuse(packet, `issued ${age} s ago: older than ${this.deps.maxAgeSeconds} s (or the clocks differ)`, 409, reset.requestId);
      if (reset.requestId !== null && this.deps.replay.seen(reset.requestId)) {
        return this.refuse(packet, `request_id ${reset.requestId} was already executed`, 409, reset.requestId);
      }
      if (reset.requestId !== null) this.deps.replay.remember(reset.requestId, 'areas', clock.wallNow(), 2 * this.deps.maxAgeSeconds * 1000);
    }
    if (reset.area !== null && !this.deps.areas.area(reset.area)) {
      return this.refuse(packet, `no area ${JSON.stringify(reset.area)} (areas: ${this.deps.areas.ids.join(', ')})`, 400, reset.requestId);
    }
    this.deps.areas.reset(reset.area, `${reset.by ?? 'a command'} (MQTT)`);
    this.reply(packet, { status: 200, success: `${reset.area === null ? 'every area' : reset.area} reset` }, reset.requestId);
  }

  private refuse(packet: IPublishPacket, error: string, status: number, requestId: string | null): void {
    this.deps.logger.warn({ topic: packet.topic, error }, 'area reset refused');
    this.reply(packet, { status, error }, requestId);
  }

  private reply(packet: IPublishPacket, body: Parameters<typeof commandReplyPayload>[0], requestId: string | null): void {
    const responseTopic = packet.properties?.responseTopic;
    const correlationData = packet.properties?.correlationData;
    const topic = this.deps.replyTopics.choose(responseTopic, this.deps.topics.areasReply);
    this.deps.refusals.publishQuietly(this.deps.client, topic, commandReplyPayload(body, requestId), {
      qos: 1,
      properties: correlationData ? { correlationData } : undefined,
    });
  }
}
