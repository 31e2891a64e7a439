/**
 * The reference service under load (issue: the reference service): GET /multipleusers with 10,000 users and
 * GET /user, requests/s and p99 measured by autocannon in a separate process, beside a bare fastify
 * hello-world measured the same way in the same run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from './net.js';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from './report.js';
import { seedService } from './serviceSeed.js';

const USERS = 10_000;
const root = resolve(fileURLToPath(import.meta.url), '../../..');
const autocannon = join(createRequire(import.meta.url).resolve('autocannon/package.json'), '..', 'autocannon.js');


async function waitReady(child: ChildProcess, marker: string): Promise<void> {
  await new Promise<void>((res, rej) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes(marker) && res());
    child.once('exit', (code) => rej(new Error(`exited ${code}`)));
  });
}

/** autocannon in its own process: 10 connections for 5 s; returns requests/s (mean) and latency p99 (ms). */
function load(url: string, headers: string[] = []): { perSecond: number; p99: number; errors: number } {
  const args = [autocannon, '-j', '-c', '10', '-d', '5', ...headers.flatMap((h) => ['-H', h]), url];
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 16 << 20 });
  if (r.status !== 0) throw new Error(`autocannon failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { requests: { average: number }; latency: { p99: number }; non2xx: number; errors: number };
  return { perSecond: out.requests.average, p99: out.latency.p99, errors: out.non2xx + out.errors };
}

export async function benchmarkService(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'service');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const key = seedService(join(dir, 'data'), USERS);
  const port = await freePort();
  const config = join(dir, 'config.yaml');
  writeFileSync(config, `server: { listen: 127.0.0.1:${port}, dataDir: ${dir}/data }\n`);
  const service = spawn(process.execPath, [join(root, 'dist/src/cli.js'), 'service', '--config', config], { stdio: ['ignore', 'pipe', 'inherit'] });
  const helloPort = await freePort();
  const hello = spawn(process.execPath, [join(root, 'dist/bench/helloServer.js'), String(helloPort)], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await waitReady(service, 'service ready');
    await waitReady(hello, 'ready');
    const auth = [`authorization=Bearer ${key}`];
    const floor = load(`http://127.0.0.1:${helloPort}/`);
    const list = load(`http://127.0.0.1:${port}/multipleusers`, auth);
    const detail = load(`http://127.0.0.1:${port}/user?email_id=${USERS / 2}`, auth);
    const b = 'service';
    const row = (metric: string, r: { perSecond: number; p99: number; errors: number }): BenchRow[] => [
      { bench: b, metric: `${metric} requests/s`, value: r.perSecond, unit: '/s', floor: floor.perSecond, floorLabel: 'bare fastify hello-world/s', ratio: floor.perSecond / r.perSecond, target: '', met: null },
      { bench: b, metric: `${metric} p99`, value: r.p99, unit: 'ms', floor: floor.p99, floorLabel: 'hello-world p99', ratio: r.p99 / Math.max(floor.p99, 1), target: 'no errors', met: r.errors === 0 },
    ];
    return [...row(`GET /multipleusers (${USERS} users)`, list), ...row('GET /user', detail)];
  } finally {
    service.kill('SIGTERM');
    hello.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
