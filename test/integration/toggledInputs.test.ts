import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { WIRING_SETTLE_MS } from '../../src/door/emergencyInput.js';
import { FLOOD_BURST } from '../../src/door/inputFloods.js';
import { auditEvents } from '../support/agentSite.js';
import { runCli, tempDir, writeConfig } from '../support/cli.js';
import { FakeGpio } from '../support/fakeGpio.js';
import { ManualTime } from '../support/manualTime.js';
import { useDoorRuntime } from './doorRuntimeHarness.js';

// Every input an attacker (or a bad wire) can toggle passes one flood guard (issue 51 item 3): per family, toggled
// far past ten changes a minute, each event type is recorded ten times at once and the rest counted in a summary.
// The GPIO families through the agent's composition root (a fake GPIO driver, the manual clock, real SQLite); the
// readers' through a real DoorRuntime (their state and noise come from the reader drivers).
const tmp = tempDir('door-agent-toggled-');
afterAll(tmp.cleanup);
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.stop();
});

const LOOP = 26; // emergency.pin: 1 = the loop open (alarm)
const CONFIRM = 19; // emergency.confirmPin: 1 = open (normal)
const MAINS = 12; // 1 = mains present
const BATTERY = 16; // 1 = battery low
const EXIT = 22; // 0 = pressed
const TAMPER = 23; // 1 = enclosure open
const CONTACT = 24; // 1 = door open

let n = 0;
async function agentSite() {
  const dir = join(tmp.path, `t${n++}`);
  mkdirSync(dir);
  const path = writeConfig(dir, {
    extra: `emergency: { pin: ${LOOP}, confirmPin: ${CONFIRM}, debounceMs: 0 }\npower: { mainsPin: ${MAINS}, batteryLowPin: ${BATTERY}, debounceMs: 0 }`,
    doorExtra: `    contact: { pin: ${CONTACT}, debounceMs: 0 }\n    exitButton: { pin: ${EXIT}, debounceMs: 0 }\n    tamper: { pin: ${TAMPER}, debounceMs: 0 }\n`,
  });
  expect(runCli(['import', 'examples/snapshot.json', '--config', path]).status).toBe(0);
  const gpio = new FakeGpio();
  const time = new ManualTime();
  const logger = pino({ level: 'silent' });
  const agent = await startAgent(loadConfig(path), { logger, clock: time, timers: time, gpio, clockSynchronized: () => true });
  agents.push(agent);
  const events = () => auditEvents(path);
  return { gpio, time, events };
}

type Site = Awaited<ReturnType<typeof agentSite>>;

const RELAY = 17; // the front door's relay (fail-secure, active high): 1 = unlocked

/** An exit press (the REX input spoofed): pressed, then let go. */
function pressExit(s: Site): void {
  s.gpio.set(EXIT, 0);
  s.time.advance(100);
  s.gpio.set(EXIT, 1);
  s.time.advance(100);
}

/** Flaps `pin` once per toggle, 100 ms apart: to `first` on even toggles, back on odd ones. */
const flap =
  (pin: number, first: 0 | 1) =>
  (s: Site, i: number): void => {
    s.gpio.set(pin, i % 2 === 0 ? first : first === 1 ? 0 : 1);
    s.time.advance(100);
  };

/**
 * Per family: one toggle (the attacker's hand), how many events of each type `toggles` toggles (100 unless said)
 * make, and for the lock moves the cause of each and how often the relay must have unlocked and relocked.
 */
const FAMILIES: Array<{
  family: string;
  toggles?: number;
  toggle: (s: Site, i: number) => void;
  expected: Record<string, number>;
  causes?: Record<string, string>;
  relayCycles?: number;
}> = [
  {
    family: 'fire alarm input (a real alarm: the loop opens, the confirm contact closes)',
    toggle: (s, i) => {
      s.gpio.set(LOOP, i % 2 === 0 ? 1 : 0);
      s.gpio.set(CONFIRM, i % 2 === 0 ? 0 : 1);
      s.time.advance(100);
    },
    expected: { emergency_release: 50, emergency_cleared: 50 },
  },
  {
    family: 'fire alarm input wiring (the common wire cut and mended, each held past the settle time)',
    toggle: (s, i) => {
      s.gpio.set(LOOP, i % 2 === 0 ? 1 : 0); // the confirm contact stays open: both open is a wiring fault
      s.time.advance(WIRING_SETTLE_MS + 100);
    },
    expected: { emergency_wiring: 50, emergency_wiring_cleared: 50 },
  },
  {
    family: 'mains power input',
    toggle: flap(MAINS, 0),
    expected: { power_lost: 50, power_restored: 50 },
  },
  {
    family: 'battery-low input',
    toggle: flap(BATTERY, 1),
    expected: { battery_low: 50, battery_ok: 50 },
  },
  {
    family: 'tamper switch',
    toggle: flap(TAMPER, 1),
    expected: { tamper: 100 },
  },
  {
    family: 'door contact (a magnet on the reed switch, the door locked)',
    toggle: flap(CONTACT, 1),
    expected: { door_opened: 50, door_closed: 50, door_forced: 50 },
  },
  {
    family: 'exit button',
    toggle: flap(EXIT, 0),
    expected: { exit_request: 50 },
  },
  {
    family: "exit button's unlock and the contact's close-relock (a REX spoof and a magnet on the reed switch, 60 cycles in a minute)",
    toggles: 60,
    toggle: (s) => {
      pressExit(s); // unlocks
      s.gpio.set(CONTACT, 1); // opened while unlocked: no alarm
      s.time.advance(100);
      s.gpio.set(CONTACT, 0); // closed behind "someone": relocked at once
      s.time.advance(100);
    },
    expected: { unlocked: 60, locked: 60, exit_request: 60, door_opened: 60, door_closed: 60 },
    causes: { unlocked: 'exit button', locked: 'door closed' },
    relayCycles: 60,
  },
  {
    family: "exit button's unlock ended by its relock timer (pressed, nobody opens)",
    toggles: 60,
    toggle: (s) => {
      pressExit(s);
      s.time.advance(5_000); // unlockSeconds (5) run out: the relock timer locks
    },
    expected: { unlocked: 60, locked: 60, exit_request: 60 },
    causes: { unlocked: 'exit button', locked: 'timer' },
    relayCycles: 60,
  },
];

const counted = (events: Array<Record<string, unknown>>) => events.reduce((sum, e) => sum + (e.summary === true ? (e.count as number) : 1), 0);

describe('every input an attacker can toggle is summarized past ten changes a minute', () => {
  it.each(FAMILIES)('$family', async ({ toggles = 100, toggle, expected, causes, relayCycles }) => {
    const s = await agentSite();
    const started = s.gpio.log.length;
    for (let i = 0; i < toggles; i++) toggle(s, i);
    s.time.advance(60_000); // the minute ends: the summaries are recorded
    if (relayCycles !== undefined) {
      // Only what is recorded is summarized: the relay unlocked and relocked at every cycle.
      const writes = s.gpio.log.slice(started).filter((line) => line.startsWith(`write ${RELAY}=`));
      expect(writes).toEqual(Array.from({ length: relayCycles }, () => [`write ${RELAY}=1`, `write ${RELAY}=0`]).flat());
    }
    const events = s.events();
    for (const [type, total] of Object.entries(expected)) {
      const of = events.filter((e) => e.type === type);
      if (causes?.[type] !== undefined) expect(new Set(of.map((e) => e.cause)), type).toEqual(new Set([causes[type]]));
      expect(of.filter((e) => e.summary !== true).length, type).toBeLessThanOrEqual(FLOOD_BURST);
      expect(of.filter((e) => e.summary === true).length, type).toBeGreaterThan(0);
      expect(counted(of), type).toBe(total); // nothing lost: each change is an event or counted in one
      expect(
        of.find((e) => e.summary === true),
        type,
      ).toMatchObject({
        first_at: expect.any(String),
        last_at: expect.any(String),
        current: expect.any(Object),
      });
    }
  });
});

const runtime = useDoorRuntime();

describe('the readers (their state and noise, as the reader drivers report them)', () => {
  it.each([
    {
      family: 'OSDP reader status (a reader unplugged and plugged, its tamper and power reports)',
      toggle: (t: ReturnType<typeof runtime>, i: number) => {
        t.runtime.readerStatus(i % 2 === 0 ? 'reader_offline' : 'reader_online', { address: 1 });
        t.runtime.readerStatus('reader_tamper', { address: 1, state: i % 2 === 0 ? 'tampered' : 'restored' });
        t.runtime.readerStatus('reader_power', { address: 1, state: i % 2 === 0 ? 'failure' : 'restored' });
      },
      expected: { reader_offline: 50, reader_online: 50, reader_tamper: 100, reader_power: 100 },
    },
    {
      family: 'reader noise (garbage lines, unknown frames)',
      toggle: (t: ReturnType<typeof runtime>) => t.runtime.onReaderNoise({ count: 1, units: 8, reasons: { unrecognized: 1 } }),
      expected: { reader_noise: 100 },
    },
  ])('$family', ({ toggle, expected }) => {
    const t = runtime();
    for (let i = 0; i < 100; i++) {
      toggle(t, i);
      t.time.advance(100);
    }
    t.time.advance(60_000);
    for (const [type, total] of Object.entries(expected)) {
      const of = t.all().filter((e) => e.type === type);
      expect(of.filter((e) => e.summary !== true).length, type).toBeLessThanOrEqual(FLOOD_BURST);
      // Reader noise adds up the frames it stands for; the others count their occurrences.
      const weight = (e: (typeof of)[number]) => (type === 'reader_noise' ? (e.frames as number) : e.summary === true ? (e.count as number) : 1);
      expect(
        of.reduce((sum, e) => sum + weight(e), 0),
        type,
      ).toBe(total);
    }
  });
});
