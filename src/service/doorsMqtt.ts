import { randomBytes, randomUUID } from 'node:crypto';
import type { MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { MqttOptions } from '../protocol/options.js';
import { readCommandSecret, type Env } from '../util/secretFiles.js';
import { sign, signedString } from '../protocol/signing.js';
import { guestLinkPayload, guestLinkRevocationPayload } from '../protocol/guestLinks.js';
import { guestLinkIndexPayload, guestLinkIndexTopic } from '../protocol/guestLinkIndex.js';
import { clientOptions, connectWithBackoff } from '../protocol/connection.js';
import { DoorTopics } from '../protocol/topics.js';
import {
  holidaysPayload,
  holidaysTopic,
  lockdownPayload,
  lockdownTopic,
  type HolidaysMessage,
  type LockdownMessage,
  type LockdownScope,
} from '../protocol/lockdown.js';
import { revisionPayload } from '../protocol/directory.js';
import type { DirectoryRevision } from './directory.js';
import type { StoredLink } from './linkStore.js';

export interface DoorReply {
  status: number;
  body: Record<string, unknown>;
}

/** Every live guest link and revocation is signed and published again this often (doors allow 7 days by default). */
const RESIGN_INTERVAL_MS = 24 * 3600 * 1000;
/** The guest-link index's own issued_at sequence (never a magic_link_id: those are numbers). */
const INDEX_SUBJECT = 'index';

/**
 * Retained state the service owns besides guest links (issue 14), read again at every connect and daily re-signing.
 * Each call issues a new issued_at per message and persists it first, so what goes out is always newer than what
 * went out before, across restarts of the service too.
 */
export interface RetainedState {
  /** Every stored lockdown, active or ended (unsigned, only the active ones are sent again: see publishAllState). */
  lockdowns(): Array<{ scope: LockdownScope; message: LockdownMessage; issuedAt: number }>;
  /** The holidays of server.holidaysFile; null without one (nothing is published then). */
  holidays(): { message: HolidaysMessage; issuedAt: number } | null;
}

const NO_RETAINED_STATE: RetainedState = { lockdowns: () => [], holidays: () => null };

/**
 * The service's side of MQTT: lock commands to the doors (signed when the file names a command secret), with
 * MQTT 5 request/response to wait for each door's reply; guest links, lockdowns and holidays published retained.
 */
export class ServiceMqtt {
  private readonly client: MqttClient;
  private readonly topics: DoorTopics;
  private readonly replyTopic: string;
  private readonly pending = new Map<string, (reply: DoorReply) => void>();
  private readonly secret: string | null;
  private readonly protocolVersion: 4 | 5;
  private latestRevision: DirectoryRevision | null = null;
  private readonly lastIssuedAt = new Map<string, number>();
  private readonly resign: NodeJS.Timeout;
  /** Topic filters others watch (the console's live view) and who gets their messages. */
  private readonly watchers: Array<{ filters: string[]; onMessage: (topic: string, payload: Buffer) => void }> = [];

  constructor(
    config: MqttOptions,
    env: Env,
    private readonly logger: Logger,
    private readonly links: () => StoredLink[],
    /** The ids of links revoked at the doors: their tombstones are published again on every connect. */
    private readonly revokedLinks: () => string[] = () => [],
    resignIntervalMs = RESIGN_INTERVAL_MS,
    /** Lockdowns and holidays, published again on every connect. */
    private readonly retainedState: RetainedState = NO_RETAINED_STATE,
  ) {
    this.topics = new DoorTopics(config.topicPrefix);
    this.replyTopic = `${config.topicPrefix}/service/replies/${randomBytes(6).toString('hex')}`;
    this.secret = readCommandSecret(config.commandSecretFile);
    this.protocolVersion = config.protocolVersion;
    const options = clientOptions(config, env, { clientId: `door-agent-service-${randomBytes(4).toString('hex')}` });
    this.client = connectWithBackoff(config.url, options, logger);
    this.client.on('connect', () => void this.onConnect());
    this.resign = setInterval(() => {
      if (!this.client.connected) return;
      this.publishAllLinks();
      this.publishAllState();
    }, resignIntervalMs);
    this.resign.unref();
    // Replies are matched by the request_id the door echoes (MQTT 5 also carries correlation data; with MQTT
    // 3.1.1 the replies come on P/doors/<uuid>/reply).
    this.client.on('message', (topic, payload) => {
      // Each watcher sees every message and keeps the topics it knows (theirs and the replies never overlap).
      for (const watcher of this.watchers) watcher.onMessage(topic, payload);
      // Only a reply resolves a command (an audit event may carry the same request_id).
      if (topic !== this.replyTopic && !(topic.startsWith(`${this.topics.prefix}/doors/`) && topic.endsWith('/reply'))) return;
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(payload.toString('utf8')) as Record<string, unknown>;
      } catch {
        return;
      }
      const resolve = typeof body.request_id === 'string' ? this.pending.get(body.request_id) : undefined;
      resolve?.({ status: typeof body.status === 'number' ? body.status : 502, body });
    });
  }

  private async onConnect(): Promise<void> {
    try {
      await this.client.subscribeAsync([this.replyTopic, this.topics.allReplies, ...this.watchers.flatMap((w) => w.filters)], { qos: 1 });
      this.publishAllLinks();
      this.publishAllState();
      if (this.latestRevision) this.publishRevision(this.latestRevision);
      this.logger.info('connected to the broker');
    } catch (err) {
      this.logger.warn({ err }, 'broker session setup interrupted');
    }
  }

  /**
   * Every live link and every revocation, signed now. On each connect: links stored while the broker was away
   * (or before MQTT was configured) reach the doors, and so do the revocations made meanwhile (a tombstone never
   * published would leave the old link retained). And once a day: in signed mode a door lets a link's signature
   * age only mqtt.guestLinkMaxAgeSeconds, so a replayed old link stops working while the live ones are renewed.
   */
  private publishAllLinks(): void {
    const live = this.links();
    const liveIds = new Set(live.map((l) => l.magic_link_id));
    for (const id of this.revokedLinks()) if (!liveIds.has(id)) this.sendRevocation(id);
    for (const link of live) this.sendLink(link);
    this.publishIndex(live);
  }

  /**
   * Retained P/guest-link-index: the ids of every live link (protocol/guestLinkIndex.ts), after the links' own
   * messages; a door in signed mode drops the links it holds that the index no longer lists.
   */
  private publishIndex(live: StoredLink[] = this.links()): void {
    if (!this.client.connected) return;
    const payload = guestLinkIndexPayload(
      live.map((l) => l.magic_link_id),
      this.secret,
      this.issuedAt(INDEX_SUBJECT),
    );
    this.client.publish(guestLinkIndexTopic(this.topics.prefix), payload, { qos: 1, retain: true });
  }

  /**
   * Every stored lockdown and the holidays, each with a new issued_at. Only while connected: an issued_at is
   * spent on a message that goes out, and the next connect sends them all anyway.
   */
  private publishAllState(): void {
    let lockdowns: ReturnType<RetainedState['lockdowns']>;
    let holidays: ReturnType<RetainedState['holidays']>;
    try {
      lockdowns = this.retainedState.lockdowns();
      holidays = this.retainedState.holidays();
    } catch (err) {
      // The database, not the broker: the doors keep what the broker holds retained until the next connect.
      this.logger.error({ err }, 'cannot read the lockdowns and holidays to publish them again');
      return;
    }
    // Unsigned, the lockdown topics are shared with anyone on the broker (a Home Assistant switch): sending an ended
    // lockdown again would lift one started there since. Only an active one is sent again (it must not be lost; an
    // end that a door missed leaves it locked down, the safe side). Signed, every message is ours and the newest wins.
    for (const l of lockdowns) if (this.secret !== null || l.message.lockdown) this.publishLockdown(l.scope, l.message, l.issuedAt);
    if (holidays)
      this.client.publish(holidaysTopic(this.topics.prefix), holidaysPayload(holidays.message, this.secret, holidays.issuedAt), { qos: 1, retain: true });
  }

  /**
   * A lockdown's start or end, retained on P/doors/<uuid>/lockdown or P/agents/<id>/lockdown (signed in signed
   * mode). `issuedAt` comes from the lockdowns table, strictly increasing per scope. Returns false when the
   * broker is not connected: the message then goes out (newly issued) at the next connect.
   */
  publishLockdown(scope: LockdownScope, message: LockdownMessage, issuedAt: number): boolean {
    if (!this.client.connected) return false;
    this.client.publish(lockdownTopic(this.topics.prefix, scope), lockdownPayload(scope, message, this.secret, issuedAt), { qos: 1, retain: true });
    return true;
  }

  /** A link created or changed: its message, then the index. */
  publishGuestLink(link: StoredLink): void {
    this.sendLink(link);
    this.publishIndex();
  }

  private sendLink(link: StoredLink): void {
    if (!this.client.connected) return; // published at the next connect
    const payload = guestLinkPayload({ ...link }, this.secret, this.issuedAt(link.magic_link_id));
    this.client.publish(this.topics.guestLink(link.magic_link_id), payload, { qos: 1, retain: true });
  }

  /**
   * issued_at (unix seconds) for the next message about a link: strictly after the last one, so a revocation or
   * an update in the same second as the message before it is newer, and a replay of that one is refused as stale.
   */
  private issuedAt(id: string): number {
    const at = Math.max(Math.floor(Date.now() / 1000), (this.lastIssuedAt.get(id) ?? 0) + 1);
    this.lastIssuedAt.set(id, at);
    return at;
  }

  /** Retained, so an agent connecting later compares at once; the latest only. With its history and tag. */
  publishRevision(revision: DirectoryRevision): void {
    this.latestRevision = revision;
    if (this.client.connected) this.client.publish(this.topics.directoryRevision, revisionPayload(revision), { qos: 1, retain: true });
  }

  /** A link revoked: its tombstone (or empty payload), then the index. */
  revokeGuestLink(id: string): void {
    this.sendRevocation(id);
    this.publishIndex();
  }

  private sendRevocation(id: string): void {
    // Retained too, so that a broker that kept the old link forgets it. Without a secret it is the empty payload
    // (agents away now reconcile on reconnect); with one, a signed tombstone the doors can believe.
    const payload = guestLinkRevocationPayload(id, this.secret, this.issuedAt(id));
    if (this.client.connected) this.client.publish(this.topics.guestLink(id), payload, { qos: 1, retain: true });
  }

  /** Sends a lock command to a door and waits for its reply; 504 when it does not answer in time. */
  async command(uuid: string, lockState: boolean, unlockTime: number | undefined, timeoutMs: number): Promise<DoorReply> {
    if (!this.client.connected) return { status: 503, body: { error: 'the MQTT broker is not reachable: no command can reach the door' } };
    const correlation = randomBytes(16);
    const requestId = randomUUID();
    const issuedAt = Math.floor(Date.now() / 1000);
    const payload: Record<string, unknown> = { uuid, lock_state: lockState, request_id: requestId };
    if (unlockTime !== undefined) payload.unlock_time = unlockTime;
    if (this.secret !== null) {
      payload.issued_at = issuedAt;
      payload.signature = sign(this.secret, signedString({ uuid, lockState, unlockTime, requestId, issuedAt }));
    }
    const id = requestId;
    const reply = new Promise<DoorReply>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ status: 504, body: { error: `the door did not answer within ${timeoutMs / 1000} s` } });
      }, timeoutMs);
      this.pending.set(id, (r) => {
        clearTimeout(timer);
        this.pending.delete(id);
        resolve(r);
      });
    });
    await this.client.publishAsync(this.topics.set(uuid), JSON.stringify(payload), {
      qos: 1,
      properties: this.protocolVersion === 5 ? { responseTopic: this.replyTopic, correlationData: correlation } : undefined,
    });
    return reply;
  }

  /** Subscribes to `filters` on this connection (now and at every connect) and hands their messages to `onMessage`. */
  watch(filters: string[], onMessage: (topic: string, payload: Buffer) => void): void {
    this.watchers.push({ filters, onMessage });
    if (this.client.connected) this.client.subscribeAsync(filters, { qos: 1 }).catch((err: unknown) => this.logger.warn({ err }, 'cannot subscribe'));
  }

  /** Whether the broker is connected now (a command sent otherwise cannot reach a door). */
  get connected(): boolean {
    return this.client.connected;
  }

  async close(): Promise<void> {
    clearInterval(this.resign);
    await this.client.endAsync().catch(() => undefined);
  }
}
