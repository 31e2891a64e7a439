/**
 * `scim` (issue 56): a SCIM deactivation to the door. The reference service in its own process with 10,000 users
 * (serviceSeed.ts) and server.identity.scim, a mosquitto, and a running agent taking pushed revisions (revocation.ts,
 * as `sync`'s revocation latency). 20 deactivations as Okta sends them (PATCH /scim/v2/Users/{id}, a replace of
 * {"active": false}), each timed from the PATCH sent until the door's cache holds the user suspended; beside them,
 * alternating, 20 suspensions of other users through PUT /togglesuspension: the floor, so the rows say what SCIM
 * adds to a suspension (its token check, the user read as a resource, the patch applied and written whole).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBroker } from './mqttBench.js';
import { freePort } from './net.js';
import { type BenchRow, SERVICE_NODE_OPTIONS } from './report.js';
import { withPushedAgent } from './revocation.js';
import { waitReady } from './serviceBench.js';
import { seedService } from './serviceSeed.js';
import { p50p99 } from './valueFile.js';

const B = 'scim';
const USERS = 10_000;
const CHANGES = 20;
/** The goal: a deactivation at every door within 2 s, as a suspension. */
const GOAL_MS = 2000;
const root = resolve(fileURLToPath(import.meta.url), '../../..');
const cli = join(root, 'dist/src/cli.js');

function keyCreate(config: string, args: string[]): string {
  const made = spawnSync(process.execPath, [cli, 'service', 'key', 'create', ...args, '--config', config], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`${B} benchmark: service key create ${args.join(' ')} failed: ${made.stderr}`);
  return made.stdout.trim();
}

export async function benchmarkScim(workDir: string): Promise<BenchRow[]> {
  const dir = join(workDir, 'scim');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'api-key'), `${seedService(join(dir, 'svc'), USERS)}\n`);
  const port = await freePort();
  const mqttPort = await freePort();
  const broker = await startBroker(dir, mqttPort);
  const serviceConfig = join(dir, 'service.yaml');
  writeFileSync(
    serviceConfig,
    `server: { listen: 127.0.0.1:${port}, dataDir: ${dir}/svc, identity: { scim: { enabled: true } } }\nmqtt: { url: "mqtt://127.0.0.1:${mqttPort}", topicPrefix: bench }\n`,
  );
  const agentConfig = join(dir, 'agent.yaml');
  writeFileSync(
    agentConfig,
    `agent: { id: bench, dataDir: ${dir}/agent }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${dir}/gpio }
service: { baseUrl: "http://127.0.0.1:${port}", apiKeyFile: ${dir}/api-key, timeoutSeconds: 30 }
doors: [ { uuid: 6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d, resourceId: 12, relay: { pin: 17 } } ]
`,
  );
  const adminKey = keyCreate(serviceConfig, ['--rank', 'ADMIN']);
  const scimToken = keyCreate(serviceConfig, ['--rank', 'ADMIN', '--scope', 'scim']);
  const service = spawn(process.execPath, [...SERVICE_NODE_OPTIONS, cli, 'service', '--config', serviceConfig], { stdio: ['ignore', 'pipe', 'inherit'] });
  const call = async (method: string, path: string, key: string, type: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': type }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${B} benchmark: ${method} ${path} answered ${res.status}: ${text.slice(0, 200)}`);
    return text;
  };
  try {
    await waitReady(service, 'connected to the broker');
    // The seeded users (email_id i + 1 is user{i}@example.org) as the provider finds them: by a filter.
    const scimId = async (emailId: number) => {
      const filter = encodeURIComponent(`emails.value eq "user${emailId - 1}@example.org"`);
      const list = JSON.parse(await call('GET', `/scim/v2/Users?filter=${filter}`, scimToken, '')) as { Resources: Array<{ id: string }> };
      return list.Resources[0]!.id;
    };
    const targets = await Promise.all(Array.from({ length: CHANGES }, (_, i) => scimId(200 + i)));
    const { floor, scim } = await withPushedAgent(B, dir, agentConfig, `mqtt://127.0.0.1:${mqttPort}`, async (timed) => {
      const times = { floor: [] as number[], scim: [] as number[] };
      for (let i = 0; i < CHANGES; i++) {
        times.floor.push(await timed(100 + i, () => call('PUT', '/togglesuspension', adminKey, 'application/json', { email_id: 100 + i })));
        times.scim.push(
          await timed(200 + i, () =>
            call('PATCH', `/scim/v2/Users/${targets[i]}`, scimToken, 'application/scim+json', {
              schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
              Operations: [{ op: 'replace', value: { active: false } }],
            }),
          ),
        );
      }
      return times;
    });
    const value = p50p99(scim);
    const bare = p50p99(floor);
    return (['p50', 'p99'] as const).map((p) => ({
      bench: B,
      metric: `a SCIM deactivation to the door, ${USERS.toLocaleString('en-US')} users, ${p} (${CHANGES} changes, pushed)`,
      value: value[p],
      unit: 'ms',
      floor: bare[p],
      floorLabel: `PUT /togglesuspension to the door ${p}`,
      ratio: value[p] / bare[p],
      target: p === 'p99' ? `< ${GOAL_MS} ms` : '',
      met: p === 'p99' ? value.p99 < GOAL_MS : null,
    }));
  } finally {
    service.kill('SIGTERM');
    broker.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
