/**
 * Sync at scale (`npm run bench -- sync-scale`): one agent's full sync of a large directory through GET /directory
 * (compressed, as the agent asks for it), in its own process under the deployed heap limit
 * (--max-old-space-size=64): 250,000 users, then 1,000,000. Each row beside the bare transfer of the same answer
 * (a plain client reading the same compressed bytes, no parsing, no database). The service is seeded, started and
 * asked once for the directory first, so the agent's figure is its own sync, not the service's first build.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './net.js';
import { AGENT_NODE_OPTIONS, type BenchRow, infoRow, SERVICE_NODE_OPTIONS, SERVICE_NODE_OPTIONS_1M } from './report.js';
import { seedService } from './serviceSeed.js';

const SIZES = [250_000, 1_000_000];
const root = resolve(fileURLToPath(import.meta.url), '../../..');
const CLI = join(root, 'dist/cli/door-agent.js');

/** The peak resident set of a running process, in MB (VmHWM). */
function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

/** A plain client reading the whole compressed answer and dropping it: the floor of the transfer. */
async function bareTransfer(url: string, key: string): Promise<{ seconds: number; bytes: number }> {
  const started = performance.now();
  const response = await fetch(`${url}/directory`, { headers: { authorization: `Bearer ${key}`, 'accept-encoding': 'gzip' } });
  if (!response.ok) throw new Error(`sync-scale: GET /directory answered ${response.status}`);
  // fetch decompresses: the bytes counted are what the agent parses.
  let bytes = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
  return { seconds: (performance.now() - started) / 1000, bytes };
}

interface SyncPhaseOut {
  seconds: number;
  rssMb: number;
  users: { added: number };
  bytesIn: number;
  bodyBytes: number;
  mode: string;
}

async function scale(dir: string, users: number): Promise<BenchRow[]> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const seedStarted = performance.now();
  const key = seedService(join(dir, 'svc'), users);
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  writeFileSync(join(dir, 'api-key'), `${key}\n`);
  writeFileSync(join(dir, 'service.yaml'), `server: { listen: 127.0.0.1:${port}, dataDir: ${dir}/svc }\n`);
  const agentConfig = join(dir, 'agent.yaml');
  writeFileSync(
    agentConfig,
    `agent: { id: scale, dataDir: ${dir}/agent }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${dir}/gpio }
service: { baseUrl: "${url}", apiKeyFile: ${dir}/api-key, timeoutSeconds: 60 }
doors: [ { uuid: 6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d, resourceId: 12, relay: { pin: 17 } } ]
`,
  );
  const heap = users > 250_000 ? SERVICE_NODE_OPTIONS_1M : SERVICE_NODE_OPTIONS;
  const service = spawn(process.execPath, [...heap, CLI, 'service', '--config', join(dir, 'service.yaml')], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((ready, failed) => {
      service.stdout.on('data', (d: Buffer) => d.toString().includes('service ready') && ready());
      service.once('exit', (code) => failed(new Error(`sync-scale: the service exited ${code} before it was ready`)));
    });
    const first = await bareTransfer(url, key); // builds the revision's bytes once
    const floor = await bareTransfer(url, key);
    const agent = spawnSync(process.execPath, [...AGENT_NODE_OPTIONS, join(root, 'dist/bench/syncPhase.js'), 'sync', agentConfig], {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
    });
    const serviceRss = peakRssMb(service.pid!);
    const b = 'sync-scale';
    const label = `${users.toLocaleString('en-US')} users`;
    const rows: BenchRow[] = [
      infoRow(b, `${label}: seeding the service (setup)`, seedSeconds, 's'),
      infoRow(b, `${label}: the service's first GET /directory (builds the revision's bytes)`, first.seconds, 's'),
      infoRow(b, `${label}: the service's peak RSS`, serviceRss, 'MB'),
    ];
    if (agent.status !== 0) {
      // Did not fit: the figure is the failure itself (stated in docs/sync.md), not a crash of the bench.
      const reason = agent.stderr.includes('heap out of memory') ? 'heap out of memory' : agent.stderr.trim().split('\n').slice(-3).join(' ');
      rows.push({
        bench: b,
        metric: `${label}: full sync under a 64 MB heap FAILED: ${reason.slice(0, 200)}`,
        value: 0,
        unit: '',
        floor: null,
        floorLabel: '',
        ratio: null,
        target: 'fits',
        met: false,
      });
      return rows;
    }
    const out = JSON.parse(agent.stdout) as SyncPhaseOut;
    if (out.users.added !== users) throw new Error(`sync-scale: the agent holds ${out.users.added} users after a full sync of ${users}`);
    rows.push(
      {
        bench: b,
        metric: `${label}: full sync, 64 MB heap (${Math.round(out.bytesIn / 1e6)} MB on the wire, ${Math.round(out.bodyBytes / 1e6)} MB of JSON)`,
        value: out.seconds,
        unit: 's',
        floor: floor.seconds,
        floorLabel: 'bare client, the same answer read and dropped',
        ratio: out.seconds / floor.seconds,
        target: '',
        met: null,
      },
      infoRow(b, `${label}: the agent's peak RSS in that sync`, out.rssMb, 'MB'),
    );
    return rows;
  } finally {
    service.kill('SIGTERM');
    await new Promise((done) => (service.exitCode === null ? service.once('exit', done) : done(null)));
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchmarkSyncScale(workDir: string): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const users of SIZES) rows.push(...(await scale(join(workDir, `sync-scale-${users}`), users)));
  return rows;
}
