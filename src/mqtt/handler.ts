import type { IClientSubscribeOptions, IPublishPacket, MqttClient } from 'mqtt';

/** One topic filter a handler subscribes to, with its subscription options (QoS, retain as published). */
export interface HandlerSubscription {
  filter: string;
  options: { qos: 0 | 1 | 2; rap?: boolean };
}

/**
 * One topic family of the agent on the broker (docs/architecture.md, "The MQTT room"): it declares the filters
 * it subscribes to, and the MQTT component (mqttComponent.ts, through MqttHandlers) subscribes to the union of
 * every handler's filters once per connection and hands each message to the handlers whose filters match.
 * A handler never listens on the client itself.
 */
export interface MqttHandler {
  /** For logs: the topic family. */
  readonly name: string;
  /** The filters to subscribe to (none: a handler that only publishes). Read at each connect. */
  subscriptions(): readonly HandlerSubscription[];
  /**
   * A new broker session: the subscriptions were sent and acknowledged (a refused one is reported), in list order
   * after the handlers before it. Publish-on-connect work; a rejection (the connection failed) ends the session's
   * setup, which starts again at the next connect.
   */
  onConnect?(client: MqttClient): void | Promise<void>;
  /** A message on a topic one of its filters matches. A throw is logged, never stops the other handlers. */
  onMessage?(topic: string, payload: Buffer, packet: IPublishPacket): void;
  /** The connection closed (it will be opened again): per-session work ends. */
  onClose?(): void;
  /** The agent stops, or the handler is removed: timers end, last messages go out (the client still connected). */
  stop?(): void | Promise<void>;
}

/** The union of the handlers' subscriptions: one entry per filter, the highest QoS asked, retain as published if any asked. */
export function subscriptionUnion(handlers: readonly MqttHandler[]): Map<string, IClientSubscribeOptions> {
  const union = new Map<string, IClientSubscribeOptions>();
  for (const handler of handlers) {
    for (const { filter, options } of handler.subscriptions()) {
      const held = union.get(filter);
      union.set(filter, {
        qos: Math.max(held?.qos ?? 0, options.qos) as 0 | 1 | 2,
        rap: (held?.rap ?? false) || (options.rap ?? false),
        nl: false,
        rh: 0,
      });
    }
  }
  return union;
}

/** Whether `promise` settled successfully within `ms` (a broker that does not answer is not waited for at stop). */
export function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([
    promise.then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms)),
  ]);
}
