/**
 * Tap-to-relay latency (issue: the door at work): 1,000 card lines written into a socat pty, timed from the
 * write to the simulated relay's value file changing, seen through inotify (fs.watch). The floor is a bare
 * serialport reader on another pty pair flipping a value file for the same lines, timed the same way.
 * Between taps the door is relocked by opening and closing its contact (relockOnClose).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readSync, rmSync, watch, writeFileSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_NODE_OPTIONS, type BenchRow } from './report.js';
import { percentile } from './stats.js';

const TAPS = 1000;
const WARMUP = 20;
const root = resolve(fileURLToPath(import.meta.url), '../../..');
const cli = join(root, 'dist/src/cli.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const started = Date.now();
  while (!predicate()) {
    if (Date.now() - started > timeoutMs) throw new Error(`tap-to-relay benchmark: ${what} not within ${timeoutMs} ms`);
    await sleep(5);
  }
}

async function ptyPair(a: string, b: string): Promise<ChildProcess> {
  const socat = spawn('socat', [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: 'ignore' });
  socat.on('error', () => undefined);
  await waitFor(() => existsSync(a) && existsSync(b), 5000, 'socat pty pair (apt-get install socat)');
  return socat;
}

/** Reads a value file's first byte ('0' or '1'). */
function level(fd: number): string {
  const buf = Buffer.alloc(1);
  readSync(fd, buf, 0, 1, 0);
  return buf.toString();
}

/** Writes `line` into the terminal side and resolves with the ms until `valueFd` reads `want`. */
function timeTap(terminalFd: number, line: Buffer, valueFile: string, valueFd: number, want: () => string): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const target = want();
    let done = false;
    const watcher = watch(valueFile, () => check());
    const timeout = setTimeout(() => finish(new Error(`relay file did not become ${target} within 2 s`)), 2000);
    const started = performance.now();
    function finish(err: Error | null, ms = 0) {
      if (done) return;
      done = true;
      clearTimeout(timeout);
      watcher.close();
      if (err) reject(err);
      else resolvePromise(ms);
    }
    function check() {
      if (level(valueFd) === target) finish(null, performance.now() - started);
    }
    writeSync(terminalFd, line);
    check();
  });
}

function summarize(samples: number[]) {
  const sorted = Float64Array.from(samples).sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

async function measureAgent(dir: string): Promise<number[]> {
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `agent: { id: bench, dataDir: ${dir}/data, timezone: Europe/Berlin, logLevel: warn }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${dir}/gpio }
doors:
  - uuid: 6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d
    resourceId: 12
    relay: { pin: 17 }
    unlockSeconds: 5
    heldOpenSeconds: 3600
    contact: { pin: 27, debounceMs: 0 }
    reader: { path: ${dir}/reader }
`,
  );
  const imported = spawnSync(process.execPath, [cli, 'import', join(root, 'examples/snapshot.json'), '--config', config]);
  if (imported.status !== 0) throw new Error(`import failed: ${imported.stderr}`);
  const socat = await ptyPair(join(dir, 'reader'), join(dir, 'terminal'));
  const agent = spawn(process.execPath, [...AGENT_NODE_OPTIONS, cli, 'run', '--config', config], { stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    const relayFile = join(dir, 'gpio/gpio17/value');
    const contactFile = join(dir, 'gpio/gpio27/value');
    await waitFor(() => existsSync(relayFile) && existsSync(contactFile), 10_000, 'agent start');
    await sleep(500); // reader open
    const terminal = openSync(join(dir, 'terminal'), 'w');
    const relay = openSync(relayFile, 'r');
    const samples: number[] = [];
    try {
      for (let i = 0; i < TAPS + WARMUP; i++) {
        const ms = await timeTap(terminal, Buffer.from('4213578\r\n'), relayFile, relay, () => '1');
        if (i >= WARMUP) samples.push(ms);
        // Somebody walks through: the contact opens, then closes, and the door relocks at once.
        writeFileSync(contactFile, '1\n');
        await sleep(25);
        writeFileSync(contactFile, '0\n');
        await waitFor(() => level(relay) === '0', 3000, 'relock on close');
      }
    } finally {
      closeSync(terminal);
      closeSync(relay);
    }
    return samples;
  } finally {
    agent.kill('SIGTERM');
    socat.kill('SIGTERM');
  }
}

async function measureFloor(dir: string): Promise<number[]> {
  const socat = await ptyPair(join(dir, 'floor-device'), join(dir, 'floor-terminal'));
  const valueFile = join(dir, 'floor-value');
  writeFileSync(valueFile, '0\n');
  const reader = spawn(process.execPath, [join(root, 'dist/bench/floorReader.js'), join(dir, 'floor-device'), valueFile], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    await new Promise<void>((r) => reader.stdout!.once('data', () => r()));
    const terminal = openSync(join(dir, 'floor-terminal'), 'w');
    const value = openSync(valueFile, 'r');
    const samples: number[] = [];
    try {
      for (let i = 0; i < TAPS + WARMUP; i++) {
        const next = level(value) === '1' ? '0' : '1';
        const ms = await timeTap(terminal, Buffer.from('4213578\r\n'), valueFile, value, () => next);
        if (i >= WARMUP) samples.push(ms);
        await sleep(25); // the same pacing as the agent's taps
      }
    } finally {
      closeSync(terminal);
      closeSync(value);
    }
    return samples;
  } finally {
    reader.kill('SIGTERM');
    socat.kill('SIGTERM');
  }
}

export async function benchmarkTapToRelay(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'tap');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const floor = summarize(await measureFloor(dir));
  const agent = summarize(await measureAgent(dir));
  rmSync(dir, { recursive: true, force: true });
  const b = 'tap-to-relay';
  return [
    { bench: b, metric: `card line to relay p50 (${TAPS} taps)`, value: agent.p50, unit: 'ms', floor: floor.p50, floorLabel: 'bare serialport reader p50', ratio: agent.p50 / floor.p50, target: '', met: null },
    { bench: b, metric: `card line to relay p99 (${TAPS} taps)`, value: agent.p99, unit: 'ms', floor: floor.p99, floorLabel: 'bare serialport reader p99', ratio: agent.p99 / floor.p99, target: '< 5', met: agent.p99 < 5 },
    { bench: b, metric: 'ratio to floor (p50)', value: agent.p50 / floor.p50, unit: 'x', floor: null, floorLabel: '', ratio: agent.p50 / floor.p50, target: '< 2', met: agent.p50 / floor.p50 < 2 },
  ];
}
