import type { IPublishPacket, MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import * as z from 'zod';
import type { Timers } from '../../util/clock.js';
import type { BrokerRefusals } from '../brokerRefusals.js';
import { agentDeviceId } from '../discovery.js';
import type { HandlerSubscription, MqttHandler } from '../handler.js';

/** How long the retained discovery messages are collected after the broker acknowledged the subscription. */
const DISCOVERY_SCAN_MS = 2000;
/** A discovery message larger than this is not one of the agent's (its largest are a few KB). */
const MAX_PAYLOAD_BYTES = 64 * 1024;

export interface HomeAssistantCleanupDeps {
  /** homeAssistant.prefix. */
  prefix: string;
  agentId: string;
  /** The discovery topics the configuration produces now (handlers/homeAssistant.ts). */
  current: () => ReadonlySet<string>;
  refusals: BrokerRefusals;
  timers: Timers;
  logger: Logger;
}

/** What decides whose a retained discovery message is: its device, as discovery.ts writes it (never abbreviated). */
const discoveryDevice = z.object({
  device: z.object({
    identifiers: z.union([z.string(), z.array(z.string())]).optional(),
    via_device: z.string().optional(),
  }),
});

/**
 * Removes the Home Assistant entities of doors (and other things) no longer configured, so they do not stay as
 * ghosts: once per start, after the first connect, it subscribes to `<prefix>/+/+/config`, collects the retained
 * discovery messages for DISCOVERY_SCAN_MS, and publishes an empty retained message (Home Assistant's removal) on
 * each that is this agent's and that the configuration no longer produces; then it unsubscribes. A message is this
 * agent's when its object id starts with `<agent id>_` and its device is the agent's or one of its doors'
 * (`via_device`): another agent's, or anything else on the broker, is never touched.
 */
export class HomeAssistantCleanupHandler implements MqttHandler {
  readonly name = 'Home Assistant discovery cleanup';
  private readonly filter: string;
  private readonly device: string;
  /** Collecting the retained messages now (the filter is then this handler's, and its messages come here). */
  private collecting = false;
  private done = false;
  private session = 0;
  private timer: unknown = null;
  private readonly found = new Set<string>();

  constructor(private readonly deps: HomeAssistantCleanupDeps) {
    this.filter = `${deps.prefix}/+/+/config`;
    this.device = agentDeviceId(deps.agentId);
  }

  subscriptions(): readonly HandlerSubscription[] {
    return this.collecting ? [{ filter: this.filter, options: { qos: 1 } }] : [];
  }

  /** Not awaited by the connect: the other handlers go on while the retained messages come. */
  onConnect(client: MqttClient): void {
    if (this.done) return;
    const session = ++this.session;
    this.found.clear();
    this.collecting = true;
    void this.deps.refusals
      .subscribe(client, [this.filter], { qos: 1 })
      .then(() => {
        if (session !== this.session) return;
        this.timer = this.deps.timers.setTimeout(() => {
          this.timer = null;
          void this.finish(client, session);
        }, DISCOVERY_SCAN_MS);
      })
      .catch(() => {
        if (session === this.session) this.collecting = false; // the connection failed: the next connect tries again
      });
  }

  onMessage(topic: string, payload: Buffer, packet: IPublishPacket): void {
    // Only the retained messages the subscription delivered: those are what the broker keeps for Home Assistant.
    if (!this.collecting || !packet.retain || payload.length === 0) return;
    if (this.isOurs(topic, payload)) this.found.add(topic);
  }

  onClose(): void {
    this.session++;
    this.collecting = false;
    this.clearTimer();
  }

  stop(): void {
    this.session++;
    this.collecting = false;
    this.clearTimer();
  }

  private isOurs(topic: string, payload: Buffer): boolean {
    const levels = topic.split('/');
    const objectId = levels[levels.length - 2] ?? '';
    if (!objectId.startsWith(`${this.deps.agentId}_`) || payload.length > MAX_PAYLOAD_BYTES) return false;
    let json: unknown;
    try {
      json = JSON.parse(payload.toString('utf8'));
    } catch {
      return false;
    }
    const parsed = discoveryDevice.safeParse(json);
    if (!parsed.success) return false;
    const { identifiers, via_device: via } = parsed.data.device;
    const ids = typeof identifiers === 'string' ? [identifiers] : (identifiers ?? []);
    return ids.includes(this.device) || via === this.device;
  }

  private async finish(client: MqttClient, session: number): Promise<void> {
    const { current, refusals, logger } = this.deps;
    this.collecting = false;
    const produced = current();
    const stale = [...this.found].filter((topic) => !produced.has(topic)).sort();
    try {
      await Promise.all(stale.map((topic) => refusals.publish(client, topic, '', { qos: 1, retain: true })));
      await client.unsubscribeAsync(this.filter);
    } catch (err) {
      if (session === this.session)
        logger.warn({ err }, 'cannot remove the Home Assistant discovery of entities no longer configured: trying again at the next connect');
      return;
    }
    if (session !== this.session) return;
    this.done = true;
    if (stale.length > 0) logger.info({ count: stale.length, topics: stale }, 'removed the Home Assistant discovery of entities no longer configured');
    else logger.debug('no Home Assistant discovery of entities no longer configured');
  }

  private clearTimer(): void {
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
  }
}
