import type { IPublishPacket, MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { EventLog } from '../../store/eventLog.js';
import type { ReplayCache } from '../../store/replayCache.js';
import { systemTimers, type Clock, type Timers } from '../../util/clock.js';
import { commandReplyPayload, isCommandError, parseCommand, type CommandError } from '../../protocol/commands.js';
import { commandRefusal, executeCommand } from '../../door/doorCommand.js';
import type { Topics } from '../../protocol/topics.js';
import { RejectionLog } from '../rejections.js';
import type { BrokerRefusals } from '../brokerRefusals.js';
import type { HandlerSubscription, MqttHandler } from '../handler.js';
import type { HomeAssistantCode } from '../homeAssistantCode.js';
import type { MqttDoor } from './mqttDoor.js';
import type { ReplyTopics } from '../replyTopic.js';

export interface DoorCommandsDeps {
  client: MqttClient;
  topics: Topics;
  doors: readonly MqttDoor[];
  /** Where refused commands are recorded (command_rejected). */
  events: EventLog;
  replay: ReplayCache;
  /** The command secret when commands must be signed (mqtt.commandSecretFile). */
  secret: string | null;
  maxAgeSeconds: number;
  clock: Clock;
  timers?: Timers;
  logger: Logger;
  refusals: BrokerRefusals;
  /** Where a reply goes: the command's response topic, unless it is one of the agent's own (replyTopic.ts). */
  replyTopics: ReplyTopics;
  /** With mqtt.homeAssistant.codeFile: Home Assistant's unlocks must carry this code (the other commands do not). */
  homeAssistantCode?: HomeAssistantCode | null;
  /** A remote unlock was refused (lockdown, wrong code): shown in Home Assistant beside the reply. */
  onUnlockRefused?: (door: string, reason: string, error: string, at: number) => void;
}

const RECENT_MESSAGE_IDS = 256;
/** Refused commands are recorded at most once per door per minute (the rest counted in a summary). */
const REJECTION_WINDOW_MS = 60_000;

/**
 * `P/doors/<uuid>/set` of this agent's doors in (QoS 1, retain as published), the reply out on the command's
 * MQTT 5 response topic (unless it is one of the agent's own, replyTopic.ts) or `P/doors/<uuid>/reply`: never
 * from a retained message, never twice (a QoS 1 redelivery, a replayed request_id), refused with a reason (400,
 * 401, 409) and counted in the audit log.
 */
export class DoorCommandsHandler implements MqttHandler {
  readonly name = 'door commands';
  private readonly byUuid = new Map<string, MqttDoor>();
  private readonly executedMessageIds: number[] = [];
  private readonly rejections: RejectionLog;
  private readonly filters: HandlerSubscription[];

  constructor(private readonly deps: DoorCommandsDeps) {
    this.rejections = new RejectionLog({
      windowMs: REJECTION_WINDOW_MS,
      timers: deps.timers ?? systemTimers,
      wallNow: () => deps.clock.wallNow(),
      record: (door, data) => {
        try {
          deps.events.append({ type: 'command_rejected', door, at: deps.clock.wallNow(), data: { ...data } });
        } catch (err) {
          deps.logger.error({ err }, 'cannot record command_rejected');
        }
      },
    });
    for (const d of deps.doors) this.byUuid.set(d.door.uuid, d); // configured UUIDs are lower case
    // Retain as published (MQTT 5): a retained command published while we are connected still says retain,
    // so it is refused like one delivered at subscribe time.
    this.filters = [...this.byUuid.keys()].map((uuid) => ({ filter: deps.topics.set(uuid), options: { qos: 1, rap: true } }));
  }

  subscriptions(): readonly HandlerSubscription[] {
    return this.filters;
  }

  onMessage(topic: string, payload: Buffer, packet: IPublishPacket): void {
    const uuid = this.deps.topics.doorOfCommand(topic);
    if (uuid !== null) this.onCommand(uuid, payload, packet);
  }

  /** Records what is still counted. */
  stop(): void {
    this.rejections.flush();
  }

  private reject(doorUuid: string, error: CommandError, packet: IPublishPacket, reply: boolean, level: 'warn' | 'info' = 'warn'): void {
    this.deps.logger[level]({ door: doorUuid, status: error.status, error: error.error, requestId: error.requestId }, 'command rejected');
    this.rejections.reject(doorUuid, error);
    if (reply) this.reply(doorUuid, packet, { status: error.status, error: error.error }, error.requestId);
  }

  private reply(doorUuid: string, packet: IPublishPacket, body: Parameters<typeof commandReplyPayload>[0], requestId: string | null): void {
    const responseTopic = packet.properties?.responseTopic;
    const correlationData = packet.properties?.correlationData;
    const topic = this.deps.replyTopics.choose(responseTopic, this.deps.topics.reply(doorUuid));
    this.deps.refusals.publishQuietly(this.deps.client, topic, commandReplyPayload(body, requestId), {
      qos: 1,
      properties: correlationData ? { correlationData } : undefined,
    });
  }

  private onCommand(uuid: string, payload: Buffer, packet: IPublishPacket): void {
    const d = this.byUuid.get(uuid.toLowerCase());
    if (!d) return; // only this agent's doors are subscribed
    if (packet.retain) {
      // A retained command is old by definition (published before we subscribed): never act on it.
      return this.reject(d.door.uuid, { status: 409, error: 'retained command ignored', requestId: null }, packet, false);
    }
    if (packet.dup && packet.messageId !== undefined && this.executedMessageIds.includes(packet.messageId)) {
      this.deps.logger.info({ door: d.door.uuid, messageId: packet.messageId }, 'QoS 1 redelivery of an executed command ignored');
      return;
    }
    const { clock } = this.deps;
    const parsed = parseCommand(payload, {
      doorUuid: d.door.uuid,
      secret: this.deps.secret,
      maxAgeSeconds: this.deps.maxAgeSeconds,
      nowSeconds: Math.floor(clock.wallNow() / 1000),
      seen: (id) => this.deps.replay.seen(id),
    });
    if (isCommandError(parsed)) return this.reject(d.door.uuid, parsed, packet, true);
    if (parsed.signed && parsed.requestId) {
      // Remembered as of the later of now and issued_at: a command signed ahead of our clock stays acceptable
      // that much longer, so its id must be kept that much longer too.
      const rememberedAt = Math.max(clock.wallNow(), (parsed.issuedAt ?? 0) * 1000);
      this.deps.replay.remember(parsed.requestId, d.door.uuid, rememberedAt, rememberedAt - clock.wallNow() + 2 * this.deps.maxAgeSeconds * 1000);
      // Ids older than twice the maximum age can only come with a stale command: no need to keep them.
      this.deps.replay.prune(clock.wallNow() - 2 * this.deps.maxAgeSeconds * 1000);
    }
    if (!parsed.action.lock && parsed.homeAssistant && this.deps.homeAssistantCode) {
      // Only Home Assistant's commands carry a code; locking needs none (the safe direction, as in a lockdown).
      const { code } = parsed.homeAssistant;
      if (!this.deps.homeAssistantCode.matches(code)) {
        const error = code === null || code === '' ? 'a Home Assistant code is required to unlock' : 'wrong Home Assistant code';
        // Each one at info: the code object warns when they come several a minute.
        return this.refuseUnlock(d, 'wrong_code', { status: 401, error, requestId: parsed.requestId }, packet, 'info');
      }
    }
    // The door's rules for a command from outside (door/doorCommand.ts: emergency, lockdown, interlock), checked in
    // the turn of the event loop that executes: the other door of an interlock cannot unlock meanwhile.
    const refusal = commandRefusal(d, parsed.action, (uuid) => this.byUuid.get(uuid)?.door.name ?? uuid);
    if (refusal !== null) {
      const error = { status: 409 as const, error: refusal.error, requestId: parsed.requestId };
      if (refusal.reason === 'emergency') return this.reject(d.door.uuid, error, packet, true);
      return this.refuseUnlock(d, refusal.reason, error, packet);
    }
    const cause = `remote command${parsed.requestId ? ` ${parsed.requestId}` : ''}`;
    const result = executeCommand(d, parsed.action, cause, () => clock.wallNow());
    if (packet.messageId !== undefined) {
      this.executedMessageIds.push(packet.messageId);
      if (this.executedMessageIds.length > RECENT_MESSAGE_IDS) this.executedMessageIds.shift();
    }
    this.reply(d.door.uuid, packet, { status: 200, success: result }, parsed.requestId);
  }

  /** A valid unlock the door may not obey now (`reason`: lockdown, wrong_code, ...): the reply, and Home Assistant's `unlock_refused`. */
  private refuseUnlock(d: MqttDoor, reason: string, error: CommandError, packet: IPublishPacket, level: 'warn' | 'info' = 'warn'): void {
    this.reject(d.door.uuid, error, packet, true, level);
    this.deps.onUnlockRefused?.(d.door.uuid, reason, error.error, this.deps.clock.wallNow());
  }
}
