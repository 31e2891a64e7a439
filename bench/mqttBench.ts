/**
 * MQTT benchmarks (issue: remote control over MQTT), against a real mosquitto on a free loopback port:
 * - command to relay: 1,000 unlock commands published by a client, 25 ms apart (each followed by a LOCK),
 *   timed from the publish to the simulated relay's value file changing (inotify); floor: the same commands to a
 *   bare mqtt.js subscriber in a process of its own flipping a value file (bench/floorSubscriber.ts), timed the same
 *   way through the same broker, each command paired with one of the agent's (issue 28: before, the floor was a publish to
 *   a subscriber in the benchmark's own process, without the file, the inotify wake-up and the second process);
 * - outbox drain: 100,000 events recorded while the broker is down, then drained by the agent: events/s and
 *   lost events; floor: a bare mqtt.js client publishing as many QoS 1 messages with the same window.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from './net.js';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectAsync, type MqttClient } from 'mqtt';
import { openStateDatabase, statePath } from '../src/store/database.js';
import { EventLog } from '../src/store/eventLog.js';
import { observed, spawnTimed, spawnWire } from './benchAgent.js';
import { AGENT_NODE_OPTIONS, infoRow, latencyRows, type BenchRow } from './report.js';
import { level, p50p99, timeUntilLevel } from './valueFile.js';
import { sleep, waitFor } from './wait.js';

const COMMANDS = 1000;
/**
 * Untimed commands after the agent's start, as the tap benchmark's (tapToRelay.ts, WARMUP_AFTER_START): the timed
 * commands are a running daemon's, once V8 has compiled its command path (which it does a function at a time, in
 * the commands, over the first thousands); the first ones are reported on rows of their own.
 */
const WARMUP = 2000;
const EVENTS = 100_000;
const DOOR = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
const root = resolve(fileURLToPath(import.meta.url), '../../..');
const cli = join(root, 'dist/cli/door-agent.js'); // the installed bundle

export async function startBroker(dir: string, port: number): Promise<ChildProcess> {
  const binary = ['/usr/sbin/mosquitto', '/usr/bin/mosquitto'].find((p) => existsSync(p));
  if (!binary) throw new Error('mosquitto is not installed: apt-get install mosquitto');
  const conf = join(dir, `mosquitto-${port}.conf`);
  // No cap on the messages queued for a subscriber (mosquitto's default drops QoS 1 messages past 1,000): the
  // drain's subscriber, on a loaded machine, fell behind the agent and lost some, and the run waited for them.
  writeFileSync(
    conf,
    `user ${userInfo().username}\nlistener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\nmax_queued_messages 0\n`,
  );
  const broker = spawnWire(binary, ['-c', conf], { stdio: 'ignore' });
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

/** `timed`: below the benchmark's priority, as a process it times (benchAgent.ts, spawnTimed). */
function startAgent(config: string, timed = false): ChildProcess {
  const args = [...AGENT_NODE_OPTIONS, cli, 'run', '--config', config];
  return timed
    ? spawnTimed(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] })
    : spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
}

/** Small messages, measured for latency: no Nagle delay on the benchmark's own clients either. */
function noDelay(client: MqttClient): void {
  (client.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
}

/** One command and its LOCK: the unlock timed from the publish to the value file reading '1', in ms. */
type Cycle = () => Promise<number>;

/**
 * The cycles of the floor and of the agent in turn, one each, so a load that comes and goes weighs on both alike,
 * command by command (before 2026-11-28 they came in blocks of 100, which left a burst of a few seconds to one or
 * the other).
 */
async function interleaved(agent: Cycle, floor: Cycle): Promise<{ agent: number[]; floor: number[]; agentFirst: number[] }> {
  const samples = { agent: [] as number[], floor: [] as number[], agentFirst: [] as number[] };
  for (let i = 0; i < WARMUP; i++) {
    await floor();
    samples.agentFirst.push(await agent());
  }
  for (let i = 0; i < COMMANDS; i++) {
    samples.floor.push(await floor());
    samples.agent.push(await agent());
  }
  return samples;
}

/** A command, timed until the value file reads '1'; then a LOCK until it reads '0'; then the pause between commands. */
function cycleOf(op: MqttClient, topic: string, valueFile: string, fd: number): Cycle {
  return async () => {
    const ms = await timeUntilLevel(valueFile, fd, '1', () => void op.publishAsync(topic, '{"lock_state":false,"unlock_time":5}', { qos: 1 }));
    await timeUntilLevel(valueFile, fd, '0', () => void op.publishAsync(topic, 'LOCK', { qos: 1 }));
    // Commands come one at a time, not back to back: let the agent finish recording the last one
    // (state, events, their publication), as the tap benchmark's pacing does.
    await sleep(25);
    return ms;
  };
}

async function commandToRelay(dir: string, url: string, config: string): Promise<{ agent: number[]; floor: number[]; agentFirst: number[] }> {
  const agent = startAgent(config, true);
  const floorValue = join(dir, 'floor-value');
  writeFileSync(floorValue, '0\n');
  const floorTopic = 'bench/floor/set';
  const floor = spawnTimed(process.execPath, [join(root, 'dist/bench/floorSubscriber.js'), url, floorTopic, floorValue], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const op: MqttClient = await connectAsync(url);
  noDelay(op);
  try {
    const relayFile = join(dir, 'gpio/gpio17/value');
    await waitFor('mqtt', () => existsSync(relayFile), 10_000, 'agent start');
    await op.subscribeAsync(`bench/agents/bench/status`, { qos: 1 });
    await new Promise<void>((res) => op.on('message', (_t, p) => p.toString() === 'online' && res()));
    await new Promise<void>((r) => floor.stdout!.once('data', () => r()));
    const relayFd = openSync(relayFile, 'r');
    const floorFd = openSync(floorValue, 'r');
    if (level(floorFd) !== '0') throw new Error('the floor subscriber did not start at 0');
    try {
      return await interleaved(cycleOf(op, `bench/doors/${DOOR}/set`, relayFile, relayFd), cycleOf(op, floorTopic, floorValue, floorFd));
    } finally {
      closeSync(relayFd);
      closeSync(floorFd);
    }
  } finally {
    await op.endAsync();
    floor.kill('SIGTERM');
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
    await waitFor('mqtt', () => seen.size === EVENTS, 180_000, `all ${EVENTS} events`).catch((err: Error) => {
      throw new Error(`${err.message}: ${seen.size} arrived`);
    });
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
  const url = `mqtt://127.0.0.1:${port}`;
  const config = writeConfig(dir, port);
  // The commands timed with the benchmark on a CPU of its own, the broker with the agent (benchAgent.ts, observed);
  // then a broker on every CPU for the drain, which is a throughput.
  const samples = await observed(async () => {
    const timedBroker = await startBroker(dir, port);
    try {
      return await commandToRelay(dir, url, config);
    } finally {
      timedBroker.kill('SIGTERM');
      if (timedBroker.exitCode === null && timedBroker.signalCode === null) await new Promise((r) => timedBroker.once('exit', r));
    }
  });
  const broker = await startBroker(dir, port);
  try {
    const floor = p50p99(samples.floor);
    const command = p50p99(samples.agent);
    const first = p50p99(samples.agentFirst);
    const drain = await outboxDrain(dir, url, config, port);
    const b = 'mqtt';
    return [
      ...latencyRows(b, `command to relay (${COMMANDS} commands)`, command, floor, 'bare subscriber process', 5),
      infoRow(b, `command to relay, the first ${WARMUP} commands after start (V8 optimizing) p50`, first.p50, 'ms'),
      infoRow(b, `command to relay, the first ${WARMUP} commands after start (V8 optimizing) p99`, first.p99, 'ms'),
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
