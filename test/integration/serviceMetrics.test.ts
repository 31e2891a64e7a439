import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { startService, type RunningService } from '../../src/service/root.js';
import { systemClock } from '../../src/util/clock.js';
import { VERSION } from '../../src/version.js';
import { DOOR_UUID, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { Daemon } from '../support/daemon.js';
import { freePort, rawGet } from '../support/net.js';
import { labelValues, sampleValue, scrape, scrapeUntil } from '../support/prometheus.js';

// The reference service's Prometheus metrics (docs/reference-service.md, "Metrics"), with a real agent syncing
// from it: both scraped over HTTP and parsed as the exposition format.

const tmp = tempDir('door-agent-service-metrics-');
let service: RunningService;
let metricsPort: number;
let admin: string;
let door: string;
const EMAIL = 'metrics-user@example.org';
const CARD = '7654321';

beforeAll(async () => {
  const dataDir = join(tmp.path, 'service');
  mkdirSync(dataDir);
  service = await startService(
    {
      server: {
        listen: '127.0.0.1:0',
        metrics: { listen: '127.0.0.1:0' },
        dataDir,
        lockReplyTimeoutSeconds: 5,
        resources: [{ resourceId: 12, uuid: DOOR_UUID, type: 'DOOR', name: 'Front door' }],
      },
    },
    { clock: systemClock, logger: pino({ level: 'silent' }), env: {} },
  );
  metricsPort = Number(new URL(service.metricsUrl!).port);
  const keys = new ApiKeys(service.db);
  admin = await keys.create('ADMIN', 0, Date.now());
  door = await keys.create('DOOR', 0, Date.now());
});
afterAll(async () => {
  await service.stop();
  tmp.cleanup();
});

async function call(method: string, path: string, body?: Record<string, string>, key: string | null = admin) {
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
  const res = await fetch(`${service.url}${path}`, { method, headers, body: body ? new URLSearchParams(body).toString() : undefined });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('the reference service with server.metrics', () => {
  it('counts and times requests per route pattern and status class, with the directory revision; no key, e-mail or id in it', async () => {
    const invited = await call('POST', '/invites', { emails: JSON.stringify([EMAIL]), no_email: 'true' });
    expect(invited.status).toBe(200);
    const [id] = invited.body.add_ids as number[];
    expect((await call('PUT', '/modifysmartcard', { email_id: String(id), smartcards: JSON.stringify([{ number: CARD, label: 'badge' }]) })).status).toBe(200);
    expect((await call('GET', `/user?email_id=${id}&api_key=dak_not-a-key`, undefined, null)).status).toBe(401);
    expect((await call('GET', `/users/${EMAIL}?email_id=${id}`)).status).toBe(404);

    // A real agent syncs from it with its DOOR key.
    const dir = join(tmp.path, 'agent');
    mkdirSync(dir);
    writeFileSync(join(dir, 'api-key'), `${door}\n`);
    const agentPort = await freePort();
    const config = writeConfig(dir, {
      extra: `service: { baseUrl: "${service.url}", apiKeyFile: ${dir}/api-key, startDelaySeconds: 0 }\n` + `metrics: { listen: "127.0.0.1:${agentPort}" }`,
    });
    const agent = new Daemon(config);
    try {
      await agent.waitForMessage('door-agent ready');
      const { exposition: synced } = await scrapeUntil(
        agentPort,
        (e) => (sampleValue(e, 'door_agent_sync_duration_seconds_count') ?? 0) >= 1,
        'the first sync',
      );
      expect(sampleValue(synced, 'door_agent_sync_duration_seconds_sum')).toBeGreaterThan(0);
      expect(sampleValue(synced, 'door_agent_cache_age_seconds')).toBeLessThan(60);
    } finally {
      await agent.stop('SIGTERM');
    }

    const { text, exposition } = await scrape(metricsPort);
    const requests = (labels: Record<string, string>) => sampleValue(exposition, 'door_agent_service_http_requests_total', labels);
    expect(requests({ method: 'POST', route: '/invites', status: '2xx' })).toBe(1);
    expect(requests({ method: 'PUT', route: '/modifysmartcard', status: '2xx' })).toBe(1);
    expect(requests({ method: 'GET', route: '/user', status: '4xx' })).toBe(1); // refused for its key, before the route ran
    expect(requests({ method: 'GET', route: 'unmatched', status: '4xx' })).toBe(1);
    expect(requests({ method: 'GET', route: '/directory', status: '2xx' })).toBeGreaterThanOrEqual(1);
    expect(exposition.types.get('door_agent_service_http_request_duration_seconds')).toBe('histogram');
    expect(sampleValue(exposition, 'door_agent_service_http_request_duration_seconds_count', { method: 'GET', route: '/directory' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(exposition, 'door_agent_service_directory_revision')).toBeGreaterThanOrEqual(1);
    expect(sampleValue(exposition, 'door_agent_service_build_info', { version: VERSION, node: process.version })).toBe(1);
    expect(sampleValue(exposition, 'process_resident_memory_bytes')).toBeGreaterThan(0);

    // Routes are patterns: no query, key, e-mail, card or id reaches a label.
    for (const secret of [EMAIL, 'dak_', 'api_key', CARD, admin, door]) expect(text).not.toContain(secret);
    for (const value of labelValues(exposition, 'door_agent_service_')) expect(value).not.toBe(String(id));
  });

  it('answers GET /metrics only, on its own listener', async () => {
    expect((await rawGet(metricsPort, '/')).status).toBe(404);
    expect((await rawGet(metricsPort, '/directory')).status).toBe(404);
    expect(Number(new URL(service.url).port)).not.toBe(metricsPort);
    expect((await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${admin}` } })).status).toBe(404);
  });

  it('a metrics address already in use: exit 1 naming it and server.metrics.listen', async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as { port: number }).port;
      const dir = join(tmp.path, 'taken');
      mkdirSync(dir);
      const config = join(dir, 'config.yaml');
      writeFileSync(config, `server:\n  listen: 127.0.0.1:${await freePort()}\n  metrics: { listen: "127.0.0.1:${port}" }\n  dataDir: ${dir}/data\n`);
      const r = await runCliAsync(['service', '--config', config]);
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toContain(`cannot listen on 127.0.0.1:${port} (server.metrics.listen)`);
      expect(r.stderr).toContain('another program already listens there (stop it, or change server.metrics.listen)');
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
