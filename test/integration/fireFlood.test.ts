import Database from 'better-sqlite3';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FLOOD_BURST } from '../../src/door/inputFloods.js';
import { auditEvents, connectOperator, startDaemon, type Cleanups } from '../support/agentSite.js';
import { runCli, tempDir } from '../support/cli.js';
import { readLevel, waitUntil } from '../support/daemon.js';
import { Mosquitto } from '../support/mosquitto.js';

// A flapping fire alarm input (issue 51 item 3), as an attacker at the wiring would flap it: the real daemon, eight
// doors on simulated GPIO sharing the emergency input, the audit log at its smallest (agent.maxEvents: 1000). A
// door_forced alarm first, then 80 flaps of the input written to its value file: every flap must still release all
// eight doors, and the door_forced alarm must still be in the log afterwards, the flaps recorded as a bounded number
// of events with a summary that counts the rest.
const tmp = tempDir('door-agent-fire-flood-');
afterAll(tmp.cleanup);
const cleanups: Cleanups = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const FLAPS = 80;
const LOOP = 26; // the fire panel's normally-closed contact: 1 = loop open = alarm
const CONTACT = 27; // the first door's reed switch: 1 = open
const RELAYS = [5, 6, 12, 13, 16, 17, 18, 19]; // active high: 1 = unlocked
const DOORS = RELAYS.map((_, i) => `0000000${i + 1}-0000-4000-8000-00000000000${i + 1}`);
const FORCED_DOOR = DOORS[0]!;
const P = 'da';

let broker: Mosquitto;
beforeAll(async () => {
  broker = new Mosquitto(join(tmp.path, 'broker'));
  await broker.start();
}, 30_000);
afterAll(() => broker.stop());

let n = 0;
function site(mqtt: boolean): { dir: string; config: string } {
  const dir = join(tmp.path, `s${n++}`);
  mkdirSync(dir);
  const doors = DOORS.map(
    (uuid, i) =>
      `  - { uuid: ${uuid}, resourceId: ${12 + i}, name: Door ${i + 1}, relay: { pin: ${RELAYS[i]} }${i === 0 ? `, contact: { pin: ${CONTACT}, debounceMs: 0 }` : ''} }`,
  );
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `agent: { id: fire-flood, dataDir: ${join(dir, 'data')}, timezone: Europe/Berlin, maxEvents: 1000 }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${join(dir, 'gpio')} }
emergency: { pin: ${LOOP}, debounceMs: 20 }
${mqtt ? `mqtt: { url: "${broker.url}", topicPrefix: ${P}, keepaliveSeconds: 5 }\n` : ''}doors:
${doors.join('\n')}
`,
  );
  expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
  return { dir, config };
}

const value = (dir: string, pin: number) => join(dir, `gpio/gpio${pin}/value`);
const relays = (dir: string) => RELAYS.map((pin) => readLevel(value(dir, pin)));

/** The door is forced (opened while locked), then closed: one door_forced alarm in the log. */
async function forceTheFirstDoor(dir: string, config: string): Promise<void> {
  writeFileSync(value(dir, CONTACT), '1\n');
  await waitUntil(() => auditEvents(config).some((e) => e.type === 'door_forced'), 20_000, 'door_forced recorded');
  writeFileSync(value(dir, CONTACT), '0\n');
  await waitUntil(() => auditEvents(config).some((e) => e.type === 'door_closed'), 20_000, 'door_closed recorded');
}

/** The attacker flaps the loop; each flap must release all eight doors while it is open, and lock them when it closes. */
async function flap(dir: string): Promise<void> {
  for (let i = 0; i < FLAPS; i++) {
    writeFileSync(value(dir, LOOP), '1\n');
    await waitUntil(() => relays(dir).every((l) => l === '1'), 10_000, `flap ${i + 1}: every door released`);
    writeFileSync(value(dir, LOOP), '0\n');
    await waitUntil(() => relays(dir).every((l) => l === '0'), 10_000, `flap ${i + 1}: every door locked again`);
  }
}

const counted = (events: Array<Record<string, unknown>>) => events.reduce((sum, e) => sum + (e.summary === true ? (e.count as number) : 1), 0);

/** What the log kept of the flood: per door and type, at most FLOOD_BURST events one by one, the rest counted in summaries. */
function expectBounded(events: Array<Record<string, unknown>>): void {
  expect(events.filter((e) => e.type === 'door_forced' && e.door === FORCED_DOOR)).toHaveLength(1);
  for (const door of DOORS) {
    for (const [type, cause] of [
      ['emergency_release', null],
      ['emergency_cleared', null],
      ['unlocked', 'emergency release'],
      ['locked', 'emergency cleared'],
    ] as const) {
      const of = events.filter((e) => e.door === door && e.type === type && (cause === null || e.cause === cause));
      expect(of.filter((e) => e.summary !== true).length, `${type} at ${door}`).toBeLessThanOrEqual(FLOOD_BURST);
      expect(counted(of), `${type} at ${door}`).toBe(FLAPS); // nothing lost: each flap is an event or counted in one
      const summary = of.find((e) => e.summary === true);
      expect(summary, `${type} at ${door}`).toMatchObject({ count: expect.any(Number), first_at: expect.any(String), last_at: expect.any(String) });
    }
  }
  expect(events.length).toBeLessThan(1000); // instead of 2,560 records of the flaps
}

describe('a flapping fire alarm input', () => {
  it('offline (no broker): 80 flaps release all eight doors each time; door_forced stays in the log; the flaps are summarized', async () => {
    const { dir, config } = site(false);
    const daemon = await startDaemon(config, cleanups, { waitConnected: false, timeoutMs: 30_000 });
    await forceTheFirstDoor(dir, config);
    await flap(dir);
    // Stopped: the summaries still counting are recorded (a running agent records them when their minute ends).
    expect((await daemon.stop('SIGTERM')).code).toBe(0);
    const events = auditEvents(config);
    expectBounded(events);
    expect(runCli(['status', '--config', config]).stdout).toMatch(/, 0 evicted/);
  }, 180_000);

  it('with the broker up and every event delivered: the same, and the alarm topic carries the first ten and the summaries', async () => {
    const { dir, config } = site(true);
    const op = await connectOperator(broker.url, cleanups, [`${P}/doors/+/alarm`]);
    const daemon = await startDaemon(config, cleanups, { timeoutMs: 30_000 });
    await forceTheFirstDoor(dir, config);
    await flap(dir);
    // Every event recorded so far is delivered (acknowledged by the broker): eviction may take any of them.
    const outbox = () => {
      const db = new Database(join(dir, 'data/state.db'), { readonly: true });
      try {
        return (db.prepare('SELECT count(*) AS n FROM events WHERE published_at IS NULL').get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    await waitUntil(() => outbox() === 0, 30_000, 'every event delivered');
    expect((await daemon.stop('SIGTERM')).code).toBe(0);
    expectBounded(auditEvents(config));
    const alarms = op.received.map((m) => m.json as { event_type: string; door: string; summary?: boolean });
    expect(alarms.filter((a) => a.event_type === 'door_forced' && a.door === FORCED_DOOR)).toHaveLength(1);
    for (const door of DOORS) {
      const releases = alarms.filter((a) => a.door === door && a.event_type === 'emergency_release');
      expect(releases.length, door).toBeGreaterThan(0);
      expect(releases.filter((a) => a.summary !== true).length, door).toBeLessThanOrEqual(FLOOD_BURST);
      expect(releases.filter((a) => a.summary === true).length, door).toBeLessThanOrEqual(1); // at the stop, with the count
    }
  }, 180_000);
});
