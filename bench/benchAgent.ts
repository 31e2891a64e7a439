/**
 * What the benchmarks that start a real agent share: a socat pty pair, and an agent configuration (simulated GPIO,
 * one door with a contact, the reader given) with the example snapshot imported.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait.js';

const root = resolve(fileURLToPath(import.meta.url), '../../..');
export const cli = join(root, 'dist/src/cli.js');

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
