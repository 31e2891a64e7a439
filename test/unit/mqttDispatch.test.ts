import type { IPublishPacket, MqttClient } from 'mqtt';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { BrokerRefusals } from '../../src/mqtt/brokerRefusals.js';
import type { HandlerSubscription, MqttHandler } from '../../src/mqtt/handler.js';
import { HandlerList } from '../../src/mqtt/handlerList.js';
import { ScriptedClient } from '../support/scriptedClient.js';

// The MQTT component's dispatch (handlerList.ts): one subscription for every handler's filters, each message to
// the handlers whose filters match, a handler's removal unsubscribing only what nobody else needs.

class Recorder implements MqttHandler {
  readonly received: string[] = [];
  connects = 0;
  stopped = false;
  constructor(
    readonly name: string,
    private readonly filters: readonly HandlerSubscription[],
  ) {}
  subscriptions() {
    return this.filters;
  }
  onConnect() {
    this.connects++;
  }
  onMessage(topic: string) {
    this.received.push(topic);
  }
  stop() {
    this.stopped = true;
  }
}

function setup(handlers: MqttHandler[]) {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  const client = new ScriptedClient();
  const refusals = new BrokerRefusals({ logger, wallNow: () => 0 });
  const list = new HandlerList(handlers, { client: client as unknown as MqttClient, refusals, logger }).attach();
  const deliver = (topic: string) => client.emit('message', topic, Buffer.from('{}'), { cmd: 'publish', qos: 1, retain: false, dup: false } as IPublishPacket);
  return { client, list, deliver, lines };
}

const qos1 = { qos: 1 } as const;

describe('HandlerList: subscribe once, dispatch by topic', () => {
  it("subscribes once to the union of the filters, with each filter's options, then runs onConnect in order", async () => {
    const commands = new Recorder('commands', [{ filter: 'da/doors/d1/set', options: { qos: 1, rap: true } }]);
    const links = new Recorder('links', [{ filter: 'da/guest-links/+', options: qos1 }]);
    const shared = new Recorder('shared', [
      { filter: 'da/guest-links/+', options: { qos: 0 } },
      { filter: 'da/holidays', options: qos1 },
    ]);
    const t = setup([commands, links, shared]);
    await t.list.connect();
    expect(t.client.subscriptions).toEqual([
      {
        'da/doors/d1/set': { qos: 1, rap: true, nl: false, rh: 0 },
        'da/guest-links/+': { qos: 1, rap: false, nl: false, rh: 0 },
        'da/holidays': { qos: 1, rap: false, nl: false, rh: 0 },
      },
    ]);
    expect([commands.connects, links.connects, shared.connects]).toEqual([1, 1, 1]);
  });

  it('a message reaches only the handlers whose filters match its topic', () => {
    const commands = new Recorder('commands', [{ filter: 'da/doors/+/set', options: qos1 }]);
    const links = new Recorder('links', [{ filter: 'da/guest-links/+', options: qos1 }]);
    const index = new Recorder('index', [{ filter: 'da/guest-link-index', options: qos1 }]);
    const t = setup([commands, links, index]);
    t.deliver('da/doors/d1/set');
    t.deliver('da/guest-links/41');
    t.deliver('da/guest-link-index');
    t.deliver('da/doors/d1/lockdown'); // nobody's
    expect(commands.received).toEqual(['da/doors/d1/set']);
    expect(links.received).toEqual(['da/guest-links/41']);
    expect(index.received).toEqual(['da/guest-link-index']);
  });

  it('a handler that throws is logged; the other handlers of that topic still get the message', () => {
    const failing: MqttHandler = {
      name: 'failing',
      subscriptions: () => [{ filter: 'da/#', options: qos1 }],
      onMessage: () => {
        throw new Error('boom');
      },
    };
    const links = new Recorder('links', [{ filter: 'da/guest-links/+', options: qos1 }]);
    const t = setup([failing, links]);
    t.deliver('da/guest-links/41');
    expect(links.received).toEqual(['da/guest-links/41']);
    expect(t.lines).toMatchObject([{ level: 50, handler: 'failing', topic: 'da/guest-links/41', msg: 'cannot handle MQTT message' }]);
  });

  it('removing a handler stops it and unsubscribes only the filters no other handler needs', async () => {
    const links = new Recorder('links', [
      { filter: 'da/guest-links/+', options: qos1 },
      { filter: 'da/guest-link-index', options: qos1 },
    ]);
    const audit = new Recorder('audit', [{ filter: 'da/guest-links/+', options: qos1 }]);
    const t = setup([links, audit]);
    await t.list.remove(links);
    expect(links.stopped).toBe(true);
    expect(t.client.unsubscribed).toEqual([['da/guest-link-index']]);
    t.deliver('da/guest-links/41');
    expect(links.received).toEqual([]);
    expect(audit.received).toEqual(['da/guest-links/41']);
    await t.list.remove(audit);
    expect(t.client.unsubscribed).toEqual([['da/guest-link-index'], ['da/guest-links/+']]);
  });

  it("stop runs every handler's stop, the last first", async () => {
    const order: string[] = [];
    const handler = (name: string): MqttHandler => ({ name, subscriptions: () => [], stop: () => void order.push(name) });
    const t = setup([handler('a'), handler('b'), handler('c')]);
    await t.list.stop();
    expect(order).toEqual(['c', 'b', 'a']);
  });
});
