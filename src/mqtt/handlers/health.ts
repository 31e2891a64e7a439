import type { MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { DoorEvents } from '../../door/doorEvents.js';
import { healthPayload, type DoorHealth, type Health } from '../../protocol/health.js';
import type { Topics } from '../../protocol/topics.js';
import type { Clock, Timers } from '../../util/clock.js';
import { eventLoopLag, type EventLoopLag } from '../../util/eventLoopLag.js';
import type { BrokerRefusals } from '../brokerRefusals.js';
import type { HandlerSubscription, MqttHandler } from '../handler.js';
import type { MqttDoor } from './mqttDoor.js';
import type { CacheRebuild } from '../../store/cacheAudit.js';

/** The health goes out this often, whatever changed (the event loop's lag is measured over this period). @internal */
export const HEALTH_PERIOD_MS = 60_000;
/** Changes (door states, readers, clock) are published at most this often: a flood of changes is one message a second. */
const MIN_GAP_MS = 1000;

/** What the health reports that MQTT does not hold itself (the composition root reads it from the cache and the clock). */
export interface HealthSources {
  /**
   * The directory revision the cache holds and when the cache was last refreshed (wall ms; null: never); while the
   * cache is damaged, since when (wall ms) and what SQLite said.
   */
  cache: () => { revision: number | null; refreshedAt: number | null; damaged?: { since: number; error: string } | null };
  clockTrusted: () => boolean;
  /** Calls `listener` when the clock's trust may have changed. */
  onClockChange?: (listener: () => void) => void;
  /** Calls `listener` when the cache is found damaged or rebuilt. */
  onCacheChange?: (listener: () => void) => void;
  /** How a damaged cache is rebuilt: `automatic` from the service, `manual` without one (shown with the damage). */
  cacheRebuild?: CacheRebuild;
}

export interface HealthDeps {
  client: MqttClient;
  topics: Topics;
  version: string;
  doors: readonly MqttDoor[];
  /** Audit events the broker has not acknowledged yet. */
  outboxDepth: () => number;
  sources?: HealthSources;
  /** Lock, position and reader changes: a health message follows (coalesced). */
  doorEvents?: DoorEvents;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  refusals: BrokerRefusals;
  /** The process's figures (tests give their own). */
  process?: { uptimeSeconds: () => number; memory: () => { rss: number; heapUsed: number }; lag: () => EventLoopLag };
}

const systemProcess = {
  uptimeSeconds: () => process.uptime(),
  memory: () => process.memoryUsage(),
  lag: eventLoopLag,
};

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * Retained `P/agents/<id>/health` (QoS 1): every HEALTH_PERIOD_MS, at each connect, and after a change of a
 * door's state, a reader's connection or the clock's trust (at most once a second). Every value is read when
 * the message is built, so the taps and the relays do no work for it. Never queued: while the broker is away
 * nothing is published (the message built at the next connect is the latest), and at most one health message
 * waits for its PUBACK at a time (one that was in flight when the connection dropped is sent again by the client
 * and followed by a fresh one). Health is not an audit event: it never enters the outbox.
 */
export class HealthHandler implements MqttHandler {
  readonly name = 'health';
  private readonly unsubscribe: Array<() => void> = [];
  private readonly lag: EventLoopLag;
  private readonly proc: NonNullable<HealthDeps['process']>;
  private periodTimer: unknown = null;
  private changeTimer: unknown = null;
  private lastPublishedAt = Number.NEGATIVE_INFINITY;
  private inFlight = false;
  /** A message is due that could not go out (one in flight): the slot, published fresh once the PUBACK comes. */
  private due = false;
  private stopped = false;
  private gatherFailed = false;
  /** When the process started (wall ms), as last published. */
  private startedAt: number | null = null;

  constructor(private readonly deps: HealthDeps) {
    this.proc = deps.process ?? systemProcess;
    this.lag = this.proc.lag();
    const changed = () => this.changed();
    if (deps.doorEvents) {
      this.unsubscribe.push(deps.doorEvents.on('lock', changed), deps.doorEvents.on('position', changed), deps.doorEvents.on('reader', changed));
    }
    deps.sources?.onClockChange?.(changed);
    deps.sources?.onCacheChange?.(changed);
    this.armPeriod();
  }

  /** Publishes only. */
  subscriptions(): readonly HandlerSubscription[] {
    return [];
  }

  onConnect(): void {
    this.publish();
  }

  stop(): void {
    this.stopped = true;
    for (const off of this.unsubscribe.splice(0)) off();
    for (const timer of [this.periodTimer, this.changeTimer]) if (timer !== null) this.deps.timers.clearTimeout(timer);
    this.periodTimer = this.changeTimer = null;
    this.lag.stop();
  }

  /** Something the health shows changed: published after the call that said so, at most once a second. */
  changed(): void {
    if (this.stopped || this.changeTimer !== null) return;
    const wait = Math.max(0, this.lastPublishedAt + MIN_GAP_MS - this.deps.clock.monoNow());
    this.changeTimer = this.deps.timers.setTimeout(() => {
      this.changeTimer = null;
      this.publish();
    }, wait);
  }

  /** The health as it is now. */
  gather(): Health {
    const { deps } = this;
    const now = deps.clock.wallNow();
    const doors = deps.doors.map((d) => doorHealth(d));
    const perDoor: Record<string, boolean> = {};
    for (const d of doors) if (d.reader_online !== null) perDoor[d.uuid] = d.reader_online;
    const cache = deps.sources?.cache() ?? { revision: null, refreshedAt: null };
    const memory = this.proc.memory();
    return {
      at: new Date(now).toISOString(),
      uptime_s: Math.floor(this.proc.uptimeSeconds()),
      started_at: new Date(this.started(now)).toISOString(),
      version: deps.version,
      outbox_depth: deps.outboxDepth(),
      cache: {
        revision: cache.revision,
        age_s: cache.refreshedAt === null ? null : Math.max(0, Math.floor((now - cache.refreshedAt) / 1000)),
        damaged: cache.damaged
          ? { since: new Date(cache.damaged.since).toISOString(), error: cache.damaged.error, rebuild: deps.sources?.cacheRebuild ?? 'manual' }
          : null,
      },
      readers: { online: Object.values(perDoor).filter(Boolean).length, total: Object.keys(perDoor).length, per_door: perDoor },
      clock_trusted: deps.sources?.clockTrusted() ?? false,
      doors,
      memory: { rss: memory.rss, heap_used: memory.heapUsed },
      event_loop_lag_p99_ms: this.lag.p99Ms(),
    };
  }

  /**
   * The start: now less the uptime, kept as it was while it moves by less than 2 s (the two clocks are read a moment
   * apart), so Home Assistant's sensor does not change with each message; taken again when the wall clock was set.
   */
  private started(now: number): number {
    const startedAt = now - this.proc.uptimeSeconds() * 1000;
    if (this.startedAt === null || Math.abs(startedAt - this.startedAt) >= 2000) this.startedAt = Math.round(startedAt);
    return this.startedAt;
  }

  private armPeriod(): void {
    this.periodTimer = this.deps.timers.setTimeout(() => {
      this.publish();
      this.lag.reset(); // the next message measures the next period
      this.armPeriod();
    }, HEALTH_PERIOD_MS);
    (this.periodTimer as { unref?: () => void }).unref?.();
  }

  private publish(): void {
    const { client, topics, refusals, logger } = this.deps;
    if (this.stopped) return;
    this.lastPublishedAt = this.deps.clock.monoNow();
    if (!client.connected) return; // nothing is queued: the next connect publishes the health of that moment
    if (this.inFlight) {
      this.due = true;
      return;
    }
    let payload: string;
    try {
      payload = healthPayload(this.gather());
      this.gatherFailed = false;
    } catch (err) {
      if (!this.gatherFailed) logger.warn({ err }, 'cannot gather the health message: not published (tried again at the next change or period)');
      this.gatherFailed = true;
      return;
    }
    this.inFlight = true;
    this.due = false;
    const settled = () => {
      this.inFlight = false;
      if (this.due) this.changed();
    };
    refusals.publish(client, topics.health, payload, { qos: 1, retain: true }).then(settled, settled);
  }
}

function doorHealth(d: MqttDoor): DoorHealth {
  const lock = d.controller.snapshot();
  const contact = d.contact();
  const operations = d.operations?.();
  return {
    uuid: d.door.uuid,
    name: d.door.name,
    lock: lock.state,
    relock_at: iso(lock.relockAt),
    open: contact === null ? null : contact === 'OPEN',
    lockdown: operations?.lockdown.active ?? d.lockdown?.() ?? false,
    tamper: operations?.tamper ?? null,
    schedule: operations?.schedule?.state ?? null,
    reader_online: d.readerOnline?.() ?? null,
  };
}
