import { connectAsync, type IClientPublishOptions, type MqttClient } from 'mqtt';
import { sleep } from './wait.js';

export interface Received {
  topic: string;
  text: string;
  json: unknown;
  retain: boolean;
  correlationData?: Buffer;
}

/** An MQTT client playing the operator (or the service, or Home Assistant) against the real broker. */
export class Operator {
  readonly received: Received[] = [];

  private constructor(readonly client: MqttClient) {
    client.on('message', (topic, payload, packet) => {
      const text = payload.toString('utf8');
      let json: unknown = null;
      try {
        json = JSON.parse(text);
      } catch {
        json = null;
      }
      this.received.push({ topic, text, json, retain: packet.retain, correlationData: packet.properties?.correlationData });
    });
  }

  static async connect(url: string, options: { ca?: Buffer; clientId?: string } = {}): Promise<Operator> {
    // With a clientId the session persists (clean: false, MQTT 5 session expiry): QoS 1 messages published while
    // this client is reconnecting are queued for it by the broker.
    const persistent = options.clientId !== undefined;
    const client = await connectAsync(url, {
      protocolVersion: 5,
      reconnectPeriod: 200,
      ca: options.ca,
      clean: !persistent,
      clientId: options.clientId,
      properties: persistent ? { sessionExpiryInterval: 600 } : undefined,
    });
    return new Operator(client);
  }

  async subscribe(...topics: string[]): Promise<void> {
    await this.client.subscribeAsync(topics, { qos: 1 });
  }

  async publish(topic: string, payload: string | Buffer, options: IClientPublishOptions = {}): Promise<void> {
    await this.client.publishAsync(topic, payload, { qos: 1, ...options });
  }

  async waitFor(predicate: (m: Received) => boolean, timeoutMs = 5000, what = 'message'): Promise<Received> {
    const started = Date.now();
    for (;;) {
      const found = this.received.find(predicate);
      if (found) return found;
      if (Date.now() - started > timeoutMs) {
        throw new Error(`no ${what} within ${timeoutMs} ms; received:\n${this.received.map((m) => `${m.topic} ${m.text}`).join('\n')}`);
      }
      await sleep(10);
    }
  }

  /** Publishes a command and waits for the reply carrying its request_id. */
  async command(replyTopic: string, setTopic: string, body: Record<string, unknown> | string, requestId: string): Promise<Record<string, unknown>> {
    const payload = typeof body === 'string' ? body : JSON.stringify({ ...body, request_id: requestId });
    this.clear(); // only a reply to this very command counts
    await this.publish(setTopic, payload);
    const reply = await this.waitFor(
      (m) => m.topic === replyTopic && (m.json as { request_id?: string } | null)?.request_id === requestId,
      5000,
      `reply to ${requestId}`,
    );
    return reply.json as Record<string, unknown>;
  }

  clear(): void {
    this.received.length = 0;
  }

  async end(): Promise<void> {
    await this.client.endAsync(true);
  }
}
