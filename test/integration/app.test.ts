import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { DOOR_UUID, SECOND_DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { FakeGpio } from '../support/fakeGpio.js';
import { ManualTime } from '../support/manualTime.js';

// The agent's composition root in-process: a fake GPIO driver (every operation in one ordered log), the
// manual clock, a real SQLite cache. Doors: Front (relay 17, fail-secure: locked = 0) and Back (relay 18,
// fail-safe and active-low: locked = 0), Front with an exit button on 22.
const tmp = tempDir('door-agent-app-');
afterAll(tmp.cleanup);
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.stop();
});

let n = 0;
function site(extra = '') {
  const dir = join(tmp.path, `a${n++}`);
  mkdirSync(dir);
  const path = writeConfig(dir, { twoDoors: true, extra, doorExtra: '    exitButton: { pin: 22, debounceMs: 20 }\n    unlockSeconds: 3\n' });
  expect(runCli(['import', 'examples/snapshot.json', '--config', path]).status).toBe(0);
  const log: string[] = [];
  return { dir, config: loadConfig(path), gpio: new FakeGpio(log), log, time: new ManualTime(), cache: join(dir, 'data/cache.db') };
}

const quiet = pino({ level: 'silent' });

async function start(s: ReturnType<typeof site>, extraDeps: Partial<Parameters<typeof startAgent>[1]> = {}) {
  const agent = await startAgent(s.config, { logger: quiet, clock: s.time, timers: s.time, gpio: s.gpio, clockSynchronized: () => true, ...extraDeps });
  agents.push(agent);
  return agent;
}

describe('the agent composition root', () => {
  it('starts with every relay driven locked before anything else, and is ready', async () => {
    const s = site();
    const agent = await start(s);
    expect(s.log.slice(0, 2)).toEqual(['open out 17=0', 'open out 18=0']);
    expect(s.log.indexOf('open in 22')).toBeGreaterThan(1);
    expect(agent.lockState(DOOR_UUID)).toMatchObject({ state: 'LOCKED' });
    expect(agent.lockState(SECOND_DOOR_UUID)).toMatchObject({ state: 'LOCKED' });
  });

  it('stop drives every relay locked first, then closes the inputs and the driver', async () => {
    const s = site();
    const agent = await start(s);
    s.gpio.set(22, 0); // exit button pressed
    s.time.advance(20);
    expect(s.gpio.levels.get(17)).toBe(1);
    s.log.length = 0;
    await agent.stop();
    agents.length = 0;
    const firstOther = s.log.findIndex((l) => !l.startsWith('write'));
    expect(s.log.slice(0, firstOther)).toContain('write 17=0');
    expect(s.log.slice(0, firstOther)).toContain('write 18=0');
    expect(s.log).toContain('close in 22');
    expect(s.log.at(-1)).toBe('close driver');
  });

  it('a failed start rolls back: relays locked, driver closed, and the error says why', async () => {
    const s = site('mqtt: { url: "mqtt://127.0.0.1:1", caFile: /nonexistent/ca.crt }');
    await expect(start(s)).rejects.toThrow(/mqtt.caFile: cannot read \/nonexistent\/ca.crt/);
    expect(s.log.slice(0, 2)).toEqual(['open out 17=0', 'open out 18=0']);
    expect(s.log.at(-1)).toBe('close driver');
    expect([s.gpio.levels.get(17), s.gpio.levels.get(18)]).toEqual([0, 0]);
  });

  it('a relay write that fails on any path locks every relay and asks for the process to end', async () => {
    const s = site();
    const failures: unknown[] = [];
    await start(s, { onRelayFailure: (err) => failures.push(err) });
    s.gpio.failing.add(17);
    s.gpio.set(22, 0); // the exit button asks door 17 to unlock: its relay write fails
    expect(() => s.time.advance(20)).toThrow(/EIO/);
    expect(failures).toHaveLength(1);
    const after = s.log.slice(s.log.indexOf('write 17=1 FAILED'));
    expect(after).toContain('write 18=0'); // the other door is driven locked too
    expect(after).toContain('write 17=0 FAILED'); // and the failing one is tried
    expect(existsSync(s.cache)).toBe(true);
  });
});
