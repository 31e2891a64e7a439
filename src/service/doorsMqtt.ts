import { randomBytes, randomUUID } from 'node:crypto';
import type { MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { MqttOptions } from '../protocol/options.js';
import { readCommandSecret, type Env } from '../util/secretFiles.js';
import { sign, signedString } from '../protocol/signing.js';
import { clientOptions, connectWithBackoff } from '../protocol/connection.js';
import { DoorTopics } from '../protocol/topics.js';

export interface DoorReply {
  status: number;
  body: Record<string, unknown>;
}

/**
 * The service's connection to the broker, one per service process: lock commands to the doors (signed when the
 * file names a command secret), with MQTT 5 request/response to wait for each door's reply; the topics the console
 * watches; and the retained messages the publisher (statePublisher.ts, in the one process that holds the
 * publisher lock) sends.
 */
export class ServiceMqtt {
  readonly topics: DoorTopics;
  /** The command secret (mqtt.commandSecretFile): what signs commands and retained messages; null unsigned. */
  readonly secret: string | null;
  private readonly client: MqttClient;
  private readonly replyTopic: string;
  private readonly pending = new Map<string, (reply: DoorReply) => void>();
  private readonly protocolVersion: 4 | 5;
  /**
   * Topic filters others watch (the console's live view, the publisher's look at the retained guest links) and who
   * gets their messages; `retained`: given by the broker as a subscription was made (not published since).
   */
  private readonly watchers: Array<{ filters: string[]; onMessage: (topic: string, payload: Buffer, retained: boolean) => void }> = [];
  private readonly connectListeners: Array<() => void> = [];

  constructor(
    config: MqttOptions,
    env: Env,
    private readonly logger: Logger,
  ) {
    this.topics = new DoorTopics(config.topicPrefix);
    this.replyTopic = `${config.topicPrefix}/service/replies/${randomBytes(6).toString('hex')}`;
    this.secret = readCommandSecret(config.commandSecretFile);
    this.protocolVersion = config.protocolVersion;
    // A client id of its own per process: several service processes share the broker.
    const options = clientOptions(config, env, { clientId: `door-agent-service-${randomBytes(4).toString('hex')}` });
    this.client = connectWithBackoff(config.url, options, logger);
    this.client.on('connect', () => void this.onConnect());
    // Replies are matched by the request_id the door echoes (MQTT 5 also carries correlation data; with MQTT
    // 3.1.1 the replies come on P/doors/<uuid>/reply).
    this.client.on('message', (topic, payload, packet) => {
      // Each watcher sees every message and keeps the topics it knows (theirs and the replies never overlap).
      for (const watcher of this.watchers) watcher.onMessage(topic, payload, packet.retain);
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
      this.logger.info('connected to the broker');
    } catch (err) {
      this.logger.warn({ err }, 'broker session setup interrupted');
    }
    for (const listener of this.connectListeners) listener();
  }

  /** Calls `listener` after each connect (the publisher sends what is owed). */
  onConnected(listener: () => void): void {
    this.connectListeners.push(listener);
  }

  /**
   * A retained message, QoS 1: resolves once the broker has it (PUBACK), rejects when not connected or when no
   * PUBACK comes within `timeoutMs` (the caller keeps it owed and sends it again).
   */
  async publishRetained(topic: string, payload: string, timeoutMs: number): Promise<void> {
    if (!this.client.connected) throw new Error('the broker is not connected');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`the broker did not acknowledge ${topic} within ${timeoutMs / 1000} s`)), timeoutMs);
    });
    try {
      await Promise.race([this.client.publishAsync(topic, payload, { qos: 1, retain: true }), late]);
    } finally {
      clearTimeout(timer);
    }
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
      // MQTT 5: a broker (or a bridge's queue) drops the command once its caller has stopped waiting for it.
      properties:
        this.protocolVersion === 5
          ? { responseTopic: this.replyTopic, correlationData: correlation, messageExpiryInterval: Math.ceil(timeoutMs / 1000) }
          : undefined,
    });
    return reply;
  }

  /** Subscribes to `filters` on this connection (now and at every connect) and hands their messages to `onMessage`. */
  watch(filters: string[], onMessage: (topic: string, payload: Buffer) => void): void {
    this.watchers.push({ filters, onMessage });
    if (this.client.connected) this.client.subscribeAsync(filters, { qos: 1 }).catch((err: unknown) => this.logger.warn({ err }, 'cannot subscribe'));
  }

  /**
   * The ids of the guest links the broker retains a message for now (an empty one is not kept: it is a revocation),
   * as a new subscriber is given them: P/guest-links/+ is subscribed for the while, until no retained message has
   * come for `quietMs` (at most `maxMs`, or until `signal` aborts), then unsubscribed. Rejects when not connected or
   * when the broker refuses the subscription (its ACL).
   */
  async retainedGuestLinks(quietMs: number, maxMs: number, signal: AbortSignal): Promise<string[]> {
    if (!this.client.connected) throw new Error('the broker is not connected');
    const filter = this.topics.guestLinks;
    const ids = new Set<string>();
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => {
      finish = resolve;
    });
    let quiet: NodeJS.Timeout | undefined;
    const restartQuiet = () => {
      clearTimeout(quiet);
      quiet = setTimeout(finish, quietMs);
    };
    const atMost = setTimeout(finish, maxMs);
    signal.addEventListener('abort', finish, { once: true });
    const watcher = {
      filters: [filter],
      onMessage: (topic: string, payload: Buffer, retained: boolean) => {
        const id = this.topics.guestLinkOf(topic);
        if (id === null || !retained) return;
        if (payload.length > 0) ids.add(id);
        restartQuiet();
      },
    };
    this.watchers.push(watcher);
    try {
      const granted = await Promise.race([this.subscribeOne(filter), finished.then(() => null)]);
      if (granted !== null && granted >= 0x80) {
        throw new Error(
          `the broker refused the subscription to ${filter} (reason code 0x${granted.toString(16)}): its ACL must let the service read it (topic readwrite ${filter})`,
        );
      }
      restartQuiet();
      await finished;
      return [...ids];
    } finally {
      clearTimeout(quiet);
      clearTimeout(atMost);
      signal.removeEventListener('abort', finish);
      this.watchers.splice(this.watchers.indexOf(watcher), 1);
      // Not awaited: a broker that stopped answering must not hold the caller. Another watcher's filter stays.
      if (this.client.connected && !this.watchers.some((w) => w.filters.includes(filter))) {
        this.client.unsubscribeAsync(filter).catch(() => undefined);
      }
    }
  }

  /** Subscribes to one filter; the reason code the broker granted (0x80 and up: refused). */
  private async subscribeOne(filter: string): Promise<number> {
    try {
      const [grant] = await this.client.subscribeAsync(filter, { qos: 1 });
      return grant?.qos ?? 0x80;
    } catch (err) {
      // mqtt.js rejects a SUBACK that refuses, with the codes in the packet; anything else (a lost connection) is thrown.
      const granted = (err as { packet?: { granted?: unknown } }).packet?.granted;
      if (Array.isArray(granted) && typeof granted[0] === 'number') return granted[0];
      throw err;
    }
  }

  /** Whether the broker is connected now (a command sent otherwise cannot reach a door). */
  get connected(): boolean {
    return this.client.connected;
  }

  async close(): Promise<void> {
    await this.client.endAsync().catch(() => undefined);
  }
}
