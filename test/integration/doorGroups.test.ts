import Database from 'better-sqlite3';
import { EventEmitter } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { retainedPayload } from '../../src/protocol/retainedMessages.js';
import type { PortLike } from '../../src/readers/serial/port.js';
import { DOOR_UUID, SECOND_DOOR_UUID, runCli, tempDir } from '../support/cli.js';
import { FakeGpio } from '../support/fakeGpio.js';
import { ManualTime } from '../support/manualTime.js';
import { Mosquitto } from '../support/mosquitto.js';
import { Operator } from '../support/operator.js';
import { waitUntil } from '../support/wait.js';

// Doors that work together (issue 26, docs/areas.md) through the agent's composition root in this process: a fake
// GPIO driver (relays and inputs), serial readers on fake ports (a card is a line of digits), the manual clock, real
// SQLite (the cache of examples/snapshot.json, the audit log the areas are replayed from).
// Front door: relay 17, contact 20 (1 = open), exit button 22 (0 = pressed), an entry reader /dev/front-in (it
// answers each outcome with a reply line) and an exit reader /dev/front-out. Back door: relay 18, contact 21, exit
// button 23, reader /dev/back. Cards: Alice 4213578 (Staff), Erin 4213581 (Night shift), Dave 4213580
// (Contractors: a responder). The clock starts on Wednesday 2026-07-01, 14:00 in Berlin.
const tmp = tempDir('door-agent-groups-');
afterAll(tmp.cleanup);
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.stop();
});

const FRONT = 17;
const BACK = 18;
const FRONT_CONTACT = 20;
const BACK_CONTACT = 21;
const FRONT_EXIT = 22;
const BACK_EXIT = 23;
const ALICE = '4213578';
const ERIN = '4213581';
const DAVE = '4213580';
const ALICE_REF = { email_id: 101 };
const OPEN = 1;
const CLOSED = 0;

/** A serial port that opens at once; `line` is a frame from the reader, `written` what the agent sent it. */
class FakePort extends EventEmitter implements PortLike {
  isOpen = false;
  readonly written: string[] = [];
  open(callback: (err: Error | null) => void): void {
    this.isOpen = true;
    callback(null);
  }
  close(callback?: (err: Error | null) => void): void {
    this.isOpen = false;
    this.emit('close', null);
    callback?.(null);
  }
  write(data: Buffer): void {
    this.written.push(data.toString('latin1'));
  }
  line(text: string): void {
    this.emit('data', Buffer.from(`${text}\r\n`));
  }
}

interface Recorded {
  seq: number;
  type: string;
  door: string | null;
  data: Record<string, unknown>;
}

let n = 0;
/**
 * An agent site; `front`/`back`: more keys of each door (YAML lines indented by four spaces); `moreDoors`: doors after
 * them (YAML list items indented by two spaces); `extra`: sections.
 */
function site(options: { front?: string; back?: string; moreDoors?: string; extra?: string; frontReaders?: string; snapshot?: string } = {}) {
  const dir = join(tmp.path, `g${n++}`);
  mkdirSync(dir);
  const path = join(dir, 'config.yaml');
  writeFileSync(
    path,
    `agent: { id: test-agent, dataDir: ${join(dir, 'data')}, timezone: Europe/Berlin }
access: { groups: [Staff, Contractors], policies: [Night shift], responders: { groups: [Contractors] } }
gpio: { driver: simulated, simulatedDir: ${join(dir, 'gpio')} }
${options.extra ?? ''}
doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    name: Front door
    relay: { pin: ${FRONT} }
    contact: { pin: ${FRONT_CONTACT}, debounceMs: 0 }
    exitButton: { pin: ${FRONT_EXIT}, debounceMs: 0 }
${
  options.frontReaders ??
  `    readers:
      entry: { type: serial, path: /dev/front-in, replies: { grant: "OK\\r\\n", deny: "NO\\r\\n", awaiting: "WAIT\\r\\n" } }
      exit: { type: serial, path: /dev/front-out }`
}
${options.front ?? ''}
  - uuid: ${SECOND_DOOR_UUID}
    resourceId: 13
    name: Back door
    relay: { pin: ${BACK} }
    contact: { pin: ${BACK_CONTACT}, debounceMs: 0 }
    exitButton: { pin: ${BACK_EXIT}, debounceMs: 0 }
    reader: { path: /dev/back }
${options.back ?? ''}
${options.moreDoors ?? ''}
`,
  );
  expect(runCli(['import', options.snapshot ?? 'examples/snapshot.json', '--config', path]).status).toBe(0);
  const gpio = new FakeGpio();
  const time = new ManualTime();
  const ports = new Map<string, FakePort>();
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info', base: undefined, timestamp: false }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const s = {
    dir,
    path,
    gpio,
    time,
    logs,
    async start(): Promise<Agent> {
      ports.clear();
      const openPort = (device: string) => {
        const port = new FakePort();
        ports.set(device, port);
        return port;
      };
      const agent = await startAgent(loadConfig(path), { logger, clock: time, timers: time, gpio, openPort, clockSynchronized: () => true });
      agents.push(agent);
      return agent;
    },
    async stop(agent: Agent): Promise<void> {
      agents.splice(agents.indexOf(agent), 1);
      await agent.stop();
    },
    /** A card at a reader (its device path). */
    tap(device: string, card: string): void {
      ports.get(device)!.line(card);
    },
    port(device: string): FakePort {
      return ports.get(device)!;
    },
    /** An input's level (a door opened, a button pressed); debounce 0. */
    set(pin: number, level: 0 | 1): void {
      gpio.set(pin, level);
    },
    relay(pin: number): number | undefined {
      return gpio.levels.get(pin);
    },
    events(): Recorded[] {
      const db = new Database(join(dir, 'data/state.db'), { readonly: true });
      try {
        const rows = db.prepare('SELECT seq, type, door_uuid, payload FROM events ORDER BY seq').all() as Array<{
          seq: number;
          type: string;
          door_uuid: string | null;
          payload: string;
        }>;
        return rows.map((r) => ({ seq: r.seq, type: r.type, door: r.door_uuid, data: JSON.parse(r.payload) as Record<string, unknown> }));
      } finally {
        db.close();
      }
    },
    of(...types: string[]): Recorded[] {
      return s.events().filter((e) => types.includes(e.type));
    },
    /** The decisions in order: [type, reason or null, direction]. */
    decisions(): Array<[string, unknown, unknown]> {
      return s.of('access_granted', 'access_denied', 'awaiting_second_person').map((e) => [e.type, e.data.reason ?? null, e.data.direction ?? null]);
    },
    /** `door-agent status --json` of this site. */
    status(): Record<string, unknown> {
      const r = runCli(['status', '--json', '--config', path]);
      return JSON.parse(r.stdout) as Record<string, unknown>;
    },
  };
  return s;
}

/** Through a door: its contact opens and closes again. */
function passThrough(s: ReturnType<typeof site>, contact: number): void {
  s.set(contact, OPEN);
  s.time.advance(1000);
  s.set(contact, CLOSED);
}

describe('an entry and an exit reader on one door', () => {
  it("each decision records the reader's direction; a door with one reader records none", async () => {
    const s = site();
    await s.start();
    s.tap('/dev/front-in', ALICE);
    expect(s.relay(FRONT)).toBe(1);
    passThrough(s, FRONT_CONTACT);
    s.tap('/dev/front-out', ALICE);
    expect(s.relay(FRONT)).toBe(1);
    passThrough(s, FRONT_CONTACT);
    s.tap('/dev/front-out', '4213579'); // Bob: suspended
    s.tap('/dev/back', ALICE);
    expect(s.decisions()).toEqual([
      ['access_granted', null, 'entry'],
      ['access_granted', null, 'exit'],
      ['access_denied', 'user_suspended', 'exit'],
      ['access_granted', null, null],
    ]);
    // The decision is shown at the reader it was made at.
    expect(s.port('/dev/front-in').written).toEqual(['OK\r\n']);
  });
});

describe('the interlock (mantrap)', () => {
  const interlock = `interlocks: [ { doors: [Front door, Back door] } ]`;

  it('refuses a grant, an exit button and the other door while one is unlocked or open', async () => {
    const s = site({ extra: interlock });
    await s.start();
    s.tap('/dev/back', ALICE);
    expect(s.relay(BACK)).toBe(1);
    s.tap('/dev/front-in', ERIN); // the back door is unlocked
    expect(s.relay(FRONT)).toBe(0);
    expect(s.of('access_denied').at(-1)!.data).toMatchObject({ reason: 'interlock', blocked_by: SECOND_DOOR_UUID, direction: 'entry' });
    expect(s.port('/dev/front-in').written).toEqual(['NO\r\n']);
    s.set(FRONT_EXIT, 0);
    s.set(FRONT_EXIT, 1);
    expect(s.relay(FRONT)).toBe(0);
    expect(s.of('exit_request').at(-1)!.data).toEqual({ refused: 'interlock', blocked_by: SECOND_DOOR_UUID });

    // The back door opens and relocks on its own; held open, it still blocks the front door.
    s.set(BACK_CONTACT, OPEN);
    s.time.advance(6000);
    expect(s.relay(BACK)).toBe(0);
    s.tap('/dev/front-in', ERIN);
    expect(s.relay(FRONT)).toBe(0);
    s.set(BACK_CONTACT, CLOSED);
    s.tap('/dev/front-in', ERIN);
    expect(s.relay(FRONT)).toBe(1);
    // And now the front door blocks the back door's exit button.
    s.set(BACK_EXIT, 0);
    s.set(BACK_EXIT, 1);
    expect(s.relay(BACK)).toBe(0);
    expect(s.decisions().map(([type, reason]) => [type, reason])).toEqual([
      ['access_granted', null],
      ['access_denied', 'interlock'],
      ['access_denied', 'interlock'],
      ['access_granted', null],
    ]);
  });

  it('gives way to the emergency release', async () => {
    const s = site({ extra: `${interlock}\nemergency: { pin: 26, doors: [Back door] }` });
    await s.start();
    s.set(26, OPEN); // the fire alarm releases the back door
    s.time.advance(100);
    expect(s.relay(BACK)).toBe(1);
    s.tap('/dev/front-in', ALICE);
    expect(s.relay(FRONT)).toBe(1);
    s.time.advance(6000);
    s.set(FRONT_EXIT, 0);
    s.set(FRONT_EXIT, 1);
    expect(s.relay(FRONT)).toBe(1);
    expect(s.of('access_denied')).toEqual([]);
  });
});

describe('the two-person rule', () => {
  it('the first tap is acknowledged and audited, the relay does not move; a second person within the window opens', async () => {
    const s = site({ front: '    twoPerson: { windowSeconds: 10 }' });
    await s.start();
    s.tap('/dev/front-in', ALICE);
    expect(s.relay(FRONT)).toBe(0);
    expect(s.port('/dev/front-in').written).toEqual(['WAIT\r\n']);
    expect(s.of('awaiting_second_person').at(-1)!.data).toMatchObject({ window_seconds: 10, restarted: false, who: 'Alice Adams', direction: 'entry' });
    s.time.advance(4000);
    s.tap('/dev/front-in', ALICE); // the same person again: still waiting, the window starts again
    expect(s.relay(FRONT)).toBe(0);
    s.time.advance(8000);
    s.tap('/dev/front-in', ERIN);
    expect(s.relay(FRONT)).toBe(1);
    expect(s.of('access_granted').at(-1)!.data).toMatchObject({ who: 'Erin Evans', first_person: [ALICE_REF] });
    expect(s.of('unlocked')).toHaveLength(1);

    // After the window, a tap is a first tap again.
    s.time.advance(20_000);
    s.tap('/dev/front-in', ERIN);
    s.time.advance(11_000);
    s.tap('/dev/front-in', ALICE);
    expect(s.relay(FRONT)).toBe(0);
    expect(s.decisions().map(([type]) => type)).toEqual([
      'awaiting_second_person',
      'awaiting_second_person',
      'access_granted',
      'awaiting_second_person',
      'awaiting_second_person',
    ]);
    expect(s.of('awaiting_second_person').map((e) => e.data.restarted)).toEqual([false, true, false, false]);
  });
});

describe('an area: anti-passback and occupancy', () => {
  const area = (keys: string) => `areas: [ { id: lab, name: Lab, doors: [Front door], ${keys} } ]`;

  it('hard in/out anti-passback refuses a second entry, and soft grants it raising passback_violation', async () => {
    const s = site({ extra: area('antiPassback: { mode: hard, rule: inout }') });
    await s.start();
    s.tap('/dev/front-in', ALICE);
    passThrough(s, FRONT_CONTACT);
    s.time.advance(6000);
    s.tap('/dev/front-in', ALICE); // inside already
    expect(s.relay(FRONT)).toBe(0);
    expect(s.of('access_denied').at(-1)!.data).toMatchObject({ reason: 'passback', area: 'lab', refused: [ALICE_REF] });
    s.tap('/dev/front-out', ALICE);
    passThrough(s, FRONT_CONTACT);
    s.time.advance(6000);
    s.tap('/dev/front-out', ALICE); // outside already
    expect(s.of('access_denied').at(-1)!.data).toMatchObject({ reason: 'passback', direction: 'exit' });
    // A responder is exempt: in twice.
    s.tap('/dev/front-in', DAVE);
    passThrough(s, FRONT_CONTACT);
    s.time.advance(6000);
    s.tap('/dev/front-in', DAVE);
    expect(s.relay(FRONT)).toBe(1);

    const soft = site({ extra: area('antiPassback: { mode: soft, rule: timed, seconds: 60 }') });
    await soft.start();
    soft.tap('/dev/front-in', ALICE);
    passThrough(soft, FRONT_CONTACT);
    soft.time.advance(10_000);
    soft.tap('/dev/front-out', ALICE); // within 60 s of the last passage
    expect(soft.relay(FRONT)).toBe(1);
    expect(soft.of('passback_violation').map((e) => e.data)).toEqual([{ area: 'lab', direction: 'exit', holders: [ALICE_REF], hint: '…78' }]);
  });

  it('counts who is in by passages (a grant not followed by an opening is none), refuses area_full at the maximum', async () => {
    const s = site({ extra: area('maxOccupancy: 2') });
    const agent = await s.start();
    s.tap('/dev/front-in', ALICE);
    s.time.advance(6000); // relocked: never opened
    expect(agent.lockState(DOOR_UUID)?.state).toBe('LOCKED');
    s.tap('/dev/front-in', ALICE);
    passThrough(s, FRONT_CONTACT);
    s.time.advance(6000);
    s.tap('/dev/front-in', ERIN);
    passThrough(s, FRONT_CONTACT);
    s.time.advance(6000);
    const opened = s.of('door_opened').map((e) => e.data.passages);
    // Each passage carries its own time: the opening's (what the muster list shows as `since`, after a restart too).
    expect(opened).toEqual([
      [{ area: 'lab', holder: 'user:101', direction: 'entry', at: expect.any(String) }],
      [{ area: 'lab', holder: 'user:105', direction: 'entry', at: expect.any(String) }],
    ]);
    s.tap('/dev/front-in', '7700001'); // Carol's guest card: the lab is full
    expect(s.of('access_denied').at(-1)!.data).toMatchObject({ reason: 'area_full', area: 'lab' });
    s.tap('/dev/front-in', DAVE); // a responder is never refused for the maximum
    passThrough(s, FRONT_CONTACT);
    s.time.advance(6000);
    s.tap('/dev/front-out', ERIN);
    passThrough(s, FRONT_CONTACT);
    const status = s.status() as { areas: Array<Record<string, unknown>> };
    expect(status.areas).toEqual([
      expect.objectContaining({
        id: 'lab',
        count: 2,
        maxOccupancy: 2,
        occupants: [
          expect.objectContaining({ email_id: 101, name: 'Alice Adams', door: DOOR_UUID }),
          expect.objectContaining({ email_id: 104, name: 'Dave Dunn' }),
        ],
      }),
    ]);
  });

  it('resets at its local time, also one missed while the agent was stopped', async () => {
    const s = site({ extra: area('antiPassback: { mode: hard, rule: inout }, resetAt: "15:00"') });
    let agent = await s.start();
    s.tap('/dev/front-in', ALICE);
    passThrough(s, FRONT_CONTACT);
    s.time.advance(61 * 60_000); // past 15:00
    expect(s.of('area_reset').map((e) => e.data)).toEqual([{ area: 'lab', by: 'schedule', scheduled: '2026-07-01T13:00:00.000Z' }]);
    s.tap('/dev/front-in', ALICE); // unknown again: in
    expect(s.relay(FRONT)).toBe(1);
    passThrough(s, FRONT_CONTACT);
    await s.stop(agent);

    s.time.advance(24 * 60 * 60_000); // stopped through the next day's 15:00
    agent = await s.start();
    expect(s.of('area_reset').map((e) => e.data.by)).toEqual(['schedule', 'schedule (missed while the agent was stopped)']);
    expect((s.status() as { areas: Array<{ count: number }> }).areas[0]!.count).toBe(0);
  });

  it('is replayed from the audit log at start: the muster list and anti-passback survive a restart', async () => {
    const s = site({ extra: area('antiPassback: { mode: hard, rule: inout }') });
    let agent = await s.start();
    s.tap('/dev/front-in', ALICE);
    passThrough(s, FRONT_CONTACT);
    s.time.advance(6000);
    s.tap('/dev/front-in', ERIN);
    passThrough(s, FRONT_CONTACT);
    await s.stop(agent);
    agent = await s.start();
    s.tap('/dev/front-in', ALICE);
    expect(s.relay(FRONT)).toBe(0);
    expect(s.of('access_denied').at(-1)!.data.reason).toBe('passback');
    expect((s.status() as { areas: Array<{ occupants: Array<{ email_id: number }> }> }).areas[0]!.occupants.map((o) => o.email_id)).toEqual([101, 105]);
  });
});

describe('an area of two doors: a grant still pending at one door counts at the other', () => {
  // Alice's second badge (4213599): another card of the same person.
  const ALICE_SECOND = '4213599';
  const snapshot = () => {
    const data = JSON.parse(readFileSync('examples/snapshot.json', 'utf8')) as {
      details: Record<string, { smartcards: Array<{ number: string; label: string }> }>;
    };
    data.details['101']!.smartcards.push({ number: ALICE_SECOND, label: 'second badge' });
    const path = join(tmp.path, `snapshot-${n}.json`);
    writeFileSync(path, JSON.stringify(data));
    return path;
  };
  const lab = (antiPassback: string) => `areas: [ { id: lab, doors: [Front door, Back door], antiPassback: ${antiPassback} } ]`;

  it('hard: her second card at the back door is refused while her grant at the front door is pending; allowed once it ran out unopened', async () => {
    const s = site({ extra: lab('{ mode: hard, rule: inout }'), snapshot: snapshot() });
    await s.start();
    s.tap('/dev/front-in', ALICE);
    expect(s.relay(FRONT)).toBe(1); // unlocked; the front door has not opened yet
    s.time.advance(1000);
    s.tap('/dev/back', ALICE_SECOND); // the same person, at the other door of the lab, before the front door opened
    expect(s.relay(BACK)).toBe(0);
    expect(s.of('access_denied').at(-1)!.data).toMatchObject({ reason: 'passback', area: 'lab', refused: [ALICE_REF] });
    s.tap('/dev/back', ALICE); // the same badge handed back: refused too
    expect(s.relay(BACK)).toBe(0);
    expect(s.of('access_denied').map((e) => e.data.reason)).toEqual(['passback', 'passback']);

    // The front door relocks unopened: that grant was no passage, and counts no more.
    s.time.advance(6000);
    expect(s.relay(FRONT)).toBe(0);
    s.tap('/dev/back', ALICE_SECOND);
    expect(s.relay(BACK)).toBe(1);
    passThrough(s, BACK_CONTACT);
    expect(s.of('door_opened').map((e) => [e.door, e.data.passages])).toEqual([
      [SECOND_DOOR_UUID, [{ area: 'lab', holder: 'user:101', direction: 'entry', at: expect.any(String) }]],
    ]);
    expect(s.of('passback_violation')).toEqual([]);
  });

  it('soft: the second grant goes through and raises passback_violation; timed: within the window of the pending grant', async () => {
    const s = site({ extra: lab('{ mode: soft, rule: timed, seconds: 60 }'), snapshot: snapshot() });
    await s.start();
    s.tap('/dev/front-in', ALICE_SECOND);
    s.time.advance(1000);
    s.tap('/dev/back', ALICE);
    expect(s.relay(BACK)).toBe(1);
    expect(s.of('passback_violation').map((e) => e.data)).toEqual([{ area: 'lab', direction: 'entry', holders: [ALICE_REF], hint: '…78' }]);
  });
});

describe('an area and the bounded audit log', () => {
  it('writes a checkpoint before the passages a replay needs could be evicted: the list survives eviction and a restart', async () => {
    const s = site({
      extra: `areas: [ { id: lab, doors: [Front door], antiPassback: { mode: hard, rule: inout } } ]`,
    });
    writeFileSync(s.path, readFileSync(s.path, 'utf8').replace('timezone: Europe/Berlin }', 'timezone: Europe/Berlin, maxEvents: 1000 }'));
    let agent = await s.start();
    s.tap('/dev/front-in', ALICE);
    passThrough(s, FRONT_CONTACT);
    s.time.advance(6000);
    // 1,200 more events at the back door (exit button: exit_request, unlocked, locked), which is in no area.
    for (let i = 0; i < 400; i++) {
      s.set(BACK_EXIT, 0);
      s.set(BACK_EXIT, 1);
      s.time.advance(6000);
    }
    expect(s.of('door_opened').filter((e) => e.door === DOOR_UUID)).toEqual([]); // evicted
    const checkpoints = s.of('area_checkpoint');
    expect(checkpoints.length).toBeGreaterThanOrEqual(1);
    expect(checkpoints.at(-1)!.data).toMatchObject({ area: 'lab', presence: [expect.objectContaining({ holder: 'user:101', inside: true, door: DOOR_UUID })] });
    await s.stop(agent);
    agent = await s.start();
    s.tap('/dev/front-in', ALICE);
    expect(s.of('access_denied').at(-1)!.data.reason).toBe('passback');
    expect((s.status() as { areas: Array<{ count: number }> }).areas[0]!.count).toBe(1);
  });
});

describe('doors that work together on MQTT', () => {
  let broker: Mosquitto;
  beforeAll(async () => {
    broker = new Mosquitto(join(tmp.path, 'broker'));
    await broker.start();
  });
  afterAll(async () => {
    await broker?.stop();
  });

  it('a remote unlock refused by the interlock; the muster list retained; a reset by command; the HA sensor', async () => {
    const prefix = `grp${n}`;
    const s = site({
      extra: `mqtt: { url: "${broker.url}", topicPrefix: ${prefix}, keepaliveSeconds: 5, homeAssistant: { prefix: ha-${prefix} } }
interlocks: [ { doors: [Front door, Back door] } ]
areas: [ { id: lab, name: Lab, doors: [Front door], antiPassback: { mode: hard, rule: inout } } ]`,
    });
    const op = await Operator.connect(broker.url);
    try {
      await op.subscribe(`${prefix}/#`, `ha-${prefix}/#`);
      await s.start();
      await op.waitFor((m) => m.topic === `${prefix}/agents/test-agent/status` && m.text === 'online', 10_000, 'the agent online');
      const occupancy = `${prefix}/agents/test-agent/areas/lab/occupancy`;
      const first = await op.waitFor((m) => m.topic === occupancy, 10_000, 'the occupancy');
      expect(first.json).toMatchObject({ area: 'lab', name: 'Lab', count: 0, occupants: [] });
      expect(first.retain).toBe(false); // published live; retained on the broker
      const sensor = await op.waitFor((m) => m.topic === `ha-${prefix}/sensor/test-agent_area_lab_occupancy/config`, 10_000, 'the sensor');
      expect(sensor.json).toMatchObject({ state_topic: occupancy, value_template: '{{ value_json.count }}' });

      s.tap('/dev/front-in', ALICE);
      s.set(FRONT_CONTACT, OPEN);
      const inside = await op.waitFor((m) => m.topic === occupancy && (m.json as { count: number }).count === 1, 10_000, 'Alice in');
      expect((inside.json as { occupants: unknown[] }).occupants).toEqual([
        { holder: 'user:101', email_id: 101, name: 'Alice Adams', since: new Date(s.time.wall).toISOString(), door: DOOR_UUID, door_name: 'Front door' },
      ]);
      expect(JSON.stringify(inside.json)).not.toContain('4213578');

      // The front door is open: the back door's remote unlock is refused.
      op.clear();
      await op.publish(`${prefix}/doors/${SECOND_DOOR_UUID}/set`, '{"lock_state":false,"unlock_time":5}');
      const refused = await op.waitFor((m) => m.topic === `${prefix}/doors/${SECOND_DOOR_UUID}/reply`, 10_000, 'the reply');
      expect(refused.json).toMatchObject({ status: 409, error: 'Back door is interlocked with Front door, which is unlocked or open: unlock refused' });
      expect(s.relay(BACK)).toBe(0);
      const ha = await op.waitFor((m) => m.topic === `${prefix}/doors/${SECOND_DOOR_UUID}/ha/access`, 10_000, 'unlock_refused');
      expect(ha.json).toMatchObject({ event_type: 'unlock_refused', reason: 'interlock' });
      s.set(FRONT_CONTACT, CLOSED);

      // The reset command: the list empties, Alice is unknown again.
      op.clear();
      await op.publish(`${prefix}/agents/test-agent/areas/reset`, JSON.stringify({ area: 'lab', by: 'Fire marshal' }));
      await op.waitFor((m) => m.topic === occupancy && (m.json as { count: number }).count === 0, 10_000, 'emptied');
      expect(s.of('area_reset').map((e) => e.data)).toEqual([{ area: 'lab', by: 'Fire marshal (MQTT)' }]);
      await op.publish(`${prefix}/agents/test-agent/areas/reset`, JSON.stringify({ area: 'nowhere' }));
      await op.publish(`${prefix}/agents/test-agent/areas/reset`, '{"area":');
      s.time.advance(6000);
      s.tap('/dev/front-in', ALICE);
      expect(s.relay(FRONT)).toBe(1);
      expect(s.of('area_reset')).toHaveLength(1);
    } finally {
      await op.client.endAsync();
    }
  });

  describe('an unlock schedule on an interlocked door asks the interlock, as every unlock does', () => {
    /** Every day: the back door is held unlocked from `from` to 18:00 (Berlin); the clock starts at 14:00. */
    const scheduled = (from: number) => `    unlockSchedule: [${Array.from({ length: 7 }, () => `[[${from}, 18]]`).join(', ')}]`;
    const interlocked = (prefix: string, more = '') => `mqtt: { url: "${broker.url}", topicPrefix: ${prefix}, keepaliveSeconds: 5 }
interlocks: [ { doors: [Front door, Back door] } ]
${more}`;
    /** A remote command to the front door (hold open, or lock), answered 200. */
    const front = async (op: Operator, prefix: string, body: Record<string, unknown>, id: string) => {
      op.clear();
      await op.publish(`${prefix}/doors/${DOOR_UUID}/set`, JSON.stringify({ ...body, request_id: id }));
      const reply = await op.waitFor(
        (m) => m.topic === `${prefix}/doors/${DOOR_UUID}/reply` && (m.json as { request_id?: string }).request_id === id,
        15_000,
        `the reply to ${id}`,
      );
      expect(reply.json).toMatchObject({ status: 200 });
    };
    /** The agent started and online on the broker, an operator connected to it for `act`. */
    const online = async (s: ReturnType<typeof site>, prefix: string, act: (op: Operator, agent: Agent) => Promise<void>) => {
      const op = await Operator.connect(broker.url);
      try {
        await op.subscribe(`${prefix}/#`);
        const agent = await s.start();
        await op.waitFor((m) => m.topic === `${prefix}/agents/test-agent/status` && m.text === 'online', 15_000, 'the agent online');
        await act(op, agent);
      } finally {
        await op.client.endAsync();
      }
    };
    const waits = (s: ReturnType<typeof site>) => s.of('schedule_waiting_for_interlock').map((e) => [e.door, e.data]);
    const backUnlocks = (s: ReturnType<typeof site>) =>
      s
        .of('unlocked')
        .filter((e) => e.door === SECOND_DOOR_UUID)
        .map((e) => e.data.cause);

    it("the schedule's start: the door stays locked while the other is held unlocked, the wait recorded once; it unlocks when that one locks", async () => {
      const prefix = `grp${n}`;
      const s = site({ extra: interlocked(prefix), back: scheduled(15) });
      await online(s, prefix, async (op, agent) => {
        await front(op, prefix, { lock_state: false }, 'hold-front'); // held open by an operator
        expect(s.relay(FRONT)).toBe(1);
        s.time.advance(60 * 60_000); // 15:00: the back door's hours begin
        expect(s.relay(BACK)).toBe(0);
        s.time.advance(5 * 60_000); // the schedule looks again each minute: still waiting, recorded once
        expect(s.relay(BACK)).toBe(0);
        expect(waits(s)).toEqual([[SECOND_DOOR_UUID, { blocked_by: DOOR_UUID }]]);
        expect(backUnlocks(s)).toEqual([]);

        await front(op, prefix, { lock_state: true }, 'lock-front');
        expect(s.relay(FRONT)).toBe(0);
        expect(s.relay(BACK)).toBe(1);
        expect(agent.lockState(SECOND_DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'unlock schedule' });
        expect(backUnlocks(s)).toEqual(['unlock schedule']);
        expect(waits(s)).toHaveLength(1);
        // Held by its schedule, the back door now keeps the front door from unlocking.
        s.tap('/dev/front-in', ALICE);
        expect(s.relay(FRONT)).toBe(0);
        expect(s.of('access_denied').at(-1)!.data).toMatchObject({ reason: 'interlock', blocked_by: SECOND_DOOR_UUID });
      });
    });

    it('the end of a lockdown: the schedule resumes only once the other door has locked', async () => {
      const prefix = `grp${n}`;
      const s = site({ extra: interlocked(prefix), back: scheduled(14) });
      await online(s, prefix, async (op) => {
        expect(s.relay(BACK)).toBe(1); // in its hours from the start
        const lockdown = `${prefix}/doors/${SECOND_DOOR_UUID}/lockdown`;
        await op.publish(lockdown, JSON.stringify({ lockdown: true, by: 'Security desk' }), { retain: true });
        await waitUntil(() => s.of('lockdown_started').length === 1, 15_000, 'the lockdown');
        expect(s.relay(BACK)).toBe(0);
        await front(op, prefix, { lock_state: false }, 'hold-front');
        expect(s.relay(FRONT)).toBe(1);

        await op.publish(lockdown, JSON.stringify({ lockdown: false, by: 'Security desk' }), { retain: true });
        await waitUntil(() => s.of('lockdown_ended').length === 1, 15_000, 'the end of the lockdown');
        s.time.advance(3 * 60_000);
        expect(s.relay(BACK)).toBe(0);
        expect(waits(s)).toEqual([[SECOND_DOOR_UUID, { blocked_by: DOOR_UUID }]]);

        await front(op, prefix, { lock_state: true }, 'lock-front');
        expect(s.relay(BACK)).toBe(1);
        expect(backUnlocks(s)).toEqual(['unlock schedule', 'unlock schedule']);
        await op.publish(lockdown, '', { retain: true });
      });
    });

    it('the end of a fire release: the fire release itself ignores the interlock; after it, the schedule waits for the other door to close', async () => {
      const prefix = `grp${n}`;
      const s = site({ extra: interlocked(prefix, 'emergency: { pin: 26, doors: [Front door, Back door] }'), back: scheduled(14) });
      await s.start();
      expect(s.relay(BACK)).toBe(1);
      s.set(26, OPEN); // the fire alarm: both doors released
      s.time.advance(100);
      expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]);
      s.set(FRONT_CONTACT, OPEN); // people leave through the front door
      s.set(26, CLOSED); // the fire alarm clears while the front door is still open
      s.time.advance(100);
      expect(s.relay(FRONT)).toBe(0);
      expect(s.relay(BACK)).toBe(0);
      s.time.advance(2 * 60_000);
      expect(s.relay(BACK)).toBe(0);
      expect(waits(s)).toEqual([[SECOND_DOOR_UUID, { blocked_by: DOOR_UUID }]]);

      s.set(FRONT_CONTACT, CLOSED);
      expect(s.relay(BACK)).toBe(1);
      expect(backUnlocks(s)).toEqual(['unlock schedule', 'unlock schedule']);
      expect(waits(s)).toHaveLength(1);
    });

    it("two schedules hand over at 16:00 (the front door's hours end as the back door's begin), and leave no timer behind", async () => {
      const hours = (from: number, to: number) => `    unlockSchedule: [${Array.from({ length: 7 }, () => `[[${from}, ${to}]]`).join(', ')}]`;
      const s = site({ extra: 'interlocks: [ { doors: [Front door, Back door] } ]', front: hours(14, 16), back: hours(16, 18) });
      const agent = await s.start();
      expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 0]);
      // The front door's lock leads the back door's schedule to unlock, which leads the front door's schedule to look
      // again inside its own evaluation: each schedule keeps one timer.
      s.time.advance(2 * 60 * 60_000 + 100);
      expect([s.relay(FRONT), s.relay(BACK)]).toEqual([0, 1]);
      expect(agent.lockState(SECOND_DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'unlock schedule' });
      await s.stop(agent);
      expect(s.time.pendingCount).toBe(0);
    });

    it('a timed unlock the fire override let through is never taken over by the schedule while the gate refuses: it relocks at its deadline, and the schedule waits', async () => {
      // Three doors in one interlock; the fire input releases the side door alone. Its override lets taps through at
      // the front and back doors (people leaving); the fire is over when the front door's hours begin at 15:00.
      const SIDE_DOOR_UUID = '3c9d8e7f-1a2b-4c3d-8e4f-5a6b7c8d9e0f';
      const SIDE = 19;
      const s = site({
        extra: `interlocks: [ { doors: [Front door, Back door, Side door] } ]\nemergency: { pin: 26, doors: [Side door] }`,
        front: `    unlockSeconds: 300\n${scheduled(15)}`,
        back: '    unlockSeconds: 600',
        moreDoors: `  - uuid: ${SIDE_DOOR_UUID}\n    resourceId: 14\n    name: Side door\n    relay: { pin: ${SIDE} }`,
      });
      const agent = await s.start();
      s.time.advance(58 * 60_000); // 14:58
      s.set(26, OPEN); // the fire alarm releases the side door
      s.time.advance(100);
      expect(s.relay(SIDE)).toBe(1);
      s.tap('/dev/front-in', ALICE); // let through by the override: unlocked until 15:03
      s.tap('/dev/back', ALICE); // the same: unlocked until 15:08
      expect([s.relay(FRONT), s.relay(BACK)]).toEqual([1, 1]);
      s.set(26, CLOSED);
      s.time.advance(100);
      expect([s.relay(FRONT), s.relay(BACK), s.relay(SIDE)]).toEqual([1, 1, 0]);

      s.time.advance(2 * 60_000); // 15:00: the front door's hours begin while the back door is unlocked
      expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', heldOpen: false });
      expect(agent.lockState(DOOR_UUID)?.cause).not.toBe('unlock schedule');
      expect(waits(s)).toEqual([[DOOR_UUID, { blocked_by: SECOND_DOOR_UUID }]]);
      s.time.advance(3 * 60_000); // 15:03: the card's unlock runs out; the back door is still unlocked
      expect([s.relay(FRONT), s.relay(BACK)]).toEqual([0, 1]);
      s.time.advance(4 * 60_000);
      expect(s.relay(FRONT)).toBe(0);

      s.time.advance(60_000); // 15:08: the back door relocks; now the gate allows the front door's hold
      expect(s.relay(BACK)).toBe(0);
      expect(s.relay(FRONT)).toBe(1);
      expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED', cause: 'unlock schedule' });
      const frontUnlocks = s.of('unlocked').filter((e) => e.door === DOOR_UUID);
      expect(frontUnlocks.map((e) => e.data.cause)).toHaveLength(2);
      expect(frontUnlocks.at(-1)!.data.cause).toBe('unlock schedule');
      expect(waits(s)).toHaveLength(1);
    });
  });

  it('signed resets (mqtt.commandSecretFile): a correct one empties the list; a wrong signature, a stale issued_at and a replayed request_id are refused and change nothing', async () => {
    const prefix = `grp${n}`;
    const secret = 'a-command-secret-of-at-least-32-bytes!!';
    const secretFile = join(tmp.path, `secret-${prefix}`);
    writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
    const s = site({
      extra: `mqtt: { url: "${broker.url}", topicPrefix: ${prefix}, keepaliveSeconds: 5, commandSecretFile: ${secretFile}, commandMaxAgeSeconds: 60 }
areas: [ { id: lab, name: Lab, doors: [Front door], antiPassback: { mode: hard, rule: inout } } ]`,
    });
    const resetTopic = `${prefix}/agents/test-agent/areas/reset`;
    const replyTopic = `${prefix}/agents/test-agent/areas/reply`;
    const occupancy = `${prefix}/agents/test-agent/areas/lab/occupancy`;
    // Signed as docs/mqtt.md says: over "areas reset agent:<id>\n" and the canonical JSON, issued now by the agent's clock.
    const signed = (requestId: string, options: { issuedAt?: number; key?: string } = {}) =>
      retainedPayload(
        'areas reset agent:test-agent',
        { area: 'lab', by: 'Fire marshal', request_id: requestId },
        options.key ?? secret,
        options.issuedAt ?? Math.floor(s.time.wall / 1000),
      );
    const inside = () => (s.status().areas as Array<{ count: number; occupants: Array<{ holder: string }> }>)[0]!;
    const op = await Operator.connect(broker.url);
    try {
      await op.subscribe(`${prefix}/#`);
      await s.start();
      await op.waitFor((m) => m.topic === `${prefix}/agents/test-agent/status` && m.text === 'online', 10_000, 'the agent online');
      s.tap('/dev/front-in', ALICE);
      s.set(FRONT_CONTACT, OPEN);
      await op.waitFor((m) => m.topic === occupancy && (m.json as { count: number }).count === 1, 10_000, 'Alice in');
      s.set(FRONT_CONTACT, CLOSED);

      // Signed with another key: 401, as a door command's wrong signature; the reply under its request_id.
      const forged = await op.command(replyTopic, resetTopic, signed('r-forged', { key: 'another-secret-of-at-least-32-bytes!!!' }), 'r-forged');
      expect(forged).toEqual({ status: 401, error: 'signature does not match', request_id: 'r-forged' });
      // Unsigned: 401 too.
      const plain = await op.command(replyTopic, resetTopic, { area: 'lab' }, 'r-plain');
      expect(plain).toMatchObject({ status: 401, error: 'unsigned: issued_at and signature are required here' });
      // Signed right, but issued longer ago than commandMaxAgeSeconds: 409.
      const stale = await op.command(replyTopic, resetTopic, signed('r-stale', { issuedAt: Math.floor(s.time.wall / 1000) - 61 }), 'r-stale');
      expect(stale).toEqual({ status: 409, error: 'issued 61 s ago: older than 60 s (or the clocks differ)', request_id: 'r-stale' });
      expect(s.of('area_reset')).toEqual([]);
      expect(inside()).toMatchObject({ count: 1, occupants: [{ holder: 'user:101' }] });

      // Signed right and fresh: the list empties.
      const good = signed('r-good');
      expect(await op.command(replyTopic, resetTopic, good, 'r-good')).toEqual({ status: 200, success: 'lab reset', request_id: 'r-good' });
      await op.waitFor((m) => m.topic === occupancy && (m.json as { count: number }).count === 0, 10_000, 'emptied');
      expect(s.of('area_reset').map((e) => e.data)).toEqual([{ area: 'lab', by: 'Fire marshal (MQTT)' }]);

      // Alice in again (unknown since the reset); the very same reset sent again, still within its age: 409.
      s.time.advance(6000);
      s.tap('/dev/front-in', ALICE);
      s.set(FRONT_CONTACT, OPEN);
      await op.waitFor((m) => m.topic === occupancy && (m.json as { count: number }).count === 1, 10_000, 'Alice in again');
      s.set(FRONT_CONTACT, CLOSED);
      const replayed = await op.command(replyTopic, resetTopic, good, 'r-good');
      expect(replayed).toEqual({ status: 409, error: 'request_id r-good was already executed', request_id: 'r-good' });
      expect(s.of('area_reset')).toHaveLength(1);
      expect(inside()).toMatchObject({ count: 1, occupants: [{ holder: 'user:101' }] });
      expect(s.logs.filter((l) => l.msg === 'area reset refused')).toHaveLength(4);
    } finally {
      await op.client.endAsync();
    }
  });
});
