import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DOOR_UUID, SECOND_DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { readLevel } from '../support/daemon.js';
import { Mosquitto } from '../support/mosquitto.js';
import { connectOperator, startDaemon } from '../support/agentSite.js';
import { sleep } from '../support/wait.js';

// Home Assistant sees a real lock (issue 53 item 2): the real daemon against a real mosquitto, simulated GPIO.
const tmp = tempDir('door-agent-ha-lock-');
let broker: Mosquitto;
beforeAll(async () => {
  broker = new Mosquitto(join(tmp.path, 'broker'));
  await broker.start();
});
afterAll(async () => {
  await broker.stop();
  tmp.cleanup();
});

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const CONTACT_PIN = 22;

function site(name: string, agent: string, doorExtra = '', twoDoors = false) {
  const dir = join(tmp.path, name);
  mkdirSync(dir, { recursive: true });
  const write = (two: boolean) =>
    writeConfig(dir, {
      id: agent,
      access: '{ groups: [Staff] }',
      twoDoors: two,
      extra: `mqtt:
  url: "${broker.url}"
  topicPrefix: ${name}
  keepaliveSeconds: 5`,
      doorExtra,
    });
  const config = write(twoDoors);
  expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
  return { dir, config, write, relay: join(dir, 'gpio/gpio17/value'), contact: join(dir, `gpio/gpio${CONTACT_PIN}/value`) };
}

/** The discovery configs retained on the broker now, by topic (a fresh subscriber receives exactly the retained ones). */
async function retainedConfigs(): Promise<Map<string, string>> {
  const op = await connectOperator(broker.url, cleanups, ['homeassistant/+/+/config']);
  await sleep(1500);
  return new Map(op.received.filter((m) => m.retain).map((m) => [m.topic, m.text]));
}

describe('Home Assistant sees a real lock', () => {
  it('a door removed from the config leaves no retained discovery config once the agent has started again; other agents keep theirs', async () => {
    const agent = 'hal';
    const s = site('removed', agent, '', true);
    // Another agent whose id starts with this one's and an unrelated device: never this agent's to clear.
    const other = await connectOperator(broker.url, cleanups);
    const foreign = {
      [`homeassistant/lock/${agent}_b_${SECOND_DOOR_UUID}/config`]: JSON.stringify({
        name: null,
        unique_id: `${agent}_b_${SECOND_DOOR_UUID}`,
        command_topic: 'x/set',
        device: { identifiers: [`door-agent_${agent}_b_${SECOND_DOOR_UUID}`], via_device: `door-agent_${agent}_b` },
      }),
      [`homeassistant/sensor/${agent}_weather/config`]: 'not json at all',
      'homeassistant/sensor/garden_temperature/config': JSON.stringify({ name: 'Garden', state_topic: 'garden/t', device: { identifiers: ['garden'] } }),
    };
    for (const [topic, payload] of Object.entries(foreign)) await other.publish(topic, payload, { retain: true });

    const first = await startDaemon(s.config, cleanups);
    const backLock = `homeassistant/lock/${agent}_${SECOND_DOOR_UUID}/config`;
    const seen = await connectOperator(broker.url, cleanups, [backLock]);
    await seen.waitFor((m) => m.topic === backLock && m.retain, 10_000, 'the back door lock discovery');
    expect(await first.stop()).toMatchObject({ code: 0 });

    s.write(false); // the back door is gone from the config
    const second = await startDaemon(s.config, cleanups);
    const cleaned = await second.waitForMessage('removed the Home Assistant discovery of entities no longer configured', 20_000);
    expect(cleaned).toMatchObject({ count: expect.any(Number) });

    const retained = await retainedConfigs();
    const own = [...retained.keys()].filter((t) => t.includes(`/${agent}_`) && !(t in foreign));
    expect(own.filter((t) => t.includes(SECOND_DOOR_UUID))).toEqual([]);
    expect(own).toContain(`homeassistant/lock/${agent}_${DOOR_UUID}/config`);
    expect(own).toContain(`homeassistant/sensor/${agent}_uptime/config`);
    for (const [topic, payload] of Object.entries(foreign)) expect(retained.get(topic), topic).toBe(payload);
    expect(cleaned.count).toBe(
      // every entity of the back door: lock, access and alarm events (it has no contact, tamper or schedule)
      3,
    );
  }, 90_000);

  it('shows OPEN while the contact is open, and JAMMED when the relay was driven locked but the door still stands open past jammedAfterSeconds', async () => {
    const agent = 'haj';
    const s = site('jammed', agent, `    contact: { pin: ${CONTACT_PIN}, debounceMs: 0 }\n    jammedAfterSeconds: 2\n    relockOnClose: false\n`);
    const STATE = `jammed/doors/${DOOR_UUID}/state`;
    const SET = `jammed/doors/${DOOR_UUID}/set`;
    await startDaemon(s.config, cleanups);
    const op = await connectOperator(broker.url, cleanups, [STATE, `homeassistant/lock/${agent}_${DOOR_UUID}/config`]);
    const lock = (await op.waitFor((m) => m.topic.endsWith('/config'), 10_000, 'the lock discovery')).json as Record<string, unknown>;
    expect(lock).toMatchObject({ state_topic: STATE, state_locked: 'LOCKED', state_unlocked: 'UNLOCKED', state_open: 'OPEN', state_jammed: 'JAMMED' });
    const states = () => op.received.filter((m) => m.topic === STATE).map((m) => m.json as { state: string; door: string | null; ha_state: string });
    const waitState = (ha: string, what: string) =>
      op.waitFor((m) => m.topic === STATE && (m.json as { ha_state?: string }).ha_state === ha, 15_000, `${what}: ha_state ${ha}`);
    await waitState('LOCKED', 'at start');

    // Forced open (the door opened while locked): OPEN, and it stays OPEN: the lock did lock, then was defeated.
    writeFileSync(s.contact, '1\n');
    expect((await waitState('OPEN', 'the door forced open')).json).toMatchObject({ state: 'LOCKED', door: 'OPEN' });
    await sleep(3000); // past jammedAfterSeconds
    expect(states().map((m) => m.ha_state)).not.toContain('JAMMED');

    // Unlocked while it stands open: still OPEN. Then the relock drives the relay locked while the door is open.
    op.clear();
    await op.publish(SET, JSON.stringify({ lock_state: false, unlock_time: 1 }));
    expect((await op.waitFor((m) => m.topic === STATE && (m.json as { state: string }).state === 'UNLOCKED', 10_000, 'the unlock')).json).toMatchObject({
      ha_state: 'OPEN',
    });
    const relocked = await op.waitFor((m) => m.topic === STATE && (m.json as { state: string }).state === 'LOCKED', 10_000, 'the relock');
    expect(relocked.json).toMatchObject({ ha_state: 'OPEN', door: 'OPEN' }); // within the bound: still OPEN
    expect(readLevel(s.relay)).toBe('0');
    expect((await waitState('JAMMED', 'the door still open 2 s after the relock')).json).toMatchObject({ state: 'LOCKED', door: 'OPEN' });

    // Closed: the relay and the contact agree again.
    writeFileSync(s.contact, '0\n');
    expect((await waitState('LOCKED', 'the door closed')).json).toMatchObject({ state: 'LOCKED', door: 'CLOSED' });
    expect(
      states()
        .map((m) => m.ha_state)
        .filter((h, i, all) => h !== all[i - 1]),
    ).toEqual(['OPEN', 'JAMMED', 'LOCKED']);
  }, 90_000);
});
