import type { IPublishPacket, MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { DoorOptions } from '../door/options.js';
import type { LockController, LockSnapshot } from '../door/lockController.js';
import type { EventLog, WireEvent } from '../store/eventLog.js';
import type { GuestLinkStore } from '../store/guestLinkStore.js';
import type { PendingWrites } from '../store/pendingWrites.js';
import type { ReplayCache } from '../store/replayCache.js';
import { systemTimers, type Clock, type Timers } from '../util/clock.js';
import { isCommandError, parseCommand, type CommandError, type LockAction } from './commands.js';
import { discoveryMessages } from './discovery.js';
import { isRefusal, parseGuestLinkMessage } from '../protocol/guestLinks.js';
import { RejectionLog } from './rejections.js';
import type { RetainedClock } from './retainedClock.js';
import { OutboxPublisher } from './outboxPublisher.js';
import { BrokerRefusals } from './brokerRefusals.js';
import type { Topics } from '../protocol/topics.js';

export interface BridgedDoor {
  door: DoorOptions;
  controller: LockController;
  contact: () => 'OPEN' | 'CLOSED' | null;
  /** In lockdown, remote unlocks are refused (409). */
  lockdown?: () => boolean;
  /** More of the door's published state: lockdown, tamper, unlock schedule. */
  extraState?: () => Record<string, unknown>;
}

export interface BridgeDeps {
  client: MqttClient;
  topics: Topics;
  doors: readonly BridgedDoor[];
  events: EventLog;
  guestLinks: GuestLinkStore;
  replay: ReplayCache;
  /** Where cache writes wait while the database is busy or full (absent: written directly). */
  writes?: PendingWrites;
  /** The command secret when commands must be signed (mqtt.commandSecretFile). */
  secret: string | null;
  maxAgeSeconds: number;
  /** Signed mode: a guest link signed longer ago than this is refused, and a stored one expires this long after its signature. */
  guestLinkMaxAgeSeconds?: number;
  /** Orders guest links' issued_at with times from the future clamped (absent: compared as given). */
  times?: RetainedClock;
  homeAssistant: { discovery: boolean; prefix: string };
  version: string;
  clock: Clock;
  timers?: Timers;
  logger: Logger;
  onSyncRequest?: () => void;
  /** A `P/directory/revision` message (only subscribed when given: with a service configured). */
  onDirectoryRevision?: (payload: Buffer) => void;
  /** Where the broker's refusals (PUBACK, SUBACK >= 0x80) are reported; the component shares one with the operations bridge. */
  refusals?: BrokerRefusals;
}

const RECENT_MESSAGE_IDS = 256;
/** Refused commands are recorded at most once per door per minute (the rest counted in a summary). */
const REJECTION_WINDOW_MS = 60_000;
const LINK_SETTLE_MS = 3000;

/**
 * The agent on the broker: commands in (replied to, never from a retained message, never twice), retained
 * door state and availability out, the event outbox drained, guest links in, Home Assistant discovery.
 */
export class MqttBridge {
  private readonly byUuid = new Map<string, BridgedDoor>();
  private readonly outbox: OutboxPublisher;
  private readonly executedMessageIds: number[] = [];
  private readonly rejections: RejectionLog;
  private readonly refusals: BrokerRefusals;

  constructor(private readonly deps: BridgeDeps) {
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
    this.refusals = deps.refusals ?? new BrokerRefusals({ logger: deps.logger, wallNow: () => deps.clock.wallNow() });
    for (const d of deps.doors) this.byUuid.set(d.door.uuid, d); // configured UUIDs are lower case
    this.outbox = new OutboxPublisher(deps.events, (event) => this.publishEvent(event), { logger: deps.logger, clock: deps.clock, timers: deps.timers });
    const { client } = deps;
    client.on('connect', () => void this.onConnect());
    client.on('close', () => this.outbox.stop());
    client.on('message', (topic, payload, packet) => this.onMessage(topic, payload, packet));
  }

  /** An event was appended to the log. */
  eventAppended(): void {
    this.outbox.kick();
  }

  private session = 0;
  private linksThisSession = new Set<string>();
  private reconcileTimer: NodeJS.Timeout | null = null;

  private async onConnect(): Promise<void> {
    const { client, topics, logger } = this.deps;
    const session = ++this.session;
    this.linksThisSession = new Set();
    try {
      // A topic the broker refuses (its ACL) is reported and never stops the others: subscriptions, discovery,
      // state, availability and events each go on without it.
      await this.refusals.subscribe(
        client,
        [...this.byUuid.values()]
          .map((d) => topics.set(d.door.uuid))
          .concat(topics.sync, topics.guestLinks, this.deps.onDirectoryRevision ? [topics.directoryRevision] : []),
        // Retain as published (MQTT 5): a retained command published while we are connected still says retain,
        // so it is refused like one delivered at subscribe time.
        { qos: 1, rap: true },
      );
      if (this.deps.homeAssistant.discovery) {
        const messages = discoveryMessages({ haPrefix: this.deps.homeAssistant.prefix, topics, doors: this.deps.doors.map((d) => d.door), version: this.deps.version, signed: this.deps.secret !== null });
        await Promise.all(messages.map((m) => this.refusals.publish(client, m.topic, JSON.stringify(m.payload), { qos: 1, retain: true })));
      }
      for (const d of this.byUuid.values()) this.publishState(d.door.uuid);
      await this.refusals.publish(client, topics.status, 'online', { qos: 1, retain: true });
      if (session !== this.session) return; // a newer connection took over while this one was set up
      logger.info({ doors: this.byUuid.size }, 'connected to the broker');
      this.outbox.start();
      this.scheduleReconcile(session);
    } catch (err) {
      logger.warn({ err }, 'broker session setup interrupted; retrying on reconnect');
    }
  }

  /**
   * A revocation (empty retained payload) made while the agent was away is never delivered later: the broker
   * just has no retained link any more. So once the retained links of this connection have arrived (3 s
   * without another one), links received over MQTT earlier that the broker no longer holds are removed.
   */
  private scheduleReconcile(session: number): void {
    if (this.reconcileTimer) clearTimeout(this.reconcileTimer);
    // Signed mode: revocations are signed retained tombstones, and the absence of a retained link proves nothing
    // (any client can clear one), so nothing is removed on that ground.
    if (this.deps.secret !== null) return;
    this.reconcileTimer = setTimeout(() => {
      this.reconcileTimer = null;
      if (session !== this.session || !this.deps.client.connected) return;
      const keep = new Set(this.linksThisSession);
      this.write('guest-links-reconcile', () => {
        const removed = this.deps.guestLinks.removeMqttLinksExcept(keep);
        if (removed.length > 0) this.deps.logger.info({ guestLinks: removed }, 'guest links revoked while the agent was away removed');
      });
    }, LINK_SETTLE_MS);
    this.reconcileTimer.unref();
  }

  /** Retained `P/doors/<uuid>/state`; only the controller's own state is published, never a guess. */
  publishState(uuid: string): void {
    const d = this.byUuid.get(uuid.toLowerCase());
    if (!d || !this.deps.client.connected) return;
    const s: LockSnapshot = d.controller.snapshot();
    const payload = {
      state: s.state,
      relock_at: s.relockAt === null ? null : new Date(s.relockAt).toISOString(),
      door: d.contact(),
      changed_at: new Date(s.changedAt).toISOString(),
      cause: s.cause,
      ...d.extraState?.(),
    };
    this.refusals.publishQuietly(this.deps.client, this.deps.topics.state(d.door.uuid), JSON.stringify(payload), { qos: 1, retain: true });
  }

  /** True on PUBACK, false when the broker refused it (it stays in the outbox); rejects when the connection failed. */
  private publishEvent(event: WireEvent): Promise<boolean> {
    if (!this.deps.client.connected) return Promise.reject(new Error('not connected'));
    return this.refusals.publish(this.deps.client, this.deps.topics.events(event.door ?? 'agent'), JSON.stringify(event), { qos: 1 });
  }

  private onMessage(topic: string, payload: Buffer, packet: IPublishPacket): void {
    const { topics, logger } = this.deps;
    try {
      const door = topics.doorOfCommand(topic);
      if (door !== null) return this.onCommand(door, payload, packet);
      const linkId = topics.guestLinkOf(topic);
      if (linkId !== null) return this.onGuestLink(linkId, payload);
      if (topic === topics.directoryRevision) return this.deps.onDirectoryRevision?.(payload);
      if (topic === topics.sync) {
        if (packet.retain) return;
        if (this.deps.onSyncRequest) this.deps.onSyncRequest();
        else logger.info('sync requested over MQTT, but no service is configured: nothing to sync');
      }
    } catch (err) {
      logger.error({ err, topic }, 'cannot handle MQTT message');
    }
  }

  /** A cache write that waits in memory while the database is busy or full (when the daemon gave a queue). */
  private write(key: string, write: () => void): void {
    if (this.deps.writes) this.deps.writes.run(key, write);
    else write();
  }

  private reject(doorUuid: string, error: CommandError, packet: IPublishPacket, reply: boolean): void {
    this.deps.logger.warn({ door: doorUuid, status: error.status, error: error.error, requestId: error.requestId }, 'command rejected');
    this.rejections.reject(doorUuid, error);
    if (reply) this.reply(doorUuid, packet, { status: error.status, error: error.error }, error.requestId);
  }

  private reply(doorUuid: string, packet: IPublishPacket, body: Record<string, unknown>, requestId: string | null): void {
    const responseTopic = packet.properties?.responseTopic;
    const correlationData = packet.properties?.correlationData;
    const message = JSON.stringify(requestId === null ? body : { ...body, request_id: requestId });
    this.refusals.publishQuietly(this.deps.client, responseTopic ?? this.deps.topics.reply(doorUuid), message, {
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
    if (!parsed.action.lock && d.lockdown?.()) {
      return this.reject(d.door.uuid, { status: 409, error: `${d.door.name} is in lockdown: unlock refused`, requestId: parsed.requestId }, packet, true);
    }
    const cause = `remote command${parsed.requestId ? ` ${parsed.requestId}` : ''}`;
    const result = this.execute(d, parsed.action, cause);
    if (packet.messageId !== undefined) {
      this.executedMessageIds.push(packet.messageId);
      if (this.executedMessageIds.length > RECENT_MESSAGE_IDS) this.executedMessageIds.shift();
    }
    this.reply(d.door.uuid, packet, { status: 200, success: result }, parsed.requestId);
  }

  /** Moves the relay and returns the reply message naming the door and its resulting state. */
  private execute(d: BridgedDoor, action: LockAction, cause: string): string {
    const { door, controller } = d;
    if (action.lock) {
      controller.lock(cause);
      return `${door.name} locked`;
    }
    const seconds = action.seconds === 'default' ? door.unlockSeconds : action.seconds;
    const s = controller.unlock(seconds, cause);
    if (s.relockAt === null) return `${door.name} unlocked until locked (held open)`;
    const remaining = Math.max(1, Math.round((s.relockAt - this.deps.clock.wallNow()) / 1000));
    return `${door.name} unlocked for ${remaining} s`;
  }

  private onGuestLink(id: string, payload: Buffer): void {
    const { logger, guestLinks } = this.deps;
    const message = parseGuestLinkMessage(id, payload, this.deps.secret);
    if (isRefusal(message)) {
      // Still counts as present on the broker: an unreadable retained link is not proof of a revocation.
      if (payload.length > 0) this.linksThisSession.add(id);
      return void logger.warn({ topic: this.deps.topics.guestLink(id), guestLink: id, reason: message.refused }, 'guest link refused');
    }
    // An issued_at from the future counts as now + mqtt.futureSkewSeconds: a later revocation overtakes it.
    let { issuedAt } = message;
    let future: number | null = null;
    if (issuedAt !== null && this.deps.times) {
      const ordered = this.deps.times.order('guest_links', guestLinks.versionOf(id), issuedAt);
      if (ordered.clamped && ordered.order !== 'newer') {
        if (message.kind === 'link') this.linksThisSession.add(id);
        // 'same': the retained message delivered again (a reconnect); 'stale': an older one from the future.
        if (ordered.order === 'stale') logger.warn({ guestLink: id, issuedAt }, 'guest link message refused: older than one from the future already applied (a replay?)');
        return;
      }
      ({ issuedAt, future } = ordered.next);
    }
    if (message.kind === 'revoke') {
      this.linksThisSession.delete(id);
      this.write(`guest-link-${id}`, () => logger.info({ guestLink: id, result: guestLinks.revoke(id, issuedAt, future) }, 'guest link revoked'));
      return;
    }
    this.linksThisSession.add(id);
    if (this.reconcileTimer) this.scheduleReconcile(this.session); // still arriving: wait for the burst to end
    // Signed mode: a signature is good for guestLinkMaxAgeSeconds. The service signs every live link again each
    // day; a link captured from the broker and replayed after its revocation (to a door that missed the
    // tombstone) is refused once older than that, and one stored stops opening then.
    const maxAgeMs = this.deps.secret !== null && issuedAt !== null ? (this.deps.guestLinkMaxAgeSeconds ?? 7 * 86_400) * 1000 : null;
    const validUntil = maxAgeMs === null ? null : issuedAt! * 1000 + maxAgeMs;
    if (validUntil !== null && validUntil <= this.deps.clock.wallNow()) {
      return void logger.warn({ guestLink: id, issuedAt: message.issuedAt }, 'guest link refused: signed longer ago than mqtt.guestLinkMaxAgeSeconds (a replay?)');
    }
    this.write(`guest-link-${id}`, () => {
      const result = guestLinks.store(message.link, issuedAt, validUntil, future);
      if (result === 'over_budget') logger.warn({ guestLink: id }, 'guest link refused: the cache holds the most guest links allowed (mqtt.maxGuestLinks)');
      else logger.info({ guestLink: id, result }, 'guest link received');
    });
  }

  /**
   * Graceful, and bounded: the doors (already locked by the caller) are published LOCKED, then retained
   * offline; a broker that does not answer within 2 s is dropped (the last will covers it).
   */
  async stop(): Promise<void> {
    this.outbox.stop();
    this.rejections.flush();
    if (this.reconcileTimer) clearTimeout(this.reconcileTimer);
    const { client, topics } = this.deps;
    const within = <T>(promise: Promise<T>, ms: number) =>
      Promise.race([promise.then(() => true, () => false), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
    if (client.connected) {
      for (const d of this.byUuid.values()) {
        const locked = { state: 'LOCKED', relock_at: null, door: d.contact(), changed_at: new Date(this.deps.clock.wallNow()).toISOString(), cause: 'agent stopped' };
        client.publish(topics.state(d.door.uuid), JSON.stringify(locked), { qos: 1, retain: true });
      }
      await within(client.publishAsync(topics.status, 'offline', { qos: 1, retain: true }), 1000);
    }
    if (!(await within(client.endAsync(false), 1000))) await within(client.endAsync(true), 500);
  }
}
