import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { edgesOf, encodeCard } from '../../src/core/wiegand.js';
import { ChardevGpio } from '../../src/hardware/chardev/chardevGpio.js';
import { monotonicUs } from '../../src/hardware/chardev/lineEvents.js';
import { DOOR_UUID, SECOND_DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { FakeChardev } from '../support/fakeChardev.js';
import { ManualTime } from '../support/manualTime.js';

// The composition root on the character-device driver, over a fake of the addon's seam (the kernel's side:
// requests, values, edge records): the order in which lines are claimed, what stays held, and the failure
// paths. Front door: relay 17 (locked = 0), a Wiegand reader on 5/6; Back door: relay 18 (locked = 0).
const tmp = tempDir('door-agent-appcd-');
afterAll(tmp.cleanup);
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.stop();
});

let n = 0;
function site() {
  const dir = join(tmp.path, `c${n++}`);
  mkdirSync(join(dir, 'dev'), { recursive: true });
  const path = writeConfig(dir, { twoDoors: true, doorExtra: '    unlockSeconds: 3\n    reader: { type: wiegand, d0: 5, d1: 6 }\n' });
  expect(runCli(['import', 'examples/snapshot.json', '--config', path]).status).toBe(0);
  const kernel = new FakeChardev(join(dir, 'dev'), { gpiochip0: { name: 'gpiochip0', label: 'pinctrl-bcm2711', lines: 58 } });
  return { config: loadConfig(path), kernel, gpio: new ChardevGpio(kernel, 'auto', join(dir, 'dev')), time: new ManualTime() };
}

async function start(s: ReturnType<typeof site>, extra: Partial<Parameters<typeof startAgent>[1]> = {}) {
  const agent = await startAgent(s.config, {
    logger: pino({ level: 'silent' }),
    clock: s.time,
    timers: s.time,
    gpio: s.gpio,
    clockSynchronized: () => true,
    ...extra,
  });
  agents.push(agent);
  return agent;
}

/** Alice's card on the Front door's Wiegand lines, its last edge 30 ms ago (kernel time). */
function tapAlice(s: ReturnType<typeof site>) {
  const edges = edgesOf(encodeCard(4_213_578n), 0);
  const start = monotonicUs() - 30_000 - edges.at(-1)!.atUs;
  s.kernel.edges(
    s.kernel.fdOf(5),
    edges.map((e) => ({ offset: e.line === 'd0' ? 5 : 6, rising: e.rising, atUs: start + e.atUs })),
  );
  s.time.advance(30);
}

describe('the agent on the GPIO character device', () => {
  it('claims every relay line already at its locked level before anything else, then the Wiegand pair with a pull-up', async () => {
    const s = site();
    await start(s);
    expect(s.kernel.log.slice(0, 2)).toEqual(['request output 17 values 0 fd 100', 'request output 18 values 0 fd 101']);
    const reader = s.kernel.held.get(s.kernel.fdOf(5))!;
    expect(reader.request).toMatchObject({ offsets: [5, 6], direction: 'input', bias: 'pull-up', edges: true });
  });

  it('a card on the Wiegand lines opens the door through the driver; stop locks, then releases every line', async () => {
    const s = site();
    const agent = await start(s);
    tapAlice(s);
    expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'UNLOCKED' });
    expect(s.kernel.getValues(s.kernel.fdOf(17), 1)).toBe(1);
    await agent.stop();
    agents.length = 0;
    const locked = s.kernel.log.indexOf('set fd 100 0');
    expect(locked).toBeGreaterThan(-1);
    expect(s.kernel.log.indexOf('close fd 100')).toBeGreaterThan(locked);
    expect(s.kernel.held.size).toBe(0);
  });

  it('a Wiegand line held by another program: the start fails naming it, the relays stay locked and every line is released', async () => {
    const s = site();
    s.kernel.foreign.set(`${s.gpio.chip.path}:6`, 'pigpio');
    await expect(start(s)).rejects.toThrow(/GPIO 5, 6 \(edge input\).*EBUSY.*GPIO 6 is held by "pigpio"/);
    agents.length = 0;
    expect(s.kernel.log.filter((l) => l.startsWith('set')).every((l) => l.endsWith(' 0'))).toBe(true);
    expect(s.kernel.held.size).toBe(0);
  });

  it('a relay write the kernel refuses locks every relay and asks for the process to end', async () => {
    const s = site();
    const failures: unknown[] = [];
    const agent = await start(s, { onRelayFailure: (err) => failures.push(err) });
    s.kernel.failingWrites.add(17);
    expect(() => tapAlice(s)).toThrow(/EIO/);
    expect(failures).toHaveLength(1);
    expect(s.kernel.getValues(s.kernel.fdOf(18), 1)).toBe(0);
    expect(agent.lockState(SECOND_DOOR_UUID)).toMatchObject({ state: 'LOCKED' });
  });

  it('polling an edge request fails (the chip went away): an error naming the pin, for the fatal path', async () => {
    const s = site();
    await start(s);
    expect(() => s.kernel.pollError(s.kernel.fdOf(5), 'EBADF: the GPIO chip went away')).toThrow(/GPIO 5: waiting for edges failed: EBADF/);
  });
});

describe('two door-agents on one GPIO chip', () => {
  it('the kernel refuses the second a relay line the first holds (EBUSY), and the error names the line and another door-agent', async () => {
    const s = site();
    await start(s);
    const second = new ChardevGpio(s.kernel, 'auto', join(tmp.path, `c${n - 1}`, 'dev'));
    expect(() => second.openOutput(17, 0)).toThrow(/GPIO 17 \(output\).*EBUSY.*GPIO 17 is held by another door-agent process/);
    expect(s.kernel.getValues(s.kernel.fdOf(17), 1)).toBe(0);
  });
});
