import { EventEmitter } from 'node:events';

/**
 * A stand-in for an mqtt.js client that records what is published and lets a test emit `message`, `connect` and
 * the like itself: for driving the MQTT handlers message by message, in the order a test needs.
 */
export class ScriptedClient extends EventEmitter {
  connected = true;
  readonly published: Array<{ topic: string; message: string }> = [];
  readonly subscriptions: unknown[] = [];
  readonly unsubscribed: unknown[] = [];
  publish(topic: string, message: string | Buffer): this {
    this.published.push({ topic, message: message.toString() });
    return this;
  }
  async publishAsync(topic: string, message: string | Buffer) {
    this.publish(topic, message);
    return undefined;
  }
  async subscribeAsync(topics: unknown) {
    this.subscriptions.push(topics);
    return [];
  }
  async unsubscribeAsync(topics: unknown) {
    this.unsubscribed.push(topics);
    return undefined;
  }
  async endAsync() {
    this.connected = false;
  }
}
