/**
 * Tap-to-relay latency (issue: the door at work): 1,000 card lines written into a socat pty, timed from the
 * write to the simulated relay's value file changing, seen through inotify (fs.watch). The floor is a bare
 * serialport reader on another pty pair flipping a value file for the same lines, timed the same way.
 * Between taps the door is relocked by opening and closing its contact (relockOnClose).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { edgesOf, encodeCard } from '../src/core/wiegand.js';
import { writeSimulatedEdges } from '../src/hardware/simulatedEdges.js';
import { AGENT_NODE_OPTIONS, type BenchRow } from './report.js';
import { benchAgentConfig, cli, ptyPair as ptyPairOf } from './benchAgent.js';
import { level, p50p99, timeUntilLevel } from './valueFile.js';
import { sleep, waitFor } from './wait.js';

const TAPS = 1000;
const TIMED_RELOCKS = 20;
const UNLOCK_SECONDS = 1;
const WARMUP = 20;
const root = resolve(fileURLToPath(import.meta.url), '../../..');

const ptyPair = (a: string, b: string) => ptyPairOf('tap-to-relay', a, b);

export interface AgentRun {
  /** Card line to relay, ms. */
  taps: number[];
  /** Contact closed to relay off (relockOnClose), ms. */
  relocks: number[];
  /** How late the relock timer turned the relay off after an unlock nobody used (unlockSeconds), ms. */
  timerLateness: number[];
  /** The agent's peak resident memory over the run (VmHWM). */
  peakRssMb: number;
}

export interface MeasureOptions {
  /** Configuration sections to add (a service to sync from, for tap-during-sync). */
  extra?: string;
  /** Runs once the agent is up, before the first tap. */
  onReady?: () => Promise<void>;
  /** The door's reader: a serial line on a socat pty (default), or a Wiegand reader on the simulated chip. */
  reader?: 'serial' | 'wiegand';
  taps?: number;
}

const WIEGAND_PINS = { d0: 5, d1: 6 };
const ALICE_CARD_EDGES = edgesOf(encodeCard(4_213_578n, 26), 0);

/** Taps at a running agent, each followed by a relock on close; then unlocks left to the relock timer. */
export async function measureAgent(dir: string, options: MeasureOptions = {}): Promise<AgentRun> {
  const wiegand = options.reader === 'wiegand';
  const tapCount = options.taps ?? TAPS;
  const config = benchAgentConfig(dir, {
    reader: wiegand ? `{ type: wiegand, d0: ${WIEGAND_PINS.d0}, d1: ${WIEGAND_PINS.d1}, format: 26 }` : `{ path: ${dir}/reader }`,
    unlockSeconds: UNLOCK_SECONDS,
    extra: options.extra,
  });
  const socat = wiegand ? null : await ptyPair(join(dir, 'reader'), join(dir, 'terminal'));
  // The agent's log (level warn: failures only) stays in dir/agent.log for the caller to read.
  const log = openSync(join(dir, 'agent.log'), 'w');
  const agent = spawn(process.execPath, [...AGENT_NODE_OPTIONS, cli, 'run', '--config', config], { stdio: ['ignore', log, 'inherit'] });
  closeSync(log);
  try {
    const relayFile = join(dir, 'gpio/gpio17/value');
    const contactFile = join(dir, 'gpio/gpio27/value');
    await waitFor(
      'tap-to-relay',
      () => existsSync(relayFile) && existsSync(contactFile) && (!wiegand || existsSync(join(dir, 'gpio/edges'))),
      10_000,
      'agent start',
    );
    await sleep(500); // reader open
    await options.onReady?.();
    const terminal = wiegand ? null : openSync(join(dir, 'terminal'), 'w');
    // A card: a line into the pty, or the frame's edges into the simulated chip, its last edge just now.
    const tap =
      terminal !== null ? () => writeSync(terminal, Buffer.from('4213578\r\n')) : () => writeSimulatedEdges(join(dir, 'gpio'), WIEGAND_PINS, ALICE_CARD_EDGES);
    const relay = openSync(relayFile, 'r');
    const taps: number[] = [];
    const relocks: number[] = [];
    const timerLateness: number[] = [];
    try {
      for (let i = 0; i < tapCount + WARMUP; i++) {
        const ms = await timeUntilLevel(relayFile, relay, '1', tap);
        if (i >= WARMUP) taps.push(ms);
        // Somebody walks through: the contact opens, then closes, and the door relocks at once. The door stays
        // open 100 ms (a person takes seconds): long enough for the 10 ms input poll even while the agent is
        // busy saving the unlock (events and the lock state are fsynced right after the relay moves).
        writeFileSync(contactFile, '1\n');
        await sleep(100);
        const relocked = await timeUntilLevel(relayFile, relay, '0', () => writeFileSync(contactFile, '0\n'));
        if (i >= WARMUP) relocks.push(relocked);
      }
      // Nobody walks through: the relock timer turns the relay off unlockSeconds after the unlock.
      for (let i = 0; i < TIMED_RELOCKS; i++) {
        await timeUntilLevel(relayFile, relay, '1', tap);
        const ms = await timeUntilLevel(relayFile, relay, '0', () => undefined, UNLOCK_SECONDS * 1000 + 3000);
        timerLateness.push(ms - UNLOCK_SECONDS * 1000);
      }
    } finally {
      if (terminal !== null) closeSync(terminal);
      closeSync(relay);
    }
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${agent.pid}/status`, 'utf8'))?.[1];
    return { taps, relocks, timerLateness, peakRssMb: Number(hwm ?? NaN) / 1024 };
  } finally {
    agent.kill('SIGTERM');
    socat?.kill('SIGTERM');
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
        const ms = await timeUntilLevel(valueFile, value, next, () => writeSync(terminal, Buffer.from('4213578\r\n')));
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
  const floor = p50p99(await measureFloor(dir));
  const agent = p50p99((await measureAgent(dir)).taps);
  rmSync(dir, { recursive: true, force: true });
  const b = 'tap-to-relay';
  return [
    {
      bench: b,
      metric: `card line to relay p50 (${TAPS} taps)`,
      value: agent.p50,
      unit: 'ms',
      floor: floor.p50,
      floorLabel: 'bare serialport reader p50',
      ratio: agent.p50 / floor.p50,
      target: '',
      met: null,
    },
    {
      bench: b,
      metric: `card line to relay p99 (${TAPS} taps)`,
      value: agent.p99,
      unit: 'ms',
      floor: floor.p99,
      floorLabel: 'bare serialport reader p99',
      ratio: agent.p99 / floor.p99,
      target: '< 5',
      met: agent.p99 < 5,
    },
    {
      bench: b,
      metric: 'ratio to floor (p50)',
      value: agent.p50 / floor.p50,
      unit: 'x',
      floor: null,
      floorLabel: '',
      ratio: agent.p50 / floor.p50,
      target: '< 2',
      met: agent.p50 / floor.p50 < 2,
    },
  ];
}
