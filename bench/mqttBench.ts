/**
 * MQTT benchmarks (issue: remote control over MQTT), against a real mosquitto on a free loopback port:
 * - command to relay: 1,000 unlock commands published by a client, 25 ms apart (each followed by a LOCK),
 *   timed from the publish to the simulated relay's value file changing (inotify); floor: a bare mqtt.js publish-to-subscriber round trip through the
 *   same broker, in the same run;
 * - outbox drain: 100,000 events recorded while the broker is down, then drained by the agent: events/s and
 *   lost events; floor: a bare mqtt.js client publishing as many QoS 1 messages with the same window.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from './net.js';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectAsync, type MqttClient } from 'mqtt';
import { openStateDatabase, statePath } from '../src/store/database.js';
import { EventLog } from '../src/store/eventLog.js';
import { AGENT_NODE_OPTIONS, type BenchRow } from './report.js';
import { p50p99, timeUntilLevel } from './valueFile.js';
import { sleep, waitFor } from './wait.js';

const COMMANDS = 1000;
const EVENTS = 100_000;
const DOOR = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const root = resolve(fileURLToPath(import.meta.url), '../../..');
const cli = join(root, 'dist/src/cli.js');

export async function startBroker(dir: string, port: number): Promise<ChildProcess> {
  const binary = ['/usr/sbin/mosquitto', '/usr/bin/mosquitto'].find((p) => existsSync(p));
  if (!binary) throw new Error('mosquitto is not installed: apt-get install mosquitto');
  const conf = join(dir, `mosquitto-${port}.conf`);
  writeFileSync(conf, `user ${userInfo().username}\nlistener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\n`);
  const broker = spawn(binary, ['-c', conf], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    try {
      const c = await connectAsync(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0, connectTimeout: 500 });
      await c.endAsync();
      return broker;
    } catch {
      await sleep(50);
    }
  }
  throw new Error('mosquitto did not start');
}

function writeConfig(dir: string, port: number): string {
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `agent: { id: bench, dataDir: ${dir}/data, timezone: Europe/Berlin, logLevel: warn, maxEvents: 200000 }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${dir}/gpio }
mqtt: { url: "mqtt://127.0.0.1:${port}", topicPrefix: bench, homeAssistant: { discovery: false } }
doors:
  - { uuid: ${DOOR}, resourceId: 12, relay: { pin: 17 }, unlockSeconds: 5 }
`,
  );
  const imported = spawnSync(process.execPath, [cli, 'import', join(root, 'examples/snapshot.json'), '--config', config]);
  if (imported.status !== 0) throw new Error(`import failed: ${imported.stderr}`);
  return config;
}

function startAgent(config: string): ChildProcess {
  return spawn(process.execPath, [...AGENT_NODE_OPTIONS, cli, 'run', '--config', config], { stdio: ['ignore', 'ignore', 'inherit'] });
}

/** Small messages, measured for latency: no Nagle delay on the benchmark's own clients either. */
function noDelay(client: MqttClient): void {
  (client.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
}

async function roundTripFloor(url: string): Promise<number[]> {
  const sub = await connectAsync(url);
  const pub = await connectAsync(url);
  noDelay(sub);
  noDelay(pub);
  await sub.subscribeAsync('bench/floor', { qos: 1 });
  const samples: number[] = [];
  for (let i = 0; i < COMMANDS + 20; i++) {
    await sleep(25); // the same pacing as the commands
    const ms = await new Promise<number>((res) => {
      const started = performance.now();
      sub.once('message', () => res(performance.now() - started));
      void pub.publishAsync('bench/floor', '{"lock_state":false,"unlock_time":5}', { qos: 1 });
    });
    if (i >= 20) samples.push(ms);
  }
  await sub.endAsync();
  await pub.endAsync();
  return samples;
}

async function commandToRelay(dir: string, url: string, config: string): Promise<number[]> {
  const agent = startAgent(config);
  const op: MqttClient = await connectAsync(url);
  noDelay(op);
  try {
    const relayFile = join(dir, 'gpio/gpio17/value');
    await waitFor('mqtt', () => existsSync(relayFile), 10_000, 'agent start');
    await op.subscribeAsync(`bench/agents/bench/status`, { qos: 1 });
    await new Promise<void>((res) => op.on('message', (_t, p) => p.toString() === 'online' && res()));
    const fd = openSync(relayFile, 'r');
    const set = `bench/doors/${DOOR}/set`;
    const samples: number[] = [];
    for (let i = 0; i < COMMANDS + 20; i++) {
      const ms = await timeUntilLevel(relayFile, fd, '1', () => void op.publishAsync(set, '{"lock_state":false,"unlock_time":5}', { qos: 1 }));
      if (i >= 20) samples.push(ms);
      await timeUntilLevel(relayFile, fd, '0', () => void op.publishAsync(set, 'LOCK', { qos: 1 }));
      // Commands come one at a time, not back to back: let the agent finish recording the last one
      // (state, events, their publication), as the tap benchmark's pacing does.
      await sleep(25);
    }
    return samples;
  } finally {
    await op.endAsync();
    agent.kill('SIGTERM');
    await new Promise((r) => agent.once('exit', r));
  }
}

async function outboxDrain(dir: string, url: string, config: string, port: number): Promise<{ perSecond: number; lost: number; floorPerSecond: number }> {
  // Record the events as the agent would while the broker is away (one transaction: this is setup, not measured).
  const db = openStateDatabase(statePath(join(dir, 'data')));
  const log = new EventLog(db, { agentId: 'bench', maxEvents: 200_000 });
  db.prepare('UPDATE events SET published_at = 0').run();
  const firstSeq = log.stats().lastSeq + 1;
  db.transaction(() => {
    for (let i = 0; i < EVENTS; i++)
      log.append({ type: 'access_denied', door: DOOR, at: Date.now(), data: { kind: 'card', hint: '…1234', reason: 'unknown_credential', holders: [] } });
  })();
  db.close();
  const expected = new Set<string>();
  for (let seq = firstSeq; seq < firstSeq + EVENTS; seq++) expected.add(`bench-${seq}`);

  const sub = await connectAsync(url);
  const seen = new Set<string>();
  let first = 0;
  let last = 0;
  sub.on('message', (_topic, payload) => {
    const { id } = JSON.parse(payload.toString()) as { id: string };
    if (!expected.has(id)) return;
    if (first === 0) first = performance.now();
    seen.add(id);
    last = performance.now();
  });
  await sub.subscribeAsync(`bench/doors/${DOOR}/events`, { qos: 1 });
  const agent = startAgent(config);
  try {
    await waitFor('mqtt', () => seen.size === EVENTS, 180_000, `all ${EVENTS} events`);
  } finally {
    agent.kill('SIGTERM');
    await new Promise((r) => agent.once('exit', r));
  }
  await sub.endAsync();

  // Floor: a bare client publishing the same number of QoS 1 messages with the agent's window (100 in flight).
  const pub = await connectAsync(`mqtt://127.0.0.1:${port}`);
  const payload = JSON.stringify({ id: 'bench-1', seq: 1, at: new Date().toISOString(), door: DOOR, type: 'access_denied' });
  const started = performance.now();
  const inFlight: Array<Promise<unknown>> = [];
  for (let i = 0; i < EVENTS; i++) {
    inFlight.push(pub.publishAsync('bench/floor-events', payload, { qos: 1 }));
    if (inFlight.length >= 100) await inFlight.shift();
  }
  await Promise.all(inFlight);
  const floorPerSecond = EVENTS / ((performance.now() - started) / 1000);
  await pub.endAsync();
  return { perSecond: EVENTS / ((last - first) / 1000), lost: EVENTS - seen.size, floorPerSecond };
}

export async function benchmarkMqtt(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'mqtt');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const broker = await startBroker(dir, port);
  const url = `mqtt://127.0.0.1:${port}`;
  try {
    const config = writeConfig(dir, port);
    const floor = p50p99(await roundTripFloor(url));
    const command = p50p99(await commandToRelay(dir, url, config));
    const drain = await outboxDrain(dir, url, config, port);
    const b = 'mqtt';
    return [
      {
        bench: b,
        metric: `command to relay p50 (${COMMANDS} commands)`,
        value: command.p50,
        unit: 'ms',
        floor: floor.p50,
        floorLabel: 'bare publish-to-subscriber p50',
        ratio: command.p50 / floor.p50,
        target: '',
        met: null,
      },
      {
        bench: b,
        metric: `command to relay p99 (${COMMANDS} commands)`,
        value: command.p99,
        unit: 'ms',
        floor: floor.p99,
        floorLabel: 'bare publish-to-subscriber p99',
        ratio: command.p99 / floor.p99,
        target: '< 5',
        met: command.p99 < 5,
      },
      {
        bench: b,
        metric: 'ratio to floor (p50)',
        value: command.p50 / floor.p50,
        unit: 'x',
        floor: null,
        floorLabel: '',
        ratio: command.p50 / floor.p50,
        target: '< 2',
        met: command.p50 / floor.p50 < 2,
      },
      {
        bench: b,
        metric: `outbox drain of ${EVENTS} events`,
        value: drain.perSecond,
        unit: 'events/s',
        floor: drain.floorPerSecond,
        floorLabel: 'bare QoS 1 publishes/s',
        ratio: drain.floorPerSecond / drain.perSecond,
        target: '>= 2000',
        met: drain.perSecond >= 2000,
      },
      {
        bench: b,
        metric: 'events lost in the drain',
        value: drain.lost,
        unit: '',
        floor: null,
        floorLabel: '',
        ratio: null,
        target: '0',
        met: drain.lost === 0,
      },
    ];
  } finally {
    broker.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
