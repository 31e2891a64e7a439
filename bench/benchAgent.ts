/**
 * What the benchmarks that start a real agent share: a socat pty pair, and an agent configuration (simulated GPIO,
 * one door with a contact, the reader given) with the example snapshot imported.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
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

/** Spawns `command` as a process a latency benchmark times: TIMED_NICENESS below the benchmark (nice execs it). */
export function spawnTimed(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  return spawn('nice', ['-n', String(TIMED_NICENESS), command, ...args], options);
}

/** A socat pty pair linked at `a` and `b`, once both exist. `bench` names the benchmark in a failure. */
export async function ptyPair(bench: string, a: string, b: string): Promise<ChildProcess> {
  const socat = spawn('socat', [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: 'ignore' });
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
