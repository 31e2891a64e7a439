/**
 * The reference service under load (issue: the reference service; issue 15 item 9 for the goals): GET /multipleusers
 * with 10,000 users and GET /user, requests/s and p99 measured by a client in a separate process (our lean one for
 * the 4 MB list, autocannon for GET /user), beside a bare
 * fastify measured the same way in the same run: sending the very bytes of the list (4 MB: the floor of the list,
 * where the client's own cost of reading that much shows) and a hello-world (the floor of GET /user). Also the
 * CPU time the service process spent per request (from /proc, on Linux), which a loaded machine disturbs less.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from './net.js';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BenchRow, SERVICE_NODE_OPTIONS } from './report.js';
import { seedService } from './serviceSeed.js';
import { benchmarkServiceMemory } from './serviceMemory.js';

const USERS = 10_000;
const root = resolve(fileURLToPath(import.meta.url), '../../..');
const autocannon = join(createRequire(import.meta.url).resolve('autocannon/package.json'), '..', 'autocannon.js');

export async function waitReady(child: ChildProcess, marker: string): Promise<void> {
  await new Promise<void>((res, rej) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes(marker) && res());
    child.once('exit', (code) => rej(new Error(`exited ${code}`)));
  });
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** CPU time (user + system, ms) a process has used so far, or null where /proc is not there. */
function cpuMs(pid: number | undefined): number | null {
  const file = `/proc/${pid}/stat`;
  if (pid === undefined || !existsSync(file)) return null;
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const stat = readFileSync(file, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

export interface Load {
  perSecond: number;
  /** Latency p50 (ms): autocannon's runs only. */
  p50?: number;
  p99: number;
  errors: number;
  /** CPU ms the server process spent per request answered, or null. */
  cpuPerRequest: number | null;
}

/**
 * Large answers (the 4 MB list) through our lean client (httpLoad.ts) in its own process: autocannon keeps each
 * body as a string and would measure its own work. 10 connections for 5 s.
 */
function loadLarge(url: string, server: ChildProcess, headers: string[] = []): Load {
  const cpuBefore = cpuMs(server.pid);
  const r = spawnSync(process.execPath, [join(root, 'dist/bench/httpLoad.js'), url, '10', '5', ...headers], { encoding: 'utf8' });
  const cpuAfter = cpuMs(server.pid);
  if (r.status !== 0) throw new Error(`httpLoad failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { requests: number; perSecond: number; p99: number; errors: number };
  const cpuPerRequest = cpuBefore === null || cpuAfter === null || out.requests === 0 ? null : (cpuAfter - cpuBefore) / out.requests;
  return { perSecond: out.perSecond, p99: out.p99, errors: out.errors, cpuPerRequest };
}

/** autocannon in its own process: 10 connections (or `connections`) for 5 s; requests/s (mean), latency p50 and p99 (ms), the server's CPU. */
export function load(url: string, server: ChildProcess, headers: string[] = [], connections = 10): Load {
  const args = [autocannon, '-j', '-c', String(connections), '-d', '5', ...headers.flatMap((h) => ['-H', h]), url];
  const cpuBefore = cpuMs(server.pid);
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 16 << 20 });
  const cpuAfter = cpuMs(server.pid);
  if (r.status !== 0) throw new Error(`autocannon failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { requests: { average: number; total: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number };
  const cpuPerRequest = cpuBefore === null || cpuAfter === null || out.requests.total === 0 ? null : (cpuAfter - cpuBefore) / out.requests.total;
  return { perSecond: out.requests.average, p50: out.latency.p50, p99: out.latency.p99, errors: out.non2xx + out.errors, cpuPerRequest };
}

/** The load figures, then the memory under the largest allowed requests (serviceMemory.ts). */
export async function benchmarkService(workDir: string): Promise<BenchRow[]> {
  return [...(await benchmarkServiceLoad(workDir)), ...(await benchmarkServiceMemory(workDir))];
}

async function benchmarkServiceLoad(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'service');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const key = seedService(join(dir, 'data'), USERS);
  const port = await freePort();
  const config = join(dir, 'config.yaml');
  writeFileSync(config, `server: { listen: 127.0.0.1:${port}, dataDir: ${dir}/data }\n`);
  const service = spawn(process.execPath, [...SERVICE_NODE_OPTIONS, join(root, 'dist/src/cli.js'), 'service', '--config', config], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let hello: ChildProcess | undefined;
  try {
    await waitReady(service, 'service ready');
    const auth = [`authorization=Bearer ${key}`];
    // The list once (its answer is then built and kept, as after any change), for the floor to send the same bytes.
    const listUrl = `http://127.0.0.1:${port}/multipleusers`;
    const answer = await fetch(listUrl, { headers: { authorization: `Bearer ${key}` } });
    if (answer.status !== 200) throw new Error(`GET /multipleusers answered ${answer.status}`);
    const listFile = join(dir, 'list.json');
    const listBytes = Buffer.from(await answer.arrayBuffer());
    writeFileSync(listFile, listBytes);
    const listMb = `${(listBytes.length / 1e6).toFixed(1)} MB`;
    const helloPort = await freePort();
    hello = spawn(process.execPath, [join(root, 'dist/bench/helloServer.js'), String(helloPort), listFile], { stdio: ['ignore', 'pipe', 'inherit'] });
    await waitReady(hello, 'ready');
    const helloFloor = load(`http://127.0.0.1:${helloPort}/`, hello);
    const bodyFloor = loadLarge(`http://127.0.0.1:${helloPort}/body`, hello);
    const list = loadLarge(listUrl, service, [`authorization: Bearer ${key}`]);
    const detail = load(`http://127.0.0.1:${port}/user?email_id=${USERS / 2}`, service, auth);
    const b = 'service';
    // Goals of issue 15 item 9: the list p99 < 100 ms at 10 connections and >= 50/s; GET /user >= 5,000/s.
    const rows = (metric: string, r: Load, floor: Load, floorName: string, goal: { perSecond: number; p99?: number }): BenchRow[] => [
      {
        bench: b,
        metric: `${metric} requests/s`,
        value: r.perSecond,
        unit: '/s',
        floor: floor.perSecond,
        floorLabel: `${floorName}/s`,
        ratio: floor.perSecond / r.perSecond,
        target: `≥ ${goal.perSecond.toLocaleString('en-US')} /s`,
        met: r.errors === 0 && r.perSecond >= goal.perSecond,
      },
      {
        bench: b,
        metric: `${metric} p99`,
        value: r.p99,
        unit: 'ms',
        floor: floor.p99,
        floorLabel: `${floorName}, p99`,
        ratio: r.p99 / Math.max(floor.p99, 1),
        target: goal.p99 === undefined ? 'no errors' : `< ${goal.p99} ms, no errors`,
        met: r.errors === 0 && (goal.p99 === undefined || r.p99 < goal.p99),
      },
      ...(r.cpuPerRequest === null || floor.cpuPerRequest === null
        ? []
        : [
            {
              bench: b,
              metric: `${metric} service CPU per request`,
              value: r.cpuPerRequest,
              unit: 'ms',
              floor: floor.cpuPerRequest,
              floorLabel: `${floorName}, CPU`,
              ratio: r.cpuPerRequest / floor.cpuPerRequest,
              target: '',
              met: null,
            },
          ]),
    ];
    return [
      ...rows(`GET /multipleusers (${USERS} users, ${listMb})`, list, bodyFloor, `bare fastify sending the same ${listMb}`, { perSecond: 50, p99: 100 }),
      ...rows('GET /user', detail, helloFloor, 'bare fastify hello-world', { perSecond: 5000 }),
    ];
  } finally {
    service.kill('SIGTERM');
    hello?.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
