import type { IPublishPacket, MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { BrokerRefusals } from './brokerRefusals.js';
import { subscriptionUnion, type MqttHandler } from './handler.js';
import { topicMatches } from './topicFilter.js';

/**
 * The MQTT component's one list of handlers (handler.ts) on one client: at each connect it subscribes once to
 * the union of their filters (a filter the broker refuses is reported per topic by BrokerRefusals and never
 * stops the others), then runs each handler's onConnect in list order; each message goes to the handlers whose
 * filters match its topic, and only to them. Stop runs the handlers' stops in reverse order.
 */
export class HandlerList {
  private readonly handlers: MqttHandler[];
  private session = 0;

  constructor(
    handlers: readonly MqttHandler[],
    private readonly deps: { client: MqttClient; refusals: BrokerRefusals; logger: Logger },
  ) {
    this.handlers = [...handlers];
  }

  /** Listens on the client: connect, close and message. */
  attach(): this {
    const { client } = this.deps;
    client.on('connect', () => void this.connect());
    client.on('close', () => this.close());
    client.on('message', (topic, payload, packet) => this.dispatch(topic, payload, packet));
    return this;
  }

  list(): readonly MqttHandler[] {
    return this.handlers;
  }

  /** A new session: the one subscription, then each handler's publish-on-connect work in list order. */
  async connect(): Promise<void> {
    const { client, refusals, logger } = this.deps;
    const session = ++this.session;
    try {
      const union = subscriptionUnion(this.handlers);
      if (union.size > 0) await refusals.subscribeEach(client, union);
      for (const handler of this.handlers) {
        if (session !== this.session) return; // a newer connection took over while this one was set up
        await handler.onConnect?.(client);
      }
    } catch (err) {
      logger.warn({ err }, 'broker session setup interrupted; retrying on reconnect');
    }
  }

  /** Hands a message to every handler one of whose filters matches its topic. */
  dispatch(topic: string, payload: Buffer, packet: IPublishPacket): void {
    for (const handler of this.handlers) {
      if (!handler.onMessage || !handler.subscriptions().some((s) => topicMatches(s.filter, topic))) continue;
      try {
        handler.onMessage(topic, payload, packet);
      } catch (err) {
        this.deps.logger.error({ err, topic, handler: handler.name }, 'cannot handle MQTT message');
      }
    }
  }

  /**
   * Subscribes again to the filters of `handlers` (as the union of every handler holds them), when connected: the
   * broker delivers their retained messages again (MQTT 5 retain handling 0). Not connected: the next connect does.
   */
  async resubscribe(handlers: readonly MqttHandler[]): Promise<void> {
    const { client, refusals, logger } = this.deps;
    if (!client.connected) return;
    const wanted = new Set(handlers.flatMap((h) => h.subscriptions().map((s) => s.filter)));
    const again = new Map([...subscriptionUnion(this.handlers)].filter(([filter]) => wanted.has(filter)));
    try {
      if (again.size > 0) await refusals.subscribeEach(client, again);
    } catch (err) {
      logger.warn({ err, filters: [...again.keys()] }, 'cannot subscribe again: the retained messages come at the next connect');
    }
  }

  close(): void {
    for (const handler of this.handlers) handler.onClose?.();
  }

  /** Stops every handler, the last first (each stop is attempted; a failing one is logged). */
  async stop(): Promise<void> {
    for (const handler of [...this.handlers].reverse()) {
      try {
        await handler.stop?.();
      } catch (err) {
        this.deps.logger.error({ err, handler: handler.name }, 'error while stopping an MQTT handler');
      }
    }
  }

  /**
   * Takes one handler out while the others go on: it is stopped, and the filters no other handler subscribes to
   * are unsubscribed (when connected); a filter another handler needs stays.
   */
  async remove(handler: MqttHandler): Promise<void> {
    const at = this.handlers.indexOf(handler);
    if (at < 0) return;
    this.handlers.splice(at, 1);
    await handler.stop?.();
    const still = subscriptionUnion(this.handlers);
    const gone = [...new Set(handler.subscriptions().map((s) => s.filter))].filter((filter) => !still.has(filter));
    const { client } = this.deps;
    if (gone.length > 0 && client.connected) await client.unsubscribeAsync(gone);
  }
}
