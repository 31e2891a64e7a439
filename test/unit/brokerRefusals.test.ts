import type { MqttClient } from 'mqtt';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { BrokerRefusals, type RefusedTopic } from '../../src/mqtt/brokerRefusals.js';

// The reporting of a broker's refusals. The client stands in for mqtt.js with the shapes mqtt.js 5 gives (PUBACK:
// an error with `code`; SUBACK: an error with the `packet` and its `granted` reason codes): mosquitto's acl_file
// never refuses a subscription, so a broker that does is played here (publish refusals: brokerRefusals integration test).

function setup() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  const changes: RefusedTopic[][] = [];
  const refusals = new BrokerRefusals({ logger, wallNow: () => Date.parse('2026-11-24T10:00:00Z'), onChange: (list) => changes.push(list) });
  return { lines, changes, refusals };
}

describe('BrokerRefusals', () => {
  it('a SUBACK refusing one topic reports that topic with its reason code, once; the granted ones stand', async () => {
    const t = setup();
    let granted = [1, 0x87, 1];
    const client = {
      subscribeAsync: async () => {
        if (granted.some((c) => c >= 0x80)) throw Object.assign(new Error('Subscribe error: Not authorized'), { packet: { cmd: 'suback', granted } });
        return [];
      },
    } as unknown as MqttClient;
    await t.refusals.subscribe(client, ['a/set', 'a/guest-links/+', 'a/sync'], { qos: 1 });
    await t.refusals.subscribe(client, ['a/set', 'a/guest-links/+', 'a/sync'], { qos: 1 }); // a reconnect: not logged again
    expect(t.refusals.list()).toEqual([
      { topic: 'a/guest-links/+', kind: 'subscribe', reasonCode: 0x87, reason: 'not authorized', since: '2026-11-24T10:00:00.000Z' },
    ]);
    expect(t.lines.filter((l) => l.level === 40)).toMatchObject([{ topic: 'a/guest-links/+', reasonCode: 0x87 }]);
    granted = [1, 1, 1]; // the ACL was fixed
    await t.refusals.subscribe(client, ['a/set', 'a/guest-links/+', 'a/sync'], { qos: 1 });
    expect(t.refusals.list()).toEqual([]);
    expect(t.changes.map((c) => c.length)).toEqual([1, 0]);
  });

  it('a lost connection is not a refusal: subscribe and publish reject, nothing is listed', async () => {
    const t = setup();
    const client = {
      subscribeAsync: async () => {
        throw new Error('client disconnecting');
      },
      publish: (_t: string, _p: string, _o: unknown, cb: (err?: Error) => void) => cb(new Error('Connection closed')),
    } as unknown as MqttClient;
    await expect(t.refusals.subscribe(client, ['a/set'], { qos: 1 })).rejects.toThrow('client disconnecting');
    await expect(t.refusals.publish(client, 'a/events', '{}', { qos: 1 })).rejects.toThrow('Connection closed');
    expect(t.refusals.list()).toEqual([]);
  });

  it('a PUBACK refusal resolves false and is listed; the list stays bounded however many response topics are refused', async () => {
    const t = setup();
    const client = {
      publish: (_t: string, _p: string, _o: unknown, cb: (err?: Error) => void) =>
        cb(Object.assign(new Error('Publish error: Not authorized'), { code: 0x87 })),
    } as unknown as MqttClient;
    expect(await t.refusals.publish(client, 'x/0', '{}', { qos: 1 })).toBe(false);
    for (let i = 1; i < 500; i++) t.refusals.publishQuietly(client, `x/${i}`, '{}', { qos: 1 });
    await new Promise((r) => setTimeout(r, 10));
    expect(t.refusals.list()).toHaveLength(50);
    expect(t.lines.filter((l) => l.level === 40)).toHaveLength(51);
  });
});
