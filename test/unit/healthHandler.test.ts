import type { MqttClient } from 'mqtt';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { DoorEvents } from '../../src/door/doorEvents.js';
import type { LockSnapshot } from '../../src/door/lockController.js';
import { BrokerRefusals } from '../../src/mqtt/brokerRefusals.js';
import { HEALTH_PERIOD_MS, HealthHandler } from '../../src/mqtt/handlers/health.js';
import { parseHealth } from '../../src/protocol/health.js';
import { Topics } from '../../src/protocol/topics.js';
import { DOOR_UUID } from '../support/cli.js';
import { ManualTime } from '../support/manualTime.js';
import { ScriptedClient } from '../support/scriptedClient.js';

// The health handler on a scripted client and manual time: when it publishes, and that nothing ever queues.

/** A client whose PUBACKs the test gives (or withholds): `ack()` answers the oldest publish still waiting. */
class AckingClient extends ScriptedClient {
  readonly waiting: Array<(err?: Error) => void> = [];
  override publish(topic: string, message: string | Buffer, _options?: unknown, callback?: (err?: Error) => void): this {
    super.publish(topic, message);
    if (callback) this.waiting.push(callback);
    return this;
  }
  /** Answers the oldest publish waiting, and lets its promise settle. */
  async ack(): Promise<void> {
    this.waiting.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** `uptimeSeconds`: the process's uptime (default 125.7 s, whatever the time). */
function setup(uptimeSeconds?: (time: ManualTime) => number) {
  const door = parseConfig(
    `agent: { id: h }
access: { groups: [Staff] }
doors: [ { uuid: ${DOOR_UUID}, resourceId: 12, name: Front door, relay: { pin: 17 }, reader: { path: /dev/null } } ]`,
    'test',
  ).doors[0]!;
  const time = new ManualTime({ wall: Date.parse('2026-11-24T09:00:00Z') });
  const client = new AckingClient();
  const doorEvents = new DoorEvents((err) => {
    throw err;
  });
  let lock: LockSnapshot = { door: DOOR_UUID, state: 'LOCKED', relockAt: null, heldOpen: false, changedAt: time.wall, cause: 'boot' };
  let readerOnline = false;
  let outbox = 0;
  const logger = pino({ level: 'silent' });
  const topics = new Topics('da', 'h');
  const handler = new HealthHandler({
    client: client as unknown as MqttClient,
    topics,
    version: '9.9.9',
    doors: [{ door, controller: { snapshot: () => lock } as never, contact: () => 'CLOSED', readerOnline: () => readerOnline }],
    outboxDepth: () => outbox,
    sources: { cache: () => ({ revision: 42, refreshedAt: time.wall - 90_000 }), clockTrusted: () => true },
    doorEvents,
    clock: time,
    timers: time,
    logger,
    refusals: new BrokerRefusals({ logger, wallNow: () => time.wall }),
    process: {
      uptimeSeconds: () => (uptimeSeconds ? uptimeSeconds(time) : 125.7),
      memory: () => ({ rss: 50_000_000, heapUsed: 20_000_000 }),
      lag: () => ({ p99Ms: () => 1.5, reset: () => undefined, stop: () => undefined }),
    },
  });
  const healths = () => client.published.filter((p) => p.topic === topics.health).map((p) => parseHealth(p.message));
  const unlock = () => {
    lock = { ...lock, state: 'UNLOCKED', relockAt: time.wall + 5000, cause: 'card …78' };
    doorEvents.emit('lock', DOOR_UUID, lock, 'LOCKED');
  };
  return {
    handler,
    client,
    time,
    doorEvents,
    healths,
    unlock,
    setReader: (online: boolean) => {
      readerOnline = online;
      doorEvents.emit('reader', DOOR_UUID, online);
    },
    setOutbox: (n: number) => void (outbox = n),
  };
}

describe('the health message (P/agents/<id>/health)', () => {
  it('publishes at connect what the agent holds, in the schema clients parse', async () => {
    const { handler, healths } = setup();
    handler.onConnect();
    expect(healths()).toEqual([
      {
        at: '2026-11-24T09:00:00.000Z',
        uptime_s: 125,
        started_at: '2026-11-24T08:57:54.300Z',
        version: '9.9.9',
        outbox_depth: 0,
        cache: { revision: 42, age_s: 90, damaged: null },
        readers: { online: 0, total: 1, per_door: { [DOOR_UUID]: false } },
        clock_trusted: true,
        doors: [
          {
            uuid: DOOR_UUID,
            name: 'Front door',
            lock: 'LOCKED',
            relock_at: null,
            open: false,
            lockdown: false,
            tamper: null,
            schedule: null,
            reader_online: false,
          },
        ],
        memory: { rss: 50_000_000, heap_used: 20_000_000 },
        event_loop_lag_p99_ms: 1.5,
      },
    ]);
  });

  it('publishes again after a door or reader change, at most once a second, after the call that said so', async () => {
    const { handler, client, time, healths, unlock, setReader } = setup();
    handler.onConnect();
    await client.ack();
    time.advance(5000);
    unlock();
    expect(healths()).toHaveLength(1); // not from within the door's own call
    time.advance(0);
    expect(healths().at(-1)?.doors[0]).toMatchObject({ lock: 'UNLOCKED' });
    await client.ack();
    // A burst of changes: one message a second, with the latest.
    for (let i = 0; i < 20; i++) {
      setReader(i % 2 === 0);
      time.advance(50);
      await client.ack();
    }
    time.advance(1000);
    await client.ack();
    expect(healths().length).toBeGreaterThanOrEqual(2);
    expect(healths().length).toBeLessThanOrEqual(4);
    expect(healths().at(-1)?.readers.online).toBe(0); // the last change: reader away
  });

  it("gives the agent's start (Home Assistant's timestamp sensor), the same in every message; a wall clock set anew moves it", async () => {
    const mono0 = 1_000;
    const { handler, client, time, healths } = setup((t) => 125.7 + (t.mono - mono0) / 1000 + (t.mono % 7) / 1000); // read a moment apart
    handler.onConnect();
    await client.ack();
    for (let i = 0; i < 3; i++) {
      time.advance(HEALTH_PERIOD_MS);
      await client.ack();
    }
    const started = healths()[0]!.started_at!;
    expect(Math.abs(Date.parse(started) - Date.parse('2026-11-24T08:57:54.300Z'))).toBeLessThan(10);
    expect(healths().map((h) => h.started_at)).toEqual([started, started, started, started]);
    time.wall += 3_600_000; // NTP set the clock an hour ahead
    time.advance(HEALTH_PERIOD_MS);
    await client.ack();
    expect(Date.parse(healths().at(-1)!.started_at!) - Date.parse(started)).toBeCloseTo(3_600_000, -2);
    handler.stop();
  });

  it('publishes every period whatever changed', async () => {
    const { handler, client, time, healths } = setup();
    handler.onConnect();
    await client.ack();
    for (let i = 0; i < 3; i++) {
      time.advance(HEALTH_PERIOD_MS);
      await client.ack();
    }
    expect(healths()).toHaveLength(4);
    handler.stop();
    time.advance(HEALTH_PERIOD_MS * 3);
    expect(healths()).toHaveLength(4);
  });

  it('queues nothing while the broker is away: the next connect publishes one message, the latest', async () => {
    const { handler, client, time, healths, unlock, setOutbox } = setup();
    handler.onConnect();
    await client.ack();
    client.connected = false;
    unlock();
    setOutbox(3);
    time.advance(HEALTH_PERIOD_MS * 2);
    expect(healths()).toHaveLength(1);
    client.connected = true;
    handler.onConnect();
    expect(healths()).toHaveLength(2);
    expect(healths()[1]).toMatchObject({ outbox_depth: 3, doors: [{ lock: 'UNLOCKED' }] });
  });

  it('keeps at most one message waiting for its PUBACK: the changes meanwhile go out as one, after it', async () => {
    const { handler, client, time, healths, unlock, setReader } = setup();
    handler.onConnect();
    expect(client.waiting).toHaveLength(1);
    time.advance(2000);
    unlock();
    time.advance(2000);
    setReader(true);
    time.advance(HEALTH_PERIOD_MS);
    expect(healths()).toHaveLength(1);
    expect(client.waiting).toHaveLength(1);
    await client.ack();
    time.advance(0);
    expect(healths()).toHaveLength(2);
    expect(healths()[1]).toMatchObject({ doors: [{ lock: 'UNLOCKED', reader_online: true }] });
  });
});
