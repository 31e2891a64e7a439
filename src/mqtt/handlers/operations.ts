import type { MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { DoorEvents } from '../../door/doorEvents.js';
import type { LockdownOutcome, LockdownScopeKey, Lockdowns } from '../../door/lockdowns.js';
import { alarmPayload } from '../../protocol/doorState.js';
import { isRetainedRefusal } from '../../protocol/retainedMessages.js';
import { lockdownStatePayload, parseHolidaysMessage, parseLockdownMessage, type LockdownScope } from '../../protocol/lockdown.js';
import type { Topics } from '../../protocol/topics.js';
import type { RetainedClock } from '../retainedClock.js';
import type { BrokerRefusals } from '../brokerRefusals.js';
import type { HandlerSubscription, MqttHandler } from '../handler.js';

export interface OperationsHandlerDeps {
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
  /** Orders issued_at with times from the future clamped; the maximum age (mqtt.retainedMaxAgeSeconds). */
  times: RetainedClock;
  retainedMaxAgeSeconds: number;
  logger: Logger;
  refusals: BrokerRefusals;
  /** Where the doors' alarms come from (absent: no alarms published). */
  doorEvents?: DoorEvents;
}

/**
 * The door operations on the broker (issue 14): retained lockdowns in (the agent's and each door's), the
 * service's retained holidays in, the agent's lockdown state out (retained), and alarms out at once (duress,
 * tamper, forced, held open) beside the audit events that the outbox delivers.
 */
export class OperationsHandler implements MqttHandler {
  readonly name = 'lockdown and holidays';
  private readonly scopes = new Map<string, { key: LockdownScopeKey; scope: LockdownScope }>();
  private readonly filters: HandlerSubscription[];
  private readonly unsubscribe: Array<() => void> = [];

  constructor(private readonly deps: OperationsHandlerDeps) {
    const { topics } = deps;
    this.scopes.set(topics.agentLockdown, { key: 'agent', scope: { kind: 'agent', id: topics.agentId } });
    for (const uuid of deps.doorUuids) this.scopes.set(topics.lockdown(uuid), { key: `door:${uuid}`, scope: { kind: 'door', uuid } });
    // Retained state, not commands: a retained message is the current state and is acted on.
    this.filters = [...this.scopes.keys(), topics.holidays].map((filter) => ({ filter, options: { qos: 1 } }));
    if (deps.doorEvents) this.unsubscribe.push(deps.doorEvents.on('alarm', (door, type, data, at) => this.publishAlarm(door, type, data, at)));
  }

  subscriptions(): readonly HandlerSubscription[] {
    return this.filters;
  }

  onConnect(): void {
    this.publishAgentLockdown();
  }

  stop(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }

  /** Retained `P/agents/<id>/lockdown/state`: the agent-wide lockdown as this agent holds it. */
  publishAgentLockdown(): void {
    const { client, topics, lockdowns } = this.deps;
    if (!client.connected) return;
    this.deps.refusals.publishQuietly(client, topics.agentLockdownState, lockdownStatePayload(lockdowns.get('agent')), { qos: 1, retain: true });
  }

  /**
   * `P/doors/<uuid>/alarm`, QoS 1, at once (when connected; the audit event follows through the outbox regardless).
   * Alarms are raised from recorded events, so a flood is limited here exactly as in the audit log (door/inputFloods.ts:
   * the first ten of a type a minute, then one summary); duress is never limited.
   */
  publishAlarm(door: string, type: string, data: Record<string, unknown>, at: number): void {
    const { client, topics } = this.deps;
    if (!client.connected) return;
    this.deps.refusals.publishQuietly(client, topics.alarm(door), alarmPayload(door, type, data, at), { qos: 1 });
  }

  onMessage(topic: string, payload: Buffer): void {
    const target = this.scopes.get(topic);
    if (target) return this.onLockdown(target.key, target.scope, payload);
    if (topic === this.deps.topics.holidays) this.onHolidays(payload);
  }

  private onLockdown(key: LockdownScopeKey, scope: LockdownScope, payload: Buffer): void {
    const { logger, lockdowns } = this.deps;
    const message = parseLockdownMessage(scope, payload, this.deps.secret);
    if (isRetainedRefusal(message)) return void logger.warn({ topic: this.topicOf(key), scope: key, reason: message.refused }, 'lockdown message refused');
    if (this.tooOld(message.issuedAt)) {
      return void logger.warn(
        { scope: key, issuedAt: message.issuedAt, maxAgeSeconds: this.deps.retainedMaxAgeSeconds },
        'lockdown message refused: signed longer ago than mqtt.retainedMaxAgeSeconds (a replay?)',
      );
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
      logger.warn(
        { scope: key, issuedAt: request.issuedAt, held: lockdowns.get(key).issuedAt },
        'lockdown message refused: older than the one in force (a replay?)',
      );
    }
    if (key === 'agent' && outcome !== 'stale') this.publishAgentLockdown();
  }

  private onHolidays(payload: Buffer): void {
    const { logger } = this.deps;
    const message = parseHolidaysMessage(payload, this.deps.secret);
    if (isRetainedRefusal(message)) return void logger.warn({ topic: this.deps.topics.holidays, reason: message.refused }, 'holidays message refused');
    if (this.tooOld(message.issuedAt)) {
      return void logger.warn(
        { issuedAt: message.issuedAt, maxAgeSeconds: this.deps.retainedMaxAgeSeconds },
        'holidays message refused: signed longer ago than mqtt.retainedMaxAgeSeconds (a replay?)',
      );
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
