// biome-ignore-all lint/complexity/useSimpleNumberKeys: the reason codes keep the hex keys MQTT 5 lists them by (0x80 and up)
import type { IClientPublishOptions, IClientSubscribeOptions, MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { BrokerRefusal } from '../store/runtimeStatus.js';

/** A topic the broker refused (its ACL, a quota): shown by `door-agent status` until the broker takes it. */
export type RefusedTopic = BrokerRefusal;

const REASONS: Record<number, string> = {
  0x80: 'unspecified error',
  0x83: 'implementation specific error',
  0x87: 'not authorized',
  0x8f: 'topic filter invalid',
  0x90: 'topic name invalid',
  0x91: 'packet identifier in use',
  0x95: 'packet too large',
  0x97: 'quota exceeded',
  0x99: 'payload format invalid',
  0x9e: 'shared subscriptions not supported',
  0xa1: 'subscription identifiers not supported',
  0xa2: 'wildcard subscriptions not supported',
};

/** The most topics listed at once (status stays readable, memory bounded). */
const MAX_LISTED = 50;

/** The reason code of an MQTT 5 refusal (PUBACK or SUBACK >= 0x80), or null for any other error (a lost connection). */
export function refusalCode(err: unknown): number | null {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' && code >= 0x80 ? code : null;
}

/**
 * What the broker refused this agent, per topic: each refusal is logged once (a warning naming the topic and the
 * reason code) and listed for `door-agent status` until a later publish or subscription on that topic succeeds
 * (the ACL was fixed and the broker reloaded), which is logged once too.
 */
export class BrokerRefusals {
  private readonly refused = new Map<string, RefusedTopic>();
  private overflowed = false;

  constructor(private readonly deps: { logger: Logger; wallNow: () => number; onChange?: (refused: RefusedTopic[]) => void }) {}

  list(): RefusedTopic[] {
    return [...this.refused.values()];
  }

  refusedBy(kind: RefusedTopic['kind'], topic: string, reasonCode: number): void {
    const key = `${kind} ${topic}`;
    const held = this.refused.get(key);
    if (held?.reasonCode === reasonCode) return;
    if (!held && this.refused.size >= MAX_LISTED) {
      // Response topics chosen by each requester could be endless: the list (and the log) stay bounded.
      if (!this.overflowed) this.deps.logger.warn({ topic, reasonCode }, `the broker refused more than ${MAX_LISTED} topics: the others are not listed`);
      this.overflowed = true;
      return;
    }
    const reason = REASONS[reasonCode] ?? `reason code 0x${reasonCode.toString(16)}`;
    this.refused.set(key, { topic, kind, reasonCode, reason, since: held?.since ?? new Date(this.deps.wallNow()).toISOString() });
    this.deps.logger.warn(
      { topic, reasonCode, reason },
      kind === 'publish'
        ? 'the broker refused a publish on this topic (its ACL?): kept and retried; the other topics go on'
        : 'the broker refused a subscription to this topic (its ACL?): its messages will not arrive',
    );
    this.deps.onChange?.(this.list());
  }

  accepted(kind: RefusedTopic['kind'], topic: string): void {
    const key = `${kind} ${topic}`;
    if (!this.refused.delete(key)) return;
    this.deps.logger.info({ topic }, kind === 'publish' ? 'the broker accepts publishes on this topic again' : 'the broker accepts this subscription again');
    this.deps.onChange?.(this.list());
  }

  /**
   * A QoS 1 publish whose refusal is reported here. Resolves true once the broker acknowledged it, false when it
   * refused it; rejects only when the connection failed (the caller's retry). Never throws at a fire-and-forget
   * caller: use `publishQuietly` there.
   */
  publish(client: MqttClient, topic: string, payload: string, options: IClientPublishOptions): Promise<boolean> {
    return new Promise((resolve, reject) => {
      client.publish(topic, payload, options, (err) => {
        const code = refusalCode(err);
        if (code !== null) {
          this.refusedBy('publish', topic, code);
          return resolve(false);
        }
        if (err) return reject(err);
        this.accepted('publish', topic);
        resolve(true);
      });
    });
  }

  /** A publish nobody waits for (state, alarms, replies): a refusal is reported, a lost connection ignored (state is sent again on connect). */
  publishQuietly(client: MqttClient, topic: string, payload: string, options: IClientPublishOptions): void {
    this.publish(client, topic, payload, options).catch(() => undefined);
  }

  /**
   * Subscribes; a topic the broker refuses (SUBACK reason >= 0x80) is reported and does not stop the others,
   * which the broker granted in the same SUBACK. Rejects only when the connection failed.
   */
  async subscribe(client: MqttClient, topics: readonly string[], options: IClientSubscribeOptions): Promise<void> {
    // mqtt.js's own defaults for the options not given (MQTT 5: no local, retain as published, retain handling).
    await this.subscribeEach(client, new Map(topics.map((topic) => [topic, { nl: false, rap: false, rh: 0, ...options }])));
  }

  /** As `subscribe`, with each topic's own options, in one SUBSCRIBE (the MQTT component's union of its handlers' filters). */
  async subscribeEach(client: MqttClient, subscriptions: ReadonlyMap<string, IClientSubscribeOptions>): Promise<void> {
    const topics = [...subscriptions.keys()];
    try {
      await client.subscribeAsync(Object.fromEntries(subscriptions));
      for (const topic of topics) this.accepted('subscribe', topic);
    } catch (err) {
      const granted = (err as { packet?: { granted?: unknown } }).packet?.granted;
      if (!Array.isArray(granted) || granted.length !== topics.length) throw err;
      topics.forEach((topic, i) => {
        const code = granted[i] as number;
        if (code >= 0x80) this.refusedBy('subscribe', topic, code);
        else this.accepted('subscribe', topic);
      });
    }
  }
}
