import Database from 'better-sqlite3';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { EMERGENCY_ACTIVE_LOG, EMERGENCY_NORMAL_LOG, WIRING_SETTLE_MS } from '../../src/door/emergencyInput.js';
import { openStateDatabase, statePath } from '../../src/store/database.js';
import { writeLockdown } from '../../src/store/operationsState.js';
import { auditEvents, startDaemon, type Cleanups } from '../support/agentSite.js';
import { DOOR_UUID, SECOND_DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { readLevel } from '../support/daemon.js';
import { FakeGpio } from '../support/fakeGpio.js';
import { ManualTime } from '../support/manualTime.js';
import { Mosquitto } from '../support/mosquitto.js';
import { Operator } from '../support/operator.js';

// The fire alarm input (issue 30 item 1) through the agent's composition root in this process: a fake GPIO driver
// (levels and every write in one ordered log), the manual clock, real SQLite (cache, audit log, saved lock states).
// Doors: Front (relay 17, fail-secure) and Back (relay 18, fail-safe and active low): both read 0 locked, 1
// unlocked. The fire panel's relay: its normally-closed contact in the loop on GPIO 26 (open = 1 = alarm), its
// normally-open contact on GPIO 19 where a test wires it (open = 1). The clock starts on a Wednesday, 14:00 in Berlin.
const tmp = tempDir('door-agent-emergency-');
afterAll(tmp.cleanup);
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.stop();
});

const FRONT = 17;
const BACK = 18;
const LOOP = 26;
const CONFIRM = 19;
const EXIT = 22;
const OPEN = 1; // a contact open (pulled up)
const CLOSED = 0;
const DEBOUNCE_MS = 50;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const WEEKDAYS_8_TO_18 = '[[], [[8, 18]], [[8, 18]], [[8, 18]], [[8, 18]], [[8, 18]], []]';

interface Recorded {
  type: string;
  door: string | null;
  data: Record<string, unknown>;
}

let n = 0;
/** An agent site: `emergency` is the section's YAML (flow style), `front` more keys of the Front door. */
function site(options: { emergency?: string; front?: string; extra?: string } = {}) {
  const dir = join(tmp.path, `e${n++}`);
  mkdirSync(dir);
  const path = writeConfig(dir, {
    twoDoors: true,
    extra: `${options.emergency === undefined ? 'emergency: { pin: 26 }' : options.emergency}\n${options.extra ?? ''}`,
    doorExtra: `    exitButton: { pin: ${EXIT}, debounceMs: 0 }\n${options.front ?? ''}`,
  });
  expect(runCli(['import', 'examples/snapshot.json', '--config', path]).status).toBe(0);
  const log: string[] = [];
  const gpio = new FakeGpio(log);
  const time = new ManualTime();
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info', base: undefined, timestamp: false }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const s = {
    dir,
    path,
    gpio,
    log,
    time,
    logs,
    async start(): Promise<Agent> {
      const agent = await startAgent(loadConfig(path), { logger, clock: time, timers: time, gpio, clockSynchronized: () => true });
      agents.push(agent);
      return agent;
    },
    async stop(agent: Agent): Promise<void> {
      agents.splice(agents.indexOf(agent), 1);
      await agent.stop();
    },
    /** A level on an input, settled (past its debounce). */
    set(pin: number, level: 0 | 1): void {
      gpio.set(pin, level);
      time.advance(DEBOUNCE_MS);
    },
    relay(pin: number): number | undefined {
      return gpio.levels.get(pin);
    },
    events(): Recorded[] {
      const db = new Database(join(dir, 'data/state.db'), { readonly: true });
      try {
        const rows = db.prepare('SELECT type, door_uuid, payload FROM events ORDER BY seq').all() as Array<{
          type: string;
          door_uuid: string | null;
          payload: string;
        }>;
        return rows.map((r) => ({ type: r.type, door: r.door_uuid, data: JSON.parse(r.payload) as Record<string, unknown> }));
      } finally {
        db.close();
      }
    },
    /** The events of these types, in order. */
    of(...types: string[]): Recorded[] {
      return s.events().filter((e) => types.includes(e.type));
    },
    /** The relay writes of one pin from `from` in the GPIO log. */
    writes(pin: number, from = 0): string[] {
      return log.slice(from).filter((l) => l.startsWith(`write ${pin}=`));
    },
  };
  return s;
}

describe('the fire alarm input (emergency)', () => {
  it('releases a door in lockdown at once, and when it clears the door is locked again: the lockdown is still in force', async () => {
    const s = site();
    const state = openStateDatabase(statePath(join(s.dir, 'data')));
    writeLockdown(state, 'agent', { active: true, by: 'Security desk', reason: 'drill', since: s.time.wall, issuedAt: null });
    state.close();
    const agent = await s.start();
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([0, 0]);

    s.set(LOOP, OPEN); // the fire panel's relay opens the loop
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]);
    expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'emergency release', relockAt: null });
    expect(s.of('emergency_release').map((e) => e.door)).toEqual([DOOR_UUID, SECOND_DOOR_UUID]);
    expect(s.of('unlocked').map((e) => [e.door, e.data.cause])).toEqual([
      [DOOR_UUID, 'emergency release'],
      [SECOND_DOOR_UUID, 'emergency release'],
    ]);

    // An hour later, still released: no timer, no lockdown locks it.
    s.time.advance(HOUR);
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]);

    const from = s.log.length;
    s.set(LOOP, CLOSED);
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([0, 0]);
    expect(s.writes(FRONT, from)).toEqual([`write ${FRONT}=0`]);
    expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'LOCKED', cause: 'emergency cleared' });
    const cleared = s.of('emergency_cleared');
    expect(cleared.map((e) => e.door)).toEqual([DOOR_UUID, SECOND_DOOR_UUID]);
    expect(cleared[0]!.data.since).toBe(new Date(s.time.wall - HOUR - DEBOUNCE_MS).toISOString());
    // The lockdown did not end with the fire: the exit button still releases (egress), and the lockdown holds.
    s.gpio.set(EXIT, 0);
    expect(s.relay(FRONT)).toBe(1);
    s.time.advance(5000);
    expect(s.relay(FRONT)).toBe(0);
  });

  it('releases a door under its unlock schedule; cleared within the hours the schedule holds it again, without a relock', async () => {
    const s = site({ front: `    unlockSchedule: ${WEEKDAYS_8_TO_18}\n` });
    const agent = await s.start();
    expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'unlock schedule' });

    const from = s.log.length;
    s.set(LOOP, OPEN);
    expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'emergency release' });
    s.time.advance(10 * MINUTE);
    s.set(LOOP, CLOSED);
    expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'unlock schedule' });
    expect(s.relay(FRONT)).toBe(1);
    expect(s.writes(FRONT, from)).toEqual([]); // the strike never moved
    expect(s.relay(BACK)).toBe(0); // no schedule: locked again

    // And the schedule goes on: its hours end at 18:00.
    s.time.advance(4 * HOUR);
    expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'LOCKED', cause: 'unlock schedule ended' });
  });

  it("released through the end of the schedule's hours, it locks when it clears afterwards", async () => {
    const s = site({ front: `    unlockSchedule: ${WEEKDAYS_8_TO_18}\n` });
    const agent = await s.start();
    s.set(LOOP, OPEN);
    s.time.advance(4 * HOUR + 30 * MINUTE); // 18:30: the schedule's end did not lock it
    expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'emergency release' });
    expect(s.relay(FRONT)).toBe(1);
    s.set(LOOP, CLOSED);
    expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'LOCKED', cause: 'emergency cleared' });
    expect(s.relay(FRONT)).toBe(0);
  });

  it('a relock timer running when it starts does not lock the door, nor does one started while released', async () => {
    const s = site();
    const agent = await s.start();
    s.gpio.set(EXIT, 0); // 5 s unlock
    s.gpio.set(EXIT, 1);
    s.set(LOOP, OPEN);
    s.gpio.set(EXIT, 0); // a request to exit while released: recorded, nothing moves
    s.gpio.set(EXIT, 1);
    s.time.advance(60_000);
    expect(s.relay(FRONT)).toBe(1);
    expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'emergency release', relockAt: null });
    expect(s.of('exit_request')).toHaveLength(2);
    expect(s.of('locked')).toEqual([]);
  });

  it('a cut wire reads as an open loop: the doors are released; without confirmPin no wiring fault can be told', async () => {
    const s = site();
    await s.start();
    s.set(LOOP, OPEN); // the wire cut: the pull-up takes the line to 1, as an alarm does
    s.time.advance(10 * WIRING_SETTLE_MS);
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]);
    expect(s.of('emergency_release')).toHaveLength(2);
    expect(s.of('emergency_wiring')).toEqual([]);
  });

  it('a door left out of emergency.doors (the vault) is not released', async () => {
    const s = site({ emergency: 'emergency: { pin: 26, doors: [Front door] }' });
    const agent = await s.start();
    s.set(LOOP, OPEN);
    expect(s.relay(FRONT)).toBe(1);
    expect(s.relay(BACK)).toBe(0);
    expect(agent.lockState(SECOND_DOOR_UUID)).toMatchObject({ state: 'LOCKED' });
    expect(s.of('emergency_release').map((e) => e.door)).toEqual([DOOR_UUID]);
    s.set(LOOP, CLOSED);
    expect(s.of('emergency_cleared').map((e) => e.door)).toEqual([DOOR_UUID]);
  });

  it('an agent started during a fire releases its doors as soon as it reads the input, every relay locked first', async () => {
    const s = site();
    s.gpio.set(LOOP, OPEN); // before the start
    const agent = await s.start();
    const releasedAt = new Date(s.time.wall).toISOString();
    expect(s.log.slice(0, 2)).toEqual([`open out ${FRONT}=0`, `open out ${BACK}=0`]);
    expect(s.log.indexOf(`open in ${LOOP}`)).toBeGreaterThan(s.log.indexOf(`open in ${EXIT}`));
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]);
    expect(s.of('emergency_release').map((e) => e.data)).toEqual([{ at_start: true }, { at_start: true }]);

    // Stopped while released: every relay locked. Started again after the fire: the saved release is not resumed.
    s.time.advance(HOUR);
    await s.stop(agent);
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([0, 0]);
    s.gpio.set(LOOP, CLOSED);
    const again = await s.start();
    expect(again.lockState(DOOR_UUID)).toMatchObject({ state: 'LOCKED' });
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([0, 0]);
    expect(s.writes(FRONT, s.log.lastIndexOf(`open out ${FRONT}=0`))).not.toContain(`write ${FRONT}=1`);
    // Since when: the release's start, from the audit log (not kept in memory across the restart).
    expect(s.of('emergency_cleared').map((e) => e.data)).toEqual([
      { at_start: true, since: releasedAt },
      { at_start: true, since: releasedAt },
    ]);
  });

  it('restarted twice during a fire that then ends: released again at each start, and emergency_cleared says since the fire began', async () => {
    const s = site();
    const agent = await s.start();
    s.set(LOOP, OPEN);
    const releasedAt = new Date(s.time.wall).toISOString(); // set() waited out the debounce: released now
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]);
    s.time.advance(HOUR);
    await s.stop(agent);
    const second = await s.start(); // the input still open: released again at start
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]);
    s.time.advance(HOUR);
    await s.stop(second);
    await s.start(); // and again
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]);
    expect(s.of('emergency_release').map((e) => e.data)).toEqual([
      {},
      {},
      { at_start: true, since: releasedAt },
      { at_start: true, since: releasedAt },
      { at_start: true, since: releasedAt },
      { at_start: true, since: releasedAt },
    ]);
    s.time.advance(HOUR);
    s.set(LOOP, CLOSED);
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([0, 0]);
    expect(s.of('emergency_cleared').map((e) => e.data.since)).toEqual([releasedAt, releasedAt]);
  });

  it('stopped during a fire, started in a lockdown after it: emergency_cleared still says since when', async () => {
    const s = site();
    const agent = await s.start();
    s.set(LOOP, OPEN);
    const releasedAt = new Date(s.time.wall).toISOString();
    s.time.advance(HOUR);
    await s.stop(agent);
    const state = openStateDatabase(statePath(join(s.dir, 'data')));
    writeLockdown(state, 'agent', { active: true, by: 'Security desk', reason: 'after the fire', since: s.time.wall, issuedAt: null });
    state.close();
    s.gpio.set(LOOP, CLOSED);
    await s.start();
    expect([s.relay(FRONT), s.relay(BACK)]).toEqual([0, 0]);
    expect(s.of('emergency_cleared').map((e) => e.data)).toEqual([
      { at_start: true, since: releasedAt },
      { at_start: true, since: releasedAt },
    ]);
  });

  it('a flapping input stopped during a release: its flaps are summarized, and the next start dates the release by the last flap', async () => {
    const s = site();
    const agent = await s.start();
    for (let i = 0; i < 30; i++) {
      s.set(LOOP, OPEN);
      expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]); // every flap releases
      s.set(LOOP, CLOSED);
      expect([s.relay(FRONT), s.relay(BACK)]).toEqual([0, 0]);
    }
    s.set(LOOP, OPEN);
    const lastFlap = new Date(s.time.wall).toISOString();
    await s.stop(agent); // the summaries still counting are recorded at the stop
    const front = s.of('emergency_release').filter((e) => e.door === DOOR_UUID);
    expect(front.filter((e) => e.data.summary !== true)).toHaveLength(10);
    expect(front.at(-1)!.data).toMatchObject({ summary: true, count: 21, last_at: lastFlap });
    s.gpio.set(LOOP, CLOSED);
    await s.start();
    expect(
      s
        .of('emergency_cleared')
        .slice(-2)
        .map((e) => e.data),
    ).toEqual([
      { at_start: true, since: lastFlap },
      { at_start: true, since: lastFlap },
    ]);
  });

  it("a release whose own event was lost is not dated by an older fire's: emergency_cleared then says no since", async () => {
    const s = site();
    const agent = await s.start();
    s.set(LOOP, OPEN); // an older fire, over
    s.set(LOOP, CLOSED);
    s.time.advance(HOUR);
    s.set(LOOP, OPEN); // this one's emergency_release is lost (written late, then the power went)
    await s.stop(agent);
    const state = new Database(join(s.dir, 'data/state.db'));
    state.prepare("DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE type = 'emergency_release' ORDER BY seq DESC LIMIT 2)").run();
    state.close();
    s.gpio.set(LOOP, CLOSED);
    await s.start();
    expect(s.of('emergency_cleared').map((e) => e.data)).toEqual([
      expect.objectContaining({ since: expect.any(String) }), // the older fire's, both doors
      expect.objectContaining({ since: expect.any(String) }),
      { at_start: true },
      { at_start: true },
    ]);
  });

  describe('with confirmPin (the relay is form C: NC in the loop, NO on the confirm input)', () => {
    const withConfirm = { emergency: 'emergency: { pin: 26, confirmPin: 19 }' };

    it('a real alarm (NC opens, NO closes) releases without a wiring fault, as the relay passes through both open', async () => {
      const s = site(withConfirm);
      await s.start();
      s.gpio.set(LOOP, OPEN);
      s.time.advance(5); // break before make
      s.gpio.set(CONFIRM, CLOSED);
      s.time.advance(DEBOUNCE_MS);
      expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]);
      s.time.advance(10 * WIRING_SETTLE_MS);
      expect(s.of('emergency_wiring', 'emergency_wiring_cleared')).toEqual([]);
      s.gpio.set(CONFIRM, OPEN);
      s.time.advance(5);
      s.set(LOOP, CLOSED);
      s.time.advance(10 * WIRING_SETTLE_MS);
      expect([s.relay(FRONT), s.relay(BACK)]).toEqual([0, 0]);
      expect(s.of('emergency_wiring', 'emergency_wiring_cleared')).toEqual([]);
    });

    it('both contacts open (the common wire cut): released at once, emergency_wiring once, cleared once the pair agrees', async () => {
      const s = site(withConfirm);
      await s.start();
      s.set(LOOP, OPEN); // NO stays open: both open
      expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]);
      expect(s.of('emergency_wiring')).toEqual([]); // not before it has held
      s.time.advance(WIRING_SETTLE_MS);
      expect(s.of('emergency_wiring').map((e) => [e.door, e.data])).toEqual([
        [DOOR_UUID, { fault: 'open' }],
        [SECOND_DOOR_UUID, { fault: 'open' }],
      ]);
      s.time.advance(HOUR);
      expect(s.of('emergency_wiring')).toHaveLength(2); // once per fault
      s.set(LOOP, CLOSED); // repaired
      expect([s.relay(FRONT), s.relay(BACK)]).toEqual([0, 0]);
      s.time.advance(WIRING_SETTLE_MS);
      expect(s.of('emergency_wiring_cleared').map((e) => e.data)).toEqual([{ fault: 'open' }, { fault: 'open' }]);
    });

    it('both contacts closed (a short): released, emergency_wiring with fault short', async () => {
      const s = site(withConfirm);
      await s.start();
      s.set(CONFIRM, CLOSED); // NC stays closed: both closed
      expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]);
      s.time.advance(WIRING_SETTLE_MS);
      expect(s.of('emergency_wiring').map((e) => e.data)).toEqual([{ fault: 'short' }, { fault: 'short' }]);
      expect(s.logs.some((l) => String(l.msg).startsWith('emergency input wiring fault: both contacts read closed'))).toBe(true);
    });
  });
});

describe('the fire alarm input over MQTT and in Home Assistant', () => {
  let broker: Mosquitto;
  beforeAll(async () => {
    broker = new Mosquitto(join(tmp.path, 'broker'));
    await broker.start();
  });
  afterAll(async () => {
    await broker?.stop();
  });

  it('alarms at once, shows in the retained state and discovery, and a remote lock while released is refused', async () => {
    const prefix = `fire${n}`;
    const s = site({
      emergency: 'emergency: { pin: 26, doors: [Front door] }',
      extra: `mqtt: { url: "${broker.url}", topicPrefix: ${prefix}, keepaliveSeconds: 5, homeAssistant: { prefix: ha-${prefix} } }`,
    });
    const op = await Operator.connect(broker.url);
    try {
      await op.subscribe(`${prefix}/#`, `ha-${prefix}/#`);
      const agent = await s.start();
      await op.waitFor((m) => m.topic === `${prefix}/agents/test-agent/status` && m.text === 'online', 10_000, 'the agent online');
      const stateOf = (uuid: string) => [...op.received].reverse().find((m) => m.topic === `${prefix}/doors/${uuid}/state`)?.json as Record<string, unknown>;
      expect(stateOf(DOOR_UUID)).toMatchObject({ state: 'LOCKED', emergency: false });

      // Discovery: the released door has an emergency sensor (device class safety), the vault has none.
      const sensor = await op.waitFor((m) => m.topic === `ha-${prefix}/binary_sensor/test-agent_${DOOR_UUID}_emergency/config`, 10_000, 'the sensor');
      expect(sensor.json).toMatchObject({ device_class: 'safety', state_topic: `${prefix}/doors/${DOOR_UUID}/state` });
      expect(op.received.some((m) => m.topic.endsWith(`${SECOND_DOOR_UUID}_emergency/config`))).toBe(false);
      const alarmEntity = op.received.find((m) => m.topic === `ha-${prefix}/event/test-agent_${DOOR_UUID}_alarm/config`)!;
      expect((alarmEntity.json as { event_types: string[] }).event_types).toContain('emergency_release');

      s.set(LOOP, OPEN);
      const alarm = await op.waitFor((m) => m.topic === `${prefix}/doors/${DOOR_UUID}/alarm`, 10_000, 'the alarm');
      expect(alarm.json).toMatchObject({ event_type: 'emergency_release', door: DOOR_UUID });
      expect(alarm.retain).toBe(false);
      await op.waitFor((m) => m.topic === `${prefix}/doors/${DOOR_UUID}/state` && (m.json as { emergency?: boolean }).emergency === true, 10_000, 'state');
      expect(stateOf(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'emergency release', emergency: true });
      expect(stateOf(SECOND_DOOR_UUID)).toMatchObject({ state: 'LOCKED', emergency: false });

      // A lock command (Home Assistant's LOCK, or the service's) is refused; an unlock changes nothing.
      op.clear();
      await op.publish(`${prefix}/doors/${DOOR_UUID}/set`, 'LOCK');
      const refused = await op.waitFor((m) => m.topic === `${prefix}/doors/${DOOR_UUID}/reply`, 10_000, 'the reply');
      expect(refused.json).toMatchObject({ status: 409 });
      expect((refused.json as { error: string }).error).toMatch(/released by the emergency input .*lock refused/);
      expect(s.relay(FRONT)).toBe(1);
      op.clear();
      await op.publish(`${prefix}/doors/${DOOR_UUID}/set`, '{"lock_state":false,"unlock_time":5}');
      const unlocked = await op.waitFor((m) => m.topic === `${prefix}/doors/${DOOR_UUID}/reply`, 10_000, 'the reply');
      expect(unlocked.json).toMatchObject({ status: 200, success: 'Front door is released by the emergency input (fire alarm): unlocked until it clears' });
      s.time.advance(10_000);
      expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'emergency release' });

      s.set(LOOP, CLOSED);
      const cleared = await op.waitFor(
        (m) => m.topic === `${prefix}/doors/${DOOR_UUID}/alarm` && (m.json as { event_type: string }).event_type === 'emergency_cleared',
        10_000,
        'cleared',
      );
      expect(cleared.json).toMatchObject({ door: DOOR_UUID });
      await op.waitFor((m) => m.topic === `${prefix}/doors/${DOOR_UUID}/state` && (m.json as { emergency?: boolean }).emergency === false, 10_000, 'state');
      expect(stateOf(DOOR_UUID)).toMatchObject({ state: 'LOCKED', cause: 'emergency cleared', emergency: false });
      // Audited, and through the outbox on the events topic too.
      await op.waitFor((m) => m.topic === `${prefix}/doors/${DOOR_UUID}/events` && (m.json as { type: string }).type === 'emergency_cleared', 10_000, 'event');
      expect(s.of('command_rejected')).toHaveLength(1);
    } finally {
      await op.client.endAsync();
    }
  });
});

describe('door-agent status and config check', () => {
  const cleanups: Cleanups = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  });

  it('config check prints the wiring and which doors are released and which are not', () => {
    const dir = join(tmp.path, 'check');
    mkdirSync(dir);
    const path = writeConfig(dir, { twoDoors: true, extra: 'emergency: { pin: 26, doors: [Front door] }' });
    const r = runCli(['config', 'check', '--config', path]);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(
      '  emergency input GPIO 26 (loop open = level 1 = alarm; pull up, debounce 50 ms); no confirmPin: a cut wire reads as an alarm, and cannot be told from one\n' +
        '    releases: Front door; does NOT release: Back door\n',
    );
    writeConfig(dir, { twoDoors: true, extra: 'emergency: { pin: 26, confirmPin: 19 }' });
    expect(runCli(['config', 'check', '--config', path]).stdout).toContain(
      "; confirmPin GPIO 19 (the relay's normally-open contact: a cut wire or a short is told apart)\n" +
        '    releases: Front door, Back door; does NOT release: none (every door is released)\n',
    );
    writeConfig(dir, { twoDoors: true, extra: 'emergency: { pin: 18, doors: [Cash room] }' });
    const bad = runCli(['config', 'check', '--config', path]);
    expect(bad.status).toBe(78);
    expect(bad.stderr).toContain('emergency.doors[0]: "Cash room" is not a door of this agent');
    expect(bad.stderr).toContain('emergency.pin: GPIO 18 is already used by doors[1].relay.pin');
  });

  it('status shows the input as the daemon reads it (the simulated driver drives it) and the doors it releases', async () => {
    const dir = join(tmp.path, 'daemon');
    mkdirSync(dir);
    const path = writeConfig(dir, { twoDoors: true, extra: 'emergency: { pin: 26, doors: [Front door] }' });
    expect(runCli(['import', 'examples/snapshot.json', '--config', path]).status).toBe(0);
    const stopped = runCli(['status', '--config', path]).stdout;
    expect(stopped).toContain('emergency input: not read (the daemon is not running)\n');
    expect(stopped).toContain('  releases: Front door; does NOT release: Back door\n');

    const daemon = await startDaemon(path, cleanups, { waitConnected: false, timeoutMs: 30_000 });
    const loop = join(dir, 'gpio/gpio26/value');
    expect(readLevel(loop)).toBe('0');
    expect(runCli(['status', '--config', path]).stdout).toMatch(/emergency input: normal \(loop closed\) since /);

    writeFileSync(loop, '1\n'); // the fire panel opens the loop
    await daemon.waitForMessage(EMERGENCY_ACTIVE_LOG, 10_000);
    expect(readLevel(join(dir, 'gpio/gpio17/value'))).toBe('1');
    expect(readLevel(join(dir, 'gpio/gpio18/value'))).toBe('0');
    const status = runCli(['status', '--config', path]);
    expect(status.stdout).toMatch(/Front door \(.*\): UNLOCKED \(released by the emergency input\) \(relay GPIO 17 = 1\)/);
    expect(status.stdout).toMatch(/Back door \(.*\): LOCKED/);
    expect(status.stdout).toMatch(/emergency input: ACTIVE: the loop is open \(the fire alarm, or a cut wire\) since /);
    const json = JSON.parse(runCli(['status', '--json', '--config', path]).stdout) as { emergency: Record<string, unknown> };
    expect(json.emergency).toMatchObject({
      pin: 26,
      confirmPin: null,
      releases: ['Front door'],
      notReleased: ['Back door'],
      now: { reading: 'alarm', active: true },
    });
    expect(auditEvents(path).filter((e) => e.type === 'emergency_release')).toMatchObject([{ door: DOOR_UUID }]);

    writeFileSync(loop, '0\n');
    await daemon.waitForMessage(EMERGENCY_NORMAL_LOG, 10_000);
    expect(readLevel(join(dir, 'gpio/gpio17/value'))).toBe('0');
    expect(runCli(['status', '--config', path]).stdout).toMatch(/emergency input: normal \(loop closed\) since /);
  });
});
