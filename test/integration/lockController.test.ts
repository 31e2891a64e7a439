import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { relayLevel } from '../../src/core/relay.js';
import { LockController } from '../../src/door/lockController.js';
import { SimulatedGpio } from '../../src/hardware/simulatedGpio.js';
import { DoorStateStore } from '../../src/store/doorState.js';
import { systemClock, systemTimers, type Clock } from '../../src/util/clock.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { waitUntil } from '../support/wait.js';

const tmp = tempDir();
afterAll(tmp.cleanup);

let n = 0;
const open: Array<{ gpio: SimulatedGpio; controller: LockController }> = [];
afterEach(() => {
  for (const o of open.splice(0)) {
    o.controller.shutdown();
    o.gpio.close();
  }
});

function door(settings = 'relay: { pin: 17 }') {
  return parseConfig(
    `agent: { id: t }
access: { groups: [Staff] }
doors: [ { uuid: ${DOOR_UUID}, resourceId: 12, ${settings} } ]`,
    'test',
  ).doors[0]!;
}

/** Starts a door the way the daemon does: relay at its locked level, then the store, then resume. */
function start(dir: string, doorConfig = door(), clock: Clock = systemClock) {
  const gpio = new SimulatedGpio(join(dir, 'gpio'));
  const relay = gpio.openOutput(17, relayLevel('LOCKED', doorConfig.failMode, doorConfig.relay.activeLow));
  const valueAtStart = readFileSync(join(dir, 'gpio/gpio17/value'), 'utf8');
  const persistence = new DoorStateStore(join(dir, 'doors'));
  const controller = new LockController(doorConfig, relay, {
    clock,
    timers: systemTimers,
    persistence,
    clockSynchronized: () => true,
    onPersistError: (err) => {
      throw err;
    },
  });
  const handle = { gpio, controller, persistence };
  open.push(handle);
  return Object.assign(handle, { valueAtStart, resumed: controller.resume() });
}

/**
 * Ends a controller as a crash would for what matters here: its timers stop, the persisted state stays as
 * it was. (The relay is driven locked too, which the next start does anyway.) The crash comes once the last save
 * is on disk: the state file is written behind, on the thread pool, within milliseconds (a crash inside them
 * restarts locked, the safe side; store/doorState.ts).
 */
async function crash(handle: { gpio: SimulatedGpio; controller: LockController; persistence: DoorStateStore }): Promise<void> {
  await handle.persistence.settled();
  open.splice(open.indexOf(handle), 1);
  handle.controller.shutdown();
  handle.gpio.close();
}

function newDir(): string {
  const dir = join(tmp.path, `door-${n++}`);
  mkdirSync(dir);
  return dir;
}

const relayValue = (dir: string) => readFileSync(join(dir, 'gpio/gpio17/value'), 'utf8').trim();

describe('lock controller on simulated GPIO with its state in real files', () => {
  it('unlocks for 1 s and relocks by itself', async () => {
    const dir = newDir();
    const { controller } = start(dir);
    expect(relayValue(dir)).toBe('0');
    const snapshot = controller.unlock(1, 'test');
    expect(relayValue(dir)).toBe('1');
    expect(snapshot.state).toBe('UNLOCKED');
    expect(snapshot.relockAt! - Date.now()).toBeGreaterThan(900);
    const waited = await waitUntil(() => relayValue(dir) === '0', 3000, 'relocked');
    expect(waited).toBeGreaterThan(800);
    expect(controller.snapshot().state).toBe('LOCKED');
  });

  it('drives the locked level at start even when the relay was left energized, before resuming', () => {
    const dir = newDir();
    mkdirSync(join(dir, 'gpio/gpio17'), { recursive: true });
    writeFileSync(join(dir, 'gpio/gpio17/value'), '1\n');
    const { valueAtStart, resumed } = start(dir);
    expect(valueAtStart.trim()).toBe('0');
    expect(resumed.state).toBe('LOCKED');
  });

  it('after a crash, an unexpired timed unlock resumes until its deadline', async () => {
    const dir = newDir();
    const first = start(dir);
    const { relockAt } = first.controller.unlock(2, 'test');
    await crash(first);

    const second = start(dir);
    expect(second.valueAtStart.trim()).toBe('0');
    expect(second.resumed.state).toBe('UNLOCKED');
    expect(Math.abs(second.resumed.relockAt! - relockAt!)).toBeLessThan(50);
    expect(relayValue(dir)).toBe('1');
    await waitUntil(() => relayValue(dir) === '0', 4000, 'relocked at the deadline');
    expect(Date.now()).toBeGreaterThanOrEqual(relockAt! - 20);
  });

  it('a hold-open resumes after a restart; an expired unlock starts LOCKED', async () => {
    const dir = newDir();
    const first = start(dir);
    first.controller.unlock(null, 'hold');
    await crash(first);
    const second = start(dir);
    expect(second.resumed).toMatchObject({ state: 'UNLOCKED', relockAt: null });
    expect(relayValue(dir)).toBe('1');

    // Persist a timed unlock, then start with a clock 10 minutes later.
    second.controller.unlock(5, 'test');
    second.controller.lock('test');
    second.controller.unlock(5, 'test');
    await crash(second);
    const later: Clock = { wallNow: () => Date.now() + 600_000, monoNow: () => performance.now() };
    const third = start(dir, door(), later);
    expect(third.resumed.state).toBe('LOCKED');
    expect(relayValue(dir)).toBe('0');
  });

  it('fail-safe with an active-low relay: locked means energized, written as 0', () => {
    const dir = newDir();
    const { controller } = start(dir, door('failMode: safe, relay: { pin: 17, activeLow: true }'));
    expect(relayValue(dir)).toBe('0');
    controller.unlock(5, 'test');
    expect(relayValue(dir)).toBe('1');
  });
});
