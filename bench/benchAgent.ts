/**
 * What the benchmarks that start a real agent share: a socat pty pair, and an agent configuration (simulated GPIO,
 * one door with a contact, the reader given) with the example snapshot imported.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait.js';

const root = resolve(fileURLToPath(import.meta.url), '../../..');
export const cli = join(root, 'dist/cli/door-agent.js');

/**
 * How much lower the processes a latency benchmark times (the agent, and the bare floor beside it) run than the
 * benchmark itself, which stands for the relay: a relay moves when its line is written, and needs no CPU to see it.
 * On the 2-core VM a process that keeps working after its write (the agent recording the decision, a floor made
 * to spin 0.4 ms after its write) otherwise kept the benchmark from seeing the write until it yielded: 0.4 ms of
 * work after the write added 0.5 ms to the floor's p50 (issue 28). Lower, never higher: any user may lower a
 * priority. The wire in between (socat, the broker) runs at the benchmark's.
 */
const TIMED_NICENESS = 10;

/**
 * A lower priority did not always keep the benchmark's own wake-up off the timed process's CPU: with the agent's
 * reads made on its event loop, the kernel woke the benchmark on the agent's CPU behind the agent's recording of the
 * grant, and the benchmark saw the relay's write 1.34 ms after the write at p50, against 0.27 ms on a CPU of its own
 * (the agent's own timestamps and the benchmark's, on the monotonic clock: 2026-11-27, bench/HISTORY.md "The tap
 * path"). So within `observed()` the benchmark keeps the first CPU to itself and everything it starts (the timed
 * processes and the wire: socat, the broker) runs on the others. On one CPU nothing is pinned.
 */
const cpuCount = availableParallelism();
const TIMED_CPUS = cpuCount > 1 ? `1-${cpuCount - 1}` : null;
let observing = false;

function taskset(args: readonly string[]): void {
  const done = spawnSync('taskset', args, { encoding: 'utf8' });
  if (done.error || done.status !== 0) {
    throw new Error(`taskset ${args.join(' ')} failed (apt-get install util-linux): ${done.error?.message ?? done.stderr}`);
  }
}

/**
 * Runs `measure` with this process (all its threads) on the first CPU and what it starts meanwhile, through
 * spawnTimed and spawnWire, on the others; this process gets every CPU back afterwards.
 */
export async function observed<T>(measure: () => Promise<T>): Promise<T> {
  if (TIMED_CPUS === null || observing) return measure();
  taskset(['-a', '-p', '-c', '0', String(process.pid)]);
  observing = true;
  try {
    return await measure();
  } finally {
    observing = false;
    taskset(['-a', '-p', '-c', `0-${cpuCount - 1}`, String(process.pid)]);
  }
}

/** `command` on the timed CPUs within `observed()`, as it is outside. */
function onTimedCpus(command: string, args: readonly string[]): [string, string[]] {
  return observing && TIMED_CPUS !== null ? ['taskset', ['-c', TIMED_CPUS, command, ...args]] : [command, [...args]];
}

/** Spawns `command` as a process a latency benchmark times: TIMED_NICENESS below the benchmark (nice execs it). */
export function spawnTimed(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  return spawn(...onTimedCpus('nice', ['-n', String(TIMED_NICENESS), command, ...args]), options);
}

/** Spawns the wire between the benchmark and a timed process (socat, the broker): at the benchmark's priority. */
export function spawnWire(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  return spawn(...onTimedCpus(command, args), options);
}

/** A socat pty pair linked at `a` and `b`, once both exist. `bench` names the benchmark in a failure. */
export async function ptyPair(bench: string, a: string, b: string): Promise<ChildProcess> {
  const socat = spawnWire('socat', [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: 'ignore' });
  socat.on('error', () => undefined);
  await waitFor(bench, () => existsSync(a) && existsSync(b), 5000, 'socat pty pair (apt-get install socat)');
  return socat;
}

/**
 * Writes `dir/config.yaml` for one door on simulated GPIO (relay 17, contact 27 without debounce, held-open alarms
 * out of the way) with `reader` (a YAML flow mapping), and imports examples/snapshot.json. Returns the path.
 */
export function benchAgentConfig(dir: string, options: { reader: string; unlockSeconds: number; extra?: string }): string {
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `agent: { id: bench, dataDir: ${dir}/data, timezone: Europe/Berlin, logLevel: warn }
${options.extra ?? ''}
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${dir}/gpio }
doors:
  - uuid: 6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d
    resourceId: 12
    relay: { pin: 17 }
    unlockSeconds: ${options.unlockSeconds}
    heldOpenSeconds: 3600
    contact: { pin: 27, debounceMs: 0 }
    reader: ${options.reader}
`,
  );
  const imported = spawnSync(process.execPath, [cli, 'import', join(root, 'examples/snapshot.json'), '--config', config]);
  if (imported.status !== 0) throw new Error(`import failed: ${imported.stderr}`);
  return config;
}
