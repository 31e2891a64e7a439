/**
 * Sync benchmark (issue: sync): the reference service on loopback with 10,000 users holding 20,000 cards; a full
 * sync into an empty cache (wall time, peak RSS, bytes written), then a resync with no change (rows and bytes
 * written), beside the floor: the same N+1 requests by a bare client with the same concurrency, no database.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from './net.js';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_NODE_OPTIONS, type BenchRow } from './report.js';
import { seedService } from './serviceSeed.js';

const USERS = 10_000;
const CONCURRENCY = 8;
const root = resolve(fileURLToPath(import.meta.url), '../../..');


function phase<T>(args: string[]): T {
  const r = spawnSync(process.execPath, [...AGENT_NODE_OPTIONS, join(root, 'dist/bench/syncPhase.js'), ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`syncPhase ${args[0]} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

export async function benchmarkSync(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'sync');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const key = seedService(join(dir, 'svc'), USERS);
  const port = await freePort();
  writeFileSync(join(dir, 'service.yaml'), `server: { listen: 127.0.0.1:${port}, dataDir: ${dir}/svc }\n`);
  writeFileSync(join(dir, 'api-key'), `${key}\n`);
  const agentConfig = join(dir, 'agent.yaml');
  writeFileSync(
    agentConfig,
    `agent: { id: bench, dataDir: ${dir}/agent }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${dir}/gpio }
service: { baseUrl: "http://127.0.0.1:${port}", apiKeyFile: ${dir}/api-key, concurrency: ${CONCURRENCY}, timeoutSeconds: 30 }
doors: [ { uuid: 6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d, resourceId: 12, relay: { pin: 17 } } ]
`,
  );
  const service = spawn(process.execPath, [join(root, 'dist/src/cli.js'), 'service', '--config', join(dir, 'service.yaml')], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((res) => service.stdout!.on('data', (d: Buffer) => d.toString().includes('service ready') && res()));
    type SyncOut = { seconds: number; rowsWritten: number; rssMb: number; writeBytes: number; fileBytes: number };
    const floor = phase<{ seconds: number }>(['bare', `http://127.0.0.1:${port}`, key, String(USERS), String(CONCURRENCY)]);
    const full = phase<SyncOut>(['sync', agentConfig]);
    const again = phase<SyncOut>(['sync', agentConfig]);
    const b = 'sync';
    return [
      { bench: b, metric: `full sync, ${USERS} users / ${2 * USERS} cards`, value: full.seconds, unit: 's', floor: floor.seconds, floorLabel: `bare client, same ${USERS + 1} requests`, ratio: full.seconds / floor.seconds, target: '< 15', met: full.seconds < 15 },
      { bench: b, metric: 'peak RSS, full sync', value: full.rssMb, unit: 'MB', floor: null, floorLabel: '', ratio: null, target: '', met: null },
      { bench: b, metric: 'bytes written, full sync', value: full.writeBytes, unit: 'B', floor: null, floorLabel: '', ratio: null, target: '', met: null },
      { bench: b, metric: 'resync, no change: rows written', value: again.rowsWritten, unit: '', floor: null, floorLabel: '', ratio: null, target: '0', met: again.rowsWritten === 0 },
      { bench: b, metric: 'resync, no change: bytes written', value: again.writeBytes, unit: 'B', floor: null, floorLabel: '', ratio: null, target: '', met: null },
      { bench: b, metric: 'resync, no change: wall time', value: again.seconds, unit: 's', floor: floor.seconds, floorLabel: 'bare client', ratio: again.seconds / floor.seconds, target: '', met: null },
    ];
  } finally {
    service.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
