/**
 * Start-up of the CLI (`npm run bench -- startup`): the short commands beside bare node (`node -e 0`), and the
 * daemon from spawn to its `door-agent ready` log line, on simulated GPIO with an empty cache. A CLI start on a
 * Pi-class board is mostly module loading, and `relock` is what systemd runs after a crash, before the restart.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from './report.js';
import { percentile } from './stats.js';

const ROUNDS = 15;
const root = resolve(fileURLToPath(import.meta.url), '../../..');
const CLI = join(root, 'dist/cli/door-agent.js');

/** Median wall time of `node args` over ROUNDS runs, in ms (one warm-up run first: the page cache). */
function medianMs(args: string[]): number {
  spawnSync(process.execPath, args, { cwd: root, stdio: 'ignore' });
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const started = performance.now();
    const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'ignore' });
    times.push(performance.now() - started);
    if (r.error) throw r.error;
  }
  return percentile(
    times.sort((a, b) => a - b),
    50,
  );
}

/** Median time from spawning `door-agent run` to its "door-agent ready" line, in ms (the daemon is stopped each time). */
async function daemonReadyMs(config: string): Promise<number> {
  const once = () =>
    new Promise<number>((resolveReady, reject) => {
      const started = performance.now();
      const child = spawn(process.execPath, [CLI, 'run', '--config', config], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
      let buffered = '';
      let ready = 0;
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        if (ready === 0 && buffered.includes('"msg":"door-agent ready"')) {
          ready = performance.now() - started;
          child.kill('SIGTERM');
        }
      });
      child.once('exit', (code) =>
        ready > 0 ? resolveReady(ready) : reject(new Error(`door-agent run exited ${code} before it was ready: ${buffered.slice(-500)}`)),
      );
    });
  await once();
  const times: number[] = [];
  for (let i = 0; i < 7; i++) times.push(await once());
  return percentile(
    times.sort((a, b) => a - b),
    50,
  );
}

export async function benchmarkStartup(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'startup');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `agent: { id: startup, dataDir: ${join(dir, 'data')}, timezone: Europe/Berlin }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${join(dir, 'gpio')} }
doors: [ { uuid: 6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d, resourceId: 12, name: Front door, relay: { pin: 17 } } ]
`,
  );
  // As deployed: a broker and a service configured (nothing listens there: the daemon is ready without them).
  const deployed = join(dir, 'deployed.yaml');
  writeFileSync(join(dir, 'service.key'), 'startup-bench-key\n', { mode: 0o600 });
  writeFileSync(
    deployed,
    `agent: { id: startup2, dataDir: ${join(dir, 'data2')}, timezone: Europe/Berlin }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${join(dir, 'gpio2')} }
mqtt: { url: "mqtt://127.0.0.1:1" }
service: { baseUrl: "http://127.0.0.1:1", apiKeyFile: ${join(dir, 'service.key')} }
doors: [ { uuid: 6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d, resourceId: 12, name: Front door, relay: { pin: 17 } } ]
`,
  );
  const bare = medianMs(['-e', '0']);
  const rows: BenchRow[] = [];
  const command = (label: string, args: string[]) => {
    const ms = medianMs([CLI, ...args]);
    rows.push({
      bench: 'startup',
      metric: `door-agent ${label} (median of ${ROUNDS})`,
      value: ms,
      unit: 'ms',
      floor: bare,
      floorLabel: 'bare node -e 0',
      ratio: ms / bare,
      target: '< 2x floor',
      met: ms < 2 * bare,
    });
  };
  command('--version', ['--version']);
  command('relock', ['relock', '--config', config]);
  command('status', ['status', '--config', config]);
  command('check --help', ['check', '--help']);
  for (const [label, path] of [
    ['one door', config],
    ['with MQTT and service', deployed],
  ] as const) {
    const ready = await daemonReadyMs(path);
    rows.push({
      bench: 'startup',
      metric: `door-agent run to "door-agent ready", ${label} (median of 7)`,
      value: ready,
      unit: 'ms',
      floor: bare,
      floorLabel: 'bare node -e 0',
      ratio: ready / bare,
      target: '< 500',
      met: ready < 500,
    });
  }
  rmSync(dir, { recursive: true, force: true });
  return rows;
}
