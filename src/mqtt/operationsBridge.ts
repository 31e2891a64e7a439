import type { IPublishPacket, MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { AlarmType } from '../door/doorRuntime.js';
import type { LockdownOutcome, LockdownScopeKey, Lockdowns } from '../door/lockdowns.js';
import { isRetainedRefusal } from '../protocol/retainedMessages.js';
import { parseHolidaysMessage, parseLockdownMessage, type LockdownScope } from '../protocol/lockdown.js';
import type { Topics } from '../protocol/topics.js';
import type { Clock } from '../util/clock.js';
import type { RetainedClock } from './retainedClock.js';
import { BrokerRefusals } from './brokerRefusals.js';

export interface OperationsBridgeDeps {
  client: MqttClient;
  topics: Topics;
  doorUuids: readonly string[];
  lockdowns: Lockdowns;
  /** The command secret when messages must be signed (mqtt.commandSecretFile). */
  secret: string | null;
  /** Holidays published by the service arrived (validated, authenticated, newer than those held). */
  onHolidays: (dates: string[], issuedAt: number | null) => void;
  /** issued_at of the holidays held (signed mode: an older message is a replay). */
  heldHolidaysIssuedAt: () => number | null;
  clock: Clock;
  /** Orders issued_at with times from the future clamped; the maximum age (mqtt.retainedMaxAgeSeconds). */
  times: RetainedClock;
  retainedMaxAgeSeconds: number;
  logger: Logger;
  /** Where the broker's refusals are reported (shared with the bridge). */
  refusals?: BrokerRefusals;
}

/**
 * The door operations on the broker (issue 14): retained lockdowns in (the agent's and each door's), the
 * service's retained holidays in, the agent's lockdown state out (retained), and alarms out at once (duress,
 * tamper, forced, held open) beside the audit events that the outbox delivers.
 */
export class OperationsBridge {
  private readonly scopes = new Map<string, { key: LockdownScopeKey; scope: LockdownScope }>();
  private readonly refusals: BrokerRefusals;

  constructor(private readonly deps: OperationsBridgeDeps) {
    const { topics } = deps;
    this.refusals = deps.refusals ?? new BrokerRefusals({ logger: deps.logger, wallNow: () => deps.clock.wallNow() });
    this.scopes.set(topics.agentLockdown, { key: 'agent', scope: { kind: 'agent', id: topics.agentId } });
    for (const uuid of deps.doorUuids) this.scopes.set(topics.lockdown(uuid), { key: `door:${uuid}`, scope: { kind: 'door', uuid } });
    deps.client.on('connect', () => void this.onConnect());
    deps.client.on('message', (topic, payload, packet) => this.onMessage(topic, payload, packet));
  }

  private async onConnect(): Promise<void> {
    const { client, topics, logger } = this.deps;
    try {
      this.publishAgentLockdown();
      // Retained state, not commands: a retained message is the current state and is acted on.
      await this.refusals.subscribe(client, [...this.scopes.keys(), topics.holidays], { qos: 1 });
    } catch (err) {
      logger.warn({ err }, 'lockdown and holiday subscriptions interrupted; retrying on reconnect');
    }
  }

  /** Retained `P/agents/<id>/lockdown/state`: the agent-wide lockdown as this agent holds it. */
  publishAgentLockdown(): void {
    const { client, topics, lockdowns } = this.deps;
    if (!client.connected) return;
    const record = lockdowns.get('agent');
    const payload = { lockdown: record.active, by: record.by, reason: record.reason, since: record.since === null ? null : new Date(record.since).toISOString() };
    this.refusals.publishQuietly(client, topics.agentLockdownState, JSON.stringify(payload), { qos: 1, retain: true });
  }

  /**
   * `P/doors/<uuid>/alarm`, QoS 1, at once (when connected; the audit event follows through the outbox regardless).
   * Alarms are raised from recorded events, so a flood is limited here exactly as in the audit log (door/inputFloods.ts:
   * the first ten of a type a minute, then one summary); duress is never limited.
   */
  publishAlarm(door: string, type: AlarmType, data: Record<string, unknown>, at: number): void {
    const { client, topics } = this.deps;
    if (!client.connected) return;
    this.refusals.publishQuietly(client, topics.alarm(door), JSON.stringify({ ...data, event_type: type, door, at: new Date(at).toISOString() }), { qos: 1 });
  }

  private onMessage(topic: string, payload: Buffer, _packet: IPublishPacket): void {
    try {
      const target = this.scopes.get(topic);
      if (target) return this.onLockdown(target.key, target.scope, payload);
      if (topic === this.deps.topics.holidays) this.onHolidays(payload);
    } catch (err) {
      this.deps.logger.error({ err, topic }, 'cannot handle an MQTT message');
    }
  }

  private onLockdown(key: LockdownScopeKey, scope: LockdownScope, payload: Buffer): void {
    const { logger, lockdowns } = this.deps;
    const message = parseLockdownMessage(scope, payload, this.deps.secret);
    if (isRetainedRefusal(message)) return void logger.warn({ topic: this.topicOf(key), scope: key, reason: message.refused }, 'lockdown message refused');
    if (this.tooOld(message.issuedAt)) {
      return void logger.warn({ scope: key, issuedAt: message.issuedAt, maxAgeSeconds: this.deps.retainedMaxAgeSeconds }, 'lockdown message refused: signed longer ago than mqtt.retainedMaxAgeSeconds (a replay?)');
    }
    const { times } = this.deps;
    const issuedAt = message.issuedAt;
    const order = issuedAt === null ? undefined : (held: Parameters<RetainedClock['order']>[1]) => times.order('lockdown', held, issuedAt);
    const request =
      message.kind === 'clear'
        ? { active: false, by: 'MQTT (empty retained message)', reason: null, issuedAt: null }
        : { active: message.body.lockdown, by: message.body.by, reason: message.body.reason ?? null, issuedAt, order };
    const outcome: LockdownOutcome = lockdowns.apply(key, request);
    if (outcome === 'stale') {
      logger.warn({ scope: key, issuedAt: request.issuedAt, held: lockdowns.get(key).issuedAt }, 'lockdown message refused: older than the one in force (a replay?)');
    }
    if (key === 'agent' && outcome !== 'stale') this.publishAgentLockdown();
  }

  private onHolidays(payload: Buffer): void {
    const { logger } = this.deps;
    const message = parseHolidaysMessage(payload, this.deps.secret);
    if (isRetainedRefusal(message)) return void logger.warn({ topic: this.deps.topics.holidays, reason: message.refused }, 'holidays message refused');
    if (this.tooOld(message.issuedAt)) {
      return void logger.warn({ issuedAt: message.issuedAt, maxAgeSeconds: this.deps.retainedMaxAgeSeconds }, 'holidays message refused: signed longer ago than mqtt.retainedMaxAgeSeconds (a replay?)');
    }
    const held = this.deps.heldHolidaysIssuedAt();
    let issuedAt = message.issuedAt;
    if (issuedAt !== null) {
      // Held as clamped: a later message overtakes one that came from the future.
      const ordered = this.deps.times.order('holidays', { issuedAt: held }, issuedAt);
      if (ordered.order !== 'newer') {
        if (ordered.order === 'stale') logger.warn({ issuedAt: message.issuedAt, held }, 'holidays message refused: older than the one in force (a replay?)');
        return;
      }
      issuedAt = ordered.next.issuedAt;
    }
    this.deps.onHolidays(message.kind === 'clear' ? [] : message.body.dates, issuedAt);
  }

  /** Signed mode: whether a message was signed longer ago than mqtt.retainedMaxAgeSeconds. */
  private tooOld(issuedAt: number | null): boolean {
    return this.deps.secret !== null && issuedAt !== null && this.deps.times.tooOld(issuedAt, this.deps.retainedMaxAgeSeconds);
  }

  private topicOf(key: LockdownScopeKey): string | undefined {
    for (const [topic, target] of this.scopes) if (target.key === key) return topic;
    return undefined;
  }
}
