import { join } from 'node:path';
import type { IPublishPacket, MqttClient } from 'mqtt';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import type { Level } from '../../src/core/relay.js';
import { LockController } from '../../src/door/lockController.js';
import { BrokerRefusals } from '../../src/mqtt/brokerRefusals.js';
import { HandlerList } from '../../src/mqtt/handlerList.js';
import { DoorCommandsHandler } from '../../src/mqtt/handlers/doorCommands.js';
import { ReplyTopics } from '../../src/mqtt/replyTopic.js';
import { Topics } from '../../src/protocol/topics.js';
import { openDatabase, openStateDatabase } from '../../src/store/database.js';
import { DoorStateStore } from '../../src/store/doorState.js';
import { EventLog } from '../../src/store/eventLog.js';
import { ReplayCache } from '../../src/store/replayCache.js';
import { systemClock, systemTimers } from '../../src/util/clock.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { ScriptedClient } from '../support/scriptedClient.js';

// The door commands handler with a scripted client: what the broker may do that a real mosquitto will not do on request
// (redeliver a QoS 1 command with the dup flag after a lost PUBACK).

const tmp = tempDir('door-agent-bridge-');
afterAll(tmp.cleanup);

function setup() {
  const door = parseConfig(
    `agent: { id: b }
access: { groups: [Staff] }
doors: [ { uuid: ${DOOR_UUID}, resourceId: 12, name: Front door, relay: { pin: 17 }, unlockSeconds: 5 } ]`,
    'test',
  ).doors[0]!;
  const db = openDatabase(join(tmp.path, `c${Math.random()}.db`));
  const state = openStateDatabase(join(tmp.path, `s${Math.random()}.db`));
  const writes: Level[] = [];
  const controller = new LockController(
    door,
    { pin: 17, write: (l) => void writes.push(l), read: () => writes.at(-1) ?? 0 },
    {
      clock: systemClock,
      timers: systemTimers,
      persistence: new DoorStateStore(join(tmp.path, `doors${Math.random()}`)),
    },
  );
  const client = new ScriptedClient();
  const events = new EventLog(state, { agentId: 'b', maxEvents: 1000 });
  const logger = pino({ level: 'silent' });
  const refusals = new BrokerRefusals({ logger, wallNow: () => systemClock.wallNow() });
  const commands = new DoorCommandsHandler({
    client: client as unknown as MqttClient,
    topics: new Topics('da', 'b'),
    doors: [{ door, controller, contact: () => null }],
    events,
    replay: new ReplayCache(state),
    secret: null,
    maxAgeSeconds: 30,
    clock: systemClock,
    logger,
    refusals,
    replyTopics: new ReplyTopics({ own: { prefix: 'da', agentId: 'b', discoveryPrefix: 'homeassistant' }, logger }),
  });
  new HandlerList([commands], { client: client as unknown as MqttClient, refusals, logger }).attach();
  const command = (payload: string, packet: Partial<IPublishPacket>) =>
    client.emit('message', `da/doors/${DOOR_UUID}/set`, Buffer.from(payload), { cmd: 'publish', qos: 1, retain: false, dup: false, ...packet });
  const replies = () => client.published.filter((p) => p.topic.endsWith('/reply')).map((p) => JSON.parse(p.message) as Record<string, unknown>);
  return { controller, writes, command, replies, events, db };
}

describe('DoorCommandsHandler', () => {
  it('does not execute a QoS 1 redelivery (dup) of a command it already executed', () => {
    const t = setup();
    t.command('{"lock_state":false,"unlock_time":5}', { messageId: 7 });
    expect(t.writes).toEqual([0, 1]);
    t.command('LOCK', { messageId: 8 });
    expect(t.writes).toEqual([0, 1, 0]);
    t.command('{"lock_state":false,"unlock_time":5}', { messageId: 7, dup: true }); // PUBACK was lost, broker resends
    expect(t.writes).toEqual([0, 1, 0]);
    expect(t.replies()).toHaveLength(2);
    // A dup of a message it never executed (the first delivery was lost) is executed.
    t.command('OPEN', { messageId: 9, dup: true });
    expect(t.writes).toEqual([0, 1, 0, 1]);
    t.controller.shutdown();
    t.db.close();
  });

  it('records a retained command as command_rejected without replying or moving the relay', () => {
    const t = setup();
    t.command('UNLOCK', { messageId: 1, retain: true });
    expect(t.writes).toEqual([0]);
    expect(t.replies()).toEqual([]);
    // Seq 1 is the audit chain's start, written with the log's first event.
    expect(t.events.since(1).map((e) => [e.type, e.error])).toEqual([['command_rejected', 'retained command ignored']]);
    t.controller.shutdown();
    t.db.close();
  });
});
