/**
 * Sync benchmark (issues: sync, and pushed changes): the reference service on loopback with 10,000 users holding
 * 20,000 cards; a full sync into an empty cache through GET /directory (wall time, peak RSS, bytes written) beside
 * a bare client fetching the same; a resync with no change (requests, bytes received, rows written); a sync after
 * one user changed (requests, agent work); then the revocation latency of a running agent with MQTT: 20 changes
 * through the HTTP API, each timed until the door's cache holds it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from './net.js';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBroker } from './mqttBench.js';
import { AGENT_NODE_OPTIONS, type BenchRow, infoRow, SERVICE_NODE_OPTIONS } from './report.js';
import { seedService } from './serviceSeed.js';
import { withPushedAgent } from './revocation.js';
import { p50p99 } from './valueFile.js';

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
  const mqttPort = await freePort();
  const broker = await startBroker(dir, mqttPort);
  writeFileSync(
    join(dir, 'service.yaml'),
    `server: { listen: 127.0.0.1:${port}, dataDir: ${dir}/svc }\nmqtt: { url: "mqtt://127.0.0.1:${mqttPort}", topicPrefix: bench }\n`,
  );
  const admin = spawnSync(
    process.execPath,
    [join(root, 'dist/src/cli.js'), 'service', 'key', 'create', '--rank', 'ADMIN', '--config', join(dir, 'service.yaml')],
    { encoding: 'utf8' },
  ).stdout.trim();
  const service = spawn(process.execPath, [...SERVICE_NODE_OPTIONS, join(root, 'dist/src/cli.js'), 'service', '--config', join(dir, 'service.yaml')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const api = (method: string, path: string, body: unknown) =>
    fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  try {
    await new Promise<void>((res) => service.stdout!.on('data', (d: Buffer) => d.toString().includes('service ready') && res()));
    type SyncOut = {
      seconds: number;
      workMs: number;
      applyMs: number | null;
      requests: number;
      bytesIn: number;
      mode: string;
      rowsWritten: number;
      rssMb: number;
      writeBytes: number;
      fileBytes: number;
    };
    const floor = phase<{ seconds: number }>(['bare-directory', `http://127.0.0.1:${port}`, key]);
    const full = phase<SyncOut>(['sync', agentConfig]);
    const again = phase<SyncOut>(['sync', agentConfig]);
    await api('PUT', '/togglesuspension', { email_id: 1 });
    const one = phase<SyncOut>(['sync', agentConfig]);
    const revocation = await revocationLatency(dir, agentConfig, mqttPort, api);
    const b = 'sync';
    const { p50, p99 } = p50p99(revocation);
    return [
      {
        bench: b,
        metric: `full sync, ${USERS} users / ${2 * USERS} cards (GET /directory)`,
        value: full.seconds,
        unit: 's',
        floor: floor.seconds,
        floorLabel: 'bare client, the same GET /directory',
        ratio: full.seconds / floor.seconds,
        target: '< 15',
        met: full.seconds < 15,
      },
      infoRow(b, 'peak RSS, full sync', full.rssMb, 'MB'),
      infoRow(b, 'bytes written, full sync', full.writeBytes, 'B'),
      {
        bench: b,
        metric: 'resync, no change: requests',
        value: again.requests,
        unit: '',
        floor: null,
        floorLabel: '',
        ratio: null,
        target: '1',
        met: again.requests === 1,
      },
      {
        bench: b,
        metric: 'resync, no change: body bytes received',
        value: again.bytesIn,
        unit: 'B',
        floor: null,
        floorLabel: '',
        ratio: null,
        target: '< 1024',
        met: again.bytesIn < 1024,
      },
      {
        bench: b,
        metric: 'resync, no change: rows written',
        value: again.rowsWritten,
        unit: '',
        floor: null,
        floorLabel: '',
        ratio: null,
        target: '0',
        met: again.rowsWritten === 0,
      },
      infoRow(b, 'resync, no change: bytes written', again.writeBytes, 'B'),
      {
        bench: b,
        metric: `one user changed of ${USERS}: requests`,
        value: one.requests,
        unit: '',
        floor: null,
        floorLabel: '',
        ratio: null,
        target: '1',
        met: one.requests === 1,
      },
      infoRow(b, `one user changed of ${USERS}: round trip`, one.workMs, 'ms'),
      {
        bench: b,
        metric: `one user changed of ${USERS}: agent work (apply)`,
        value: one.applyMs ?? NaN,
        unit: 'ms',
        floor: null,
        floorLabel: '',
        ratio: null,
        target: '< 50',
        met: (one.applyMs ?? Infinity) < 50,
      },
      infoRow(b, 'revocation latency p50 (20 changes, pushed)', p50, 'ms'),
      {
        bench: b,
        metric: 'revocation latency p99 (20 changes, pushed)',
        value: p99,
        unit: 'ms',
        floor: null,
        floorLabel: '',
        ratio: null,
        target: '< 2000',
        met: p99 < 2000,
      },
    ];
  } finally {
    service.kill('SIGTERM');
    broker.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A running agent (MQTT, periodic sync hourly) and 20 suspensions through the HTTP API, each timed from the
 * call until the door's cache holds the new status (revocation.ts).
 */
async function revocationLatency(
  dir: string,
  agentConfig: string,
  mqttPort: number,
  api: (m: string, p: string, b: unknown) => Promise<Response>,
): Promise<number[]> {
  return withPushedAgent('sync', dir, agentConfig, `mqtt://127.0.0.1:${mqttPort}`, async (timed) => {
    const samples: number[] = [];
    for (let i = 0; i < 20; i++) samples.push(await timed(100 + i, () => api('PUT', '/togglesuspension', { email_id: 100 + i })));
    return samples;
  });
}
