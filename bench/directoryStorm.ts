/**
 * `directory-storm` (issue 28 item 1): every door asks for the whole directory at once, as after a power cut or the
 * first deploy. The reference service in its own process (as `door-agent service` runs it), just started on a
 * database it has served before (its revision already issued), and 100 doors' GET /directory without `since`, with
 * `Accept-Encoding: gzip` and a DOOR key, each on its own connection, all started together (bench/stormClient.ts).
 * Measured: the time until all 100 hold the complete body, and how many were refused, failed or timed out (no byte
 * for 10 s, the agents' default service.timeoutSeconds); beside the floor, a bare fastify sending the very bytes the
 * service stored (its gzip answer) to the same 100 clients. At 10,000 users the goal is 5 s, at 250,000 60 s, none
 * refused or timed out. Also the service's peak RSS against its unit's MemoryMax.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './net.js';
import { type BenchRow, SERVICE_NODE_OPTIONS } from './report.js';
import { frontSite, prepareSite, type PreparedSite, type SiteFront, type SiteLayout } from './serviceSite.js';

const DOORS = 100;
/** The agents' default service.timeoutSeconds: a door hearing nothing for this long gives up. */
const SILENCE_SECONDS = 10;
const MEMORY_MAX_MB = 512; // systemd/door-agent-service.service
const SIZES = [
  { users: 10_000, goalSeconds: 5 },
  { users: 250_000, goalSeconds: 60 },
];
const root = resolve(fileURLToPath(import.meta.url), '../../..');

export interface Storm {
  allMs: number | null;
  completed: number;
  refused: number;
  failed: number;
  timedOut: number;
  bytes: number;
  p50Ms: number | null;
}

/** A child process, its stdout read (so that its synchronous log lines never block it), ready at `marker`. */
async function start(args: string[], marker: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((res, rej) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes(marker) && res());
    child.once('exit', (code) => rej(new Error(`${args[0]} exited ${code}`)));
  });
  return child;
}

/** SIGTERM, and wait until it has exited (a PostgreSQL database is dropped only once no process uses it). */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/**
 * The storm client in its own process (`doors` of them, 100 unless said); resolves with its figures. `warmUrl`: each
 * door's connection opened with a GET of it first (stormClient.ts), the storm timed on those connections.
 */
export function storm(url: string, headers: string[], doors = DOORS, warmUrl?: string): Promise<Storm> {
  return new Promise((res, rej) => {
    const client = spawn(process.execPath, [join(root, 'dist/bench/stormClient.js'), url, String(doors), String(SILENCE_SECONDS), ...headers], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: warmUrl ? { ...process.env, STORM_WARM_URL: warmUrl } : process.env,
    });
    let out = '';
    client.stdout.on('data', (d: Buffer) => (out += d.toString()));
    client.once('exit', (code) => (code === 0 ? res(JSON.parse(out) as Storm) : rej(new Error(`stormClient exited ${code}`))));
  });
}

/** The raw bytes of one answer (no decompression), with its Content-Encoding. */
function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; encoding: string | undefined; body: Buffer }> {
  return new Promise((res, rej) => {
    get(url, { headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (c: Buffer) => chunks.push(c));
      response.on('end', () => res({ status: response.statusCode ?? 0, encoding: response.headers['content-encoding'], body: Buffer.concat(chunks) }));
      response.on('error', rej);
    }).on('error', rej);
  });
}

/** Peak RSS (VmHWM) of a process in MB. */
function peakMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM:'));
  return Number(line?.split(/\s+/)[1] ?? NaN) / 1024;
}

/** The site of a storm while it runs, for a measurement after the storm (serviceCluster.ts: the CPU per change). */
export interface RunningSite {
  site: PreparedSite;
  front: SiteFront;
  /** The service processes. */
  pids: number[];
}

/**
 * The storm at `users`, on a site of `layout` (one process on SQLite unless said: bench/serviceSite.ts), each
 * service process started as `door-agent service` with its unit's heap cap; its rows under `bench`, each figure
 * prefixed with `label`, `extraYaml` appended to each process's configuration. `after` runs on the same site once the
 * storm and its floor are measured.
 */
export async function stormAt(
  workDir: string,
  users: number,
  goalSeconds: number,
  options: { layout?: SiteLayout; extraYaml?: string; bench?: string; label?: string; after?: (running: RunningSite) => Promise<BenchRow[]> } = {},
): Promise<BenchRow[]> {
  const layout = options.layout ?? { engine: 'sqlite' };
  const dir = join(workDir, `directory-storm-${users}-${layout.engine}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // A service that has run before: its fingerprints stored and its revision issued (a first start also writes them).
  const site = await prepareSite(dir, layout, users, options.extraYaml);
  const key = site.doorKey;
  const services: ChildProcess[] = [];
  let front: SiteFront | undefined;
  let floorServer: ChildProcess | undefined;
  try {
    for (const config of site.configs)
      services.push(await start([...SERVICE_NODE_OPTIONS, join(root, 'dist/src/cli.js'), 'service', '--config', config], 'service ready'));
    front = await frontSite(dir, site);
    const url = `${front.url}/directory`;
    const measured = await storm(url, [`authorization: Bearer ${key}`, 'accept-encoding: gzip']);
    const ended = services.findIndex((service) => service.exitCode !== null || service.signalCode !== null);
    if (ended >= 0)
      throw new Error(
        `directory-storm benchmark: service process ${ended + 1} ended during the storm (${services[ended]!.signalCode ?? `exit ${services[ended]!.exitCode}`})`,
      );
    // The largest of the processes' peaks: each holds the answer it built.
    const peak = Math.max(...services.map((service) => peakMb(service.pid!)));
    // The bytes the service stored and sent, for the floor to send the same.
    const stored = await rawGet(url, { authorization: `Bearer ${key}`, 'accept-encoding': 'gzip' });
    if (stored.status !== 200 || stored.encoding !== 'gzip') throw new Error(`GET /directory answered ${stored.status} (${stored.encoding ?? 'identity'})`);
    const identity = await rawGet(url, { authorization: `Bearer ${key}` });
    const file = join(dir, 'directory.json.gz');
    writeFileSync(file, stored.body);
    const floorPort = await freePort();
    floorServer = await start([join(root, 'dist/bench/helloServer.js'), String(floorPort), file, 'gzip'], 'ready');
    const floor = await storm(`http://127.0.0.1:${floorPort}/body`, ['accept-encoding: gzip']);
    const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
    const b = options.bench ?? 'directory-storm';
    const what = `${options.label ?? ''}${DOORS} doors, full GET /directory of ${users.toLocaleString('en-US')} users (${mb(identity.body.length)}, gzip ${mb(stored.body.length)})`;
    const missed = measured.refused + measured.failed + measured.timedOut;
    const seconds = (s: Storm) => (s.allMs === null ? Number.NaN : s.allMs / 1000);
    const afterRows = options.after ? await options.after({ site, front, pids: services.map((service) => service.pid!) }) : [];
    const balancer = front.balancerSummary();
    if (balancer !== null) process.stdout.write(`${b}: HAProxy passed on ${balancer}\n`);
    return [
      {
        bench: b,
        metric: `${what}: all hold it, service just started`,
        value: seconds(measured),
        unit: 's',
        floor: seconds(floor),
        floorLabel: 'bare fastify sending the same gzip bytes',
        ratio: seconds(measured) / seconds(floor),
        target: `≤ ${goalSeconds} s, none refused or timed out`,
        met: measured.allMs !== null && measured.allMs <= goalSeconds * 1000 && missed === 0,
      },
      {
        bench: b,
        metric: `${what}: refused / failed / timed out`,
        value: missed,
        unit: `(${measured.refused} / ${measured.failed} / ${measured.timedOut})`,
        floor: floor.refused + floor.failed + floor.timedOut,
        floorLabel: 'bare fastify',
        ratio: null,
        target: '0',
        met: missed === 0,
      },
      {
        bench: b,
        metric: `${what}: service peak RSS`,
        value: peak,
        unit: 'MB',
        floor: null,
        floorLabel: '',
        ratio: null,
        target: `< ${MEMORY_MAX_MB} MB (the unit's MemoryMax)`,
        met: peak < MEMORY_MAX_MB,
      },
      ...afterRows,
    ];
  } finally {
    await front?.stop();
    await Promise.all(services.map(stopProcess));
    floorServer?.kill('SIGTERM');
    await site.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchmarkDirectoryStorm(workDir: string): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const { users, goalSeconds } of SIZES) rows.push(...(await stormAt(workDir, users, goalSeconds)));
  return rows;
}
