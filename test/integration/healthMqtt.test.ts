import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseHealth, type Health } from '../../src/protocol/health.js';
import { VERSION } from '../../src/version.js';
import { DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { readLevel, waitUntil } from '../support/daemon.js';
import { Mosquitto } from '../support/mosquitto.js';
import type { Received } from '../support/operator.js';
import { connectOperator, startDaemon } from '../support/agentSite.js';
import { sleep } from '../support/wait.js';

// The health topic (issue 30 item 4): the real daemon against a real mosquitto, simulated GPIO.
const tmp = tempDir('door-agent-health-');
afterAll(tmp.cleanup);

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const P = 'hp';
const HEALTH = `${P}/agents/hl/health`;
const STATE = `${P}/doors/${DOOR_UUID}/state`;

let n = 0;
async function site() {
  const dir = join(tmp.path, `s${n++}`);
  mkdirSync(dir);
  const broker = new Mosquitto(join(dir, 'broker'));
  await broker.start();
  cleanups.push(() => broker.stop());
  const config = writeConfig(dir, {
    id: 'hl',
    access: '{ groups: [Staff] }',
    extra: `mqtt: { url: "${broker.url}", topicPrefix: ${P}, keepaliveSeconds: 5 }`,
    doorExtra: `    unlockSeconds: 1
    contact: { pin: 27, debounceMs: 20 }
    exitButton: { pin: 22, debounceMs: 20 }
`,
  });
  expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
  return { dir, config, broker, relay: join(dir, 'gpio/gpio17/value'), exit: join(dir, 'gpio/gpio22/value') };
}

const healthOf = (m: Received): Health => parseHealth(m.text);
const status = (config: string) => JSON.parse(runCli(['status', '--json', '--config', config]).stdout) as { events: { unpublished: number } };

describe('health on MQTT (P/agents/<id>/health)', () => {
  it('is retained for a fresh subscriber with what the running agent holds, and published again when a door changes', async () => {
    const s = await site();
    await startDaemon(s.config, cleanups);
    const op = await connectOperator(s.broker.url, cleanups, [STATE]);
    const state = (await op.waitFor((m) => m.topic === STATE && m.retain, 10_000, 'the retained door state')).json as { door: string };

    const reader = await connectOperator(s.broker.url, cleanups, [HEALTH]);
    const retained = await reader.waitFor((m) => m.topic === HEALTH && m.retain, 10_000, 'the retained health');
    const health = healthOf(retained);
    expect(health).toMatchObject({
      version: VERSION,
      clock_trusted: expect.any(Boolean),
      cache: { revision: null, age_s: expect.any(Number) }, // an imported cache: no directory revision
      readers: { online: 0, total: 0, per_door: {} },
      doors: [{ uuid: DOOR_UUID, name: 'Front door', lock: 'LOCKED', relock_at: null, open: state.door === 'OPEN', lockdown: false, tamper: null }],
    });
    expect(health.uptime_s).toBeGreaterThanOrEqual(0);
    expect(health.memory.rss).toBeGreaterThan(health.memory.heap_used);
    expect(Math.abs(Date.parse(health.at) - Date.now())).toBeLessThan(60_000);

    // The exit button unlocks for 1 s: each change is published within about a second.
    writeFileSync(s.exit, '0\n');
    const unlocked = await reader.waitFor((m) => m.topic === HEALTH && healthOf(m).doors[0]?.lock === 'UNLOCKED', 10_000, 'the health of the unlocked door');
    expect(healthOf(unlocked).doors[0]?.relock_at).toEqual(expect.any(String));
    writeFileSync(s.exit, '1\n');
    await reader.waitFor(
      (m) => m.topic === HEALTH && m !== unlocked && healthOf(m).doors[0]?.lock === 'LOCKED' && !m.retain,
      10_000,
      'the health locked again',
    );
  }, 60_000);

  it('while the broker is down nothing queues: after it, one message, the latest, with the events not yet acknowledged', async () => {
    const s = await site();
    const daemon = await startDaemon(s.config, cleanups);
    await waitUntil(() => status(s.config).events.unpublished === 0, 10_000, 'outbox drained');
    await s.broker.stop();
    await daemon.waitForMessage('broker connection lost; doors keep working, events are kept');
    // Two door changes (unlocked, locked again) and their events while the broker is away.
    writeFileSync(s.exit, '0\n');
    await waitUntil(() => readLevel(s.relay) === '1', 5000, 'unlocked');
    writeFileSync(s.exit, '1\n');
    await waitUntil(() => readLevel(s.relay) === '0', 5000, 'locked again');
    await sleep(300);
    const kept = status(s.config).events.unpublished;
    expect(kept).toBeGreaterThanOrEqual(3); // exit_request, unlocked, locked

    const mark = daemon.logs.length;
    await s.broker.start();
    const reader = await connectOperator(s.broker.url, cleanups, [HEALTH]);
    await daemon.waitForMessage('broker connection restored', 30_000, mark);
    await reader.waitFor((m) => m.topic === HEALTH, 10_000, 'the health after the reconnect');
    await sleep(2000); // anything queued would have followed by now
    const after = reader.received.filter((m) => m.topic === HEALTH).map(healthOf);
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ outbox_depth: kept, doors: [{ lock: 'LOCKED' }] });
  }, 90_000);
});
