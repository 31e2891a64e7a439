/**
 * Tap-to-relay latency (issue: the door at work): 1,000 card lines written into a socat pty, timed from the
 * write to the simulated relay's value file changing, seen through inotify (fs.watch). The floor is a bare
 * serialport reader on another pty pair flipping a value file for the same lines, timed the same way, paced the
 * same way and run at the same priority, below the benchmark's (issue 28): between taps the door is relocked by
 * opening and closing its contact (relockOnClose), the floor's reader gets a line for that relock, and the next
 * card comes PACE_MS later. Each of the floor's taps comes while the agent's door stands open after its tap, so the
 * two are paired: a burst of the host's other work lands on both alike.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { edgesOf, encodeCard } from '../src/core/wiegand.js';
import { writeSimulatedEdges } from '../src/hardware/simulatedEdges.js';
import { AGENT_NODE_OPTIONS, infoRow, latencyRows, type BenchRow } from './report.js';
import { benchAgentConfig, cli, observed, ptyPair as ptyPairOf, spawnTimed } from './benchAgent.js';
import { level, p50p99, setLevel, timeUntilLevel } from './valueFile.js';
import { sleep, waitFor } from './wait.js';

const TAPS = 1000;
/** How long the door stays open after each tap (see the loop). */
const DOOR_OPEN_MS = 100;
/**
 * After the relock, before the next tap: taps come one at a time, not back to back, so the agent has finished
 * recording the last one (as the MQTT benchmark lets it, and as a door sees people: seconds apart). With the door's
 * 100 ms open, a tap every 200 ms or more: a reader decides at most 5 cards a second (src/core/readerPace.ts).
 */
const PACE_MS = 100;
const TIMED_RELOCKS = 20;
/**
 * The floor's tap comes this long into the agent's door standing open: past the agent's recording of its grant and
 * of the contact opening (a few ms), before the contact closes (DOOR_OPEN_MS).
 */
const BESIDE_DELAY_MS = 30;
/** Between the floor's tap and its relock: within the agent's DOOR_OPEN_MS, with BESIDE_DELAY_MS before it. */
const FLOOR_OPEN_MS = 40;
const UNLOCK_SECONDS = 1;
/** Untimed taps after the agent's start, by default (tap-during-sync, wiegand: the taps must meet the first sync). */
const WARMUP = 20;
/**
 * tap-to-relay's: its timed taps are those of a daemon that has been running (a door's runs for months). The daemon
 * tunes V8 to optimize its tap path (src/system/v8Tiering.ts), and V8 goes on compiling that path, a function at a
 * time, most of it over the first 2,000 taps and the last few until about the 2,500th (143 optimizations in the first
 * 250 taps, 7 in the fourth 250, 1 in the twelfth; bench/HISTORY.md, "The tap path"). Each compile lands in the tap that spends the function's budget and can
 * hold it 2-5 ms on the one CPU the agent has here, which over the first 1,000 taps decided the p99. Those first taps
 * are timed too, and reported on rows of their own (`firstTaps`).
 */
const WARMUP_AFTER_START = 2000;
const root = resolve(fileURLToPath(import.meta.url), '../../..');

const ptyPair = (a: string, b: string) => ptyPairOf('tap-to-relay', a, b);

export interface AgentRun {
  /** Card line to relay, ms. */
  taps: number[];
  /** Contact closed to relay off (relockOnClose), ms. */
  relocks: number[];
  /** How late the relock timer turned the relay off after an unlock nobody used (unlockSeconds), ms. */
  timerLateness: number[];
  /** Card line to relay of the warm-up taps after the agent's start (not in `taps`), ms. */
  firstTaps: number[];
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
  /** Taps after the agent's start before the timed ones (default WARMUP). */
  warmup?: number;
  /**
   * Runs in each cycle while the door stands open (the floor's tap, measured beside the agent's, so both see the
   * same load); `timed` says whether the agent's tap of that cycle is a timed one.
   */
  beside?: (timed: boolean) => Promise<void>;
  /** The agent runs below the benchmark's priority, as a process it times (benchAgent.ts, spawnTimed). */
  timed?: boolean;
}

const WIEGAND_PINS = { d0: 5, d1: 6 };
const ALICE_CARD_EDGES = edgesOf(encodeCard(4_213_578n), 0);

/** Taps at a running agent, each followed by a relock on close; then unlocks left to the relock timer. */
export async function measureAgent(dir: string, options: MeasureOptions = {}): Promise<AgentRun> {
  const wiegand = options.reader === 'wiegand';
  const tapCount = options.taps ?? TAPS;
  const warmup = options.warmup ?? WARMUP;
  const config = benchAgentConfig(dir, {
    reader: wiegand ? `{ type: wiegand, d0: ${WIEGAND_PINS.d0}, d1: ${WIEGAND_PINS.d1}, format: 26 }` : `{ path: ${dir}/reader }`,
    unlockSeconds: UNLOCK_SECONDS,
    extra: options.extra,
  });
  const socat = wiegand ? null : await ptyPair(join(dir, 'reader'), join(dir, 'terminal'));
  // The agent's log (level warn: failures only) stays in dir/agent.log for the caller to read.
  const log = openSync(join(dir, 'agent.log'), 'w');
  const args = [...AGENT_NODE_OPTIONS, cli, 'run', '--config', config];
  const agent = options.timed
    ? spawnTimed(process.execPath, args, { stdio: ['ignore', log, 'inherit'] })
    : spawn(process.execPath, args, { stdio: ['ignore', log, 'inherit'] });
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
    const contact = openSync(contactFile, 'r+');
    const taps: number[] = [];
    const firstTaps: number[] = [];
    const relocks: number[] = [];
    const timerLateness: number[] = [];
    // A tap, then somebody walks through: the contact opens, then closes, and the door relocks at once. The door
    // stays open DOOR_OPEN_MS (a person takes seconds): long enough for the 10 ms input poll. The next tap comes
    // PACE_MS after the relay is seen locked.
    // A tap after the start (first), or a timed one.
    const cycle = async (tapKind: 'first' | 'timed') => {
      const timed = tapKind === 'timed';
      const ms = await timeUntilLevel(relayFile, relay, '1', tap);
      if (timed) taps.push(ms);
      else if (tapKind === 'first') firstTaps.push(ms);
      setLevel(contact, '1');
      const opened = performance.now();
      await options.beside?.(timed);
      await sleep(Math.max(0, DOOR_OPEN_MS - (performance.now() - opened)));
      const relocked = await timeUntilLevel(relayFile, relay, '0', () => setLevel(contact, '0'));
      if (timed) relocks.push(relocked);
      await sleep(PACE_MS);
    };
    try {
      for (let i = 0; i < tapCount + warmup; i++) await cycle(i >= warmup ? 'timed' : 'first');
      // Nobody walks through: the relock timer turns the relay off unlockSeconds after the unlock.
      for (let i = 0; i < TIMED_RELOCKS; i++) {
        await timeUntilLevel(relayFile, relay, '1', tap);
        const ms = await timeUntilLevel(relayFile, relay, '0', () => undefined, UNLOCK_SECONDS * 1000 + 3000);
        timerLateness.push(ms - UNLOCK_SECONDS * 1000);
      }
    } finally {
      if (terminal !== null) closeSync(terminal);
      closeSync(relay);
      closeSync(contact);
    }
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${agent.pid}/status`, 'utf8'))?.[1];
    return { taps, relocks, timerLateness, firstTaps, peakRssMb: Number(hwm ?? NaN) / 1024 };
  } finally {
    agent.kill('SIGTERM');
    socat?.kill('SIGTERM');
    // Its last writes done before the caller removes its directory.
    if (agent.exitCode === null && agent.signalCode === null) await new Promise((r) => agent.once('exit', r));
  }
}

/**
 * The bare serialport reader, kept running: `tap()` times one tap and then flips its value back (the floor's
 * relock, untimed), `FLOOR_OPEN_MS` apart, as the agent's door opens and closes.
 */
async function startFloor(dir: string): Promise<{ tap: () => Promise<number>; stop: () => void }> {
  const socat = await ptyPair(join(dir, 'floor-device'), join(dir, 'floor-terminal'));
  const valueFile = join(dir, 'floor-value');
  writeFileSync(valueFile, '0\n');
  const reader = spawnTimed(process.execPath, [join(root, 'dist/bench/floorReader.js'), join(dir, 'floor-device'), valueFile], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((r) => reader.stdout!.once('data', () => r()));
  const terminal = openSync(join(dir, 'floor-terminal'), 'w');
  const value = openSync(valueFile, 'r');
  const line = () => writeSync(terminal, Buffer.from('4213578\r\n'));
  const flip = () => timeUntilLevel(valueFile, value, level(value) === '1' ? '0' : '1', line);
  return {
    // One tap per cycle of the agent's, so the floor taps as often as the agent's reader is tapped (a reader idle
    // longer answers a little later). Its relock line comes FLOOR_OPEN_MS after its tap, so it then idles about
    // 160 ms where the agent idles PACE_MS: a later line would meet the agent's next tap (bench/HISTORY.md).
    tap: async () => {
      const ms = await flip();
      await sleep(FLOOR_OPEN_MS);
      await flip();
      return ms;
    },
    stop: () => {
      closeSync(terminal);
      closeSync(value);
      reader.kill('SIGTERM');
      socat.kill('SIGTERM');
    },
  };
}

/**
 * Keeps each timed tap's pair (the agent's, and the floor's beside it) in `file`, in the order they came, and prints
 * the slowest ten of the agent's with the floor's beside them: a p99 made of a burst of the host's (the floor slow
 * too, taps in a row) reads apart from the agent's own (the floor quick, taps spread over the run).
 */
function reportSlowestTaps(file: string, agent: readonly number[], floor: readonly number[]): void {
  writeFileSync(file, `${JSON.stringify({ agentMs: agent, floorMs: floor })}\n`);
  const slowest = agent
    .map((ms, tap) => ({ tap, ms }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 10)
    .sort((a, b) => a.tap - b.tap);
  const pairs = slowest.map(({ tap, ms }) => `#${tap} ${ms.toFixed(2)}/${(floor[tap] ?? Number.NaN).toFixed(2)}`);
  process.stdout.write(`tap-to-relay: the slowest 10 timed taps, agent/floor ms: ${pairs.join(', ')} (all in ${file})\n`);
}

export async function benchmarkTapToRelay(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'tap');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // Each floor tap beside one of the agent's, while its door stands open, so a load that comes and goes during the
  // run weighs on both alike, tap by tap (before, blocks of 100 in turn left a burst of a few seconds to one or the
  // other). The floor's taps beside the agent's warm-up are its own warm-up.
  // The benchmark on a CPU of its own, the agent, the floor and socat on the others (benchAgent.ts, observed).
  const floorSamples: number[] = [];
  const agentRun = await observed(async () => {
    const floor = await startFloor(dir);
    try {
      return await measureAgent(dir, {
        timed: true,
        warmup: WARMUP_AFTER_START,
        beside: async (timed) => {
          await sleep(BESIDE_DELAY_MS);
          const ms = await floor.tap();
          if (timed) floorSamples.push(ms);
        },
      });
    } finally {
      floor.stop();
    }
  });
  const agent = p50p99(agentRun.taps);
  const first = p50p99(agentRun.firstTaps);
  rmSync(dir, { recursive: true, force: true });
  reportSlowestTaps(join(workDir, 'tap-to-relay-samples.json'), agentRun.taps, floorSamples);
  return [
    ...latencyRows('tap-to-relay', `card line to relay (${TAPS} taps)`, agent, p50p99(floorSamples), 'bare serialport reader', 5),
    infoRow('tap-to-relay', `card line to relay, the first ${WARMUP_AFTER_START} taps after start (V8 optimizing) p50`, first.p50, 'ms'),
    infoRow('tap-to-relay', `card line to relay, the first ${WARMUP_AFTER_START} taps after start (V8 optimizing) p99`, first.p99, 'ms'),
  ];
}
