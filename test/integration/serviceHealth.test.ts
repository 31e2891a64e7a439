import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildService } from '../../src/service/server.js';
import type { ServiceDeps } from '../../src/service/routeContext.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { systemClock } from '../../src/util/clock.js';
import { tempDir } from '../support/cli.js';
import { rawGet } from '../support/net.js';
import { newServiceDb } from '../support/serviceDb.js';

// Issue 52 item 4: GET /healthz, a load balancer's health check (test/integration/haproxy.test.ts runs it behind
// HAProxy). No key; 200 when this process can query its database, 503 with Retry-After when it cannot or while it
// stops; up or down and nothing more. The real probe on a real SQLite file, and a probe that fails or hangs as a
// database server does when it is down (the PostgreSQL case itself is item 5's).

const RETRY_AFTER = 7;
const tmp = tempDir('door-agent-health-');

interface Running {
  app: ReturnType<typeof buildService>;
  port: number;
  logs: Array<{ level: number; msg: string; err?: { message: string } }>;
}

async function start(db: SqlDb, deps: Partial<ServiceDeps> = {}): Promise<Running> {
  const logs: Running['logs'] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const app = buildService({
    db,
    clock: systemClock,
    logger,
    resources: [],
    lockReplyTimeoutMs: 1000,
    loadLimits: { retryAfterSeconds: RETRY_AFTER },
    ...deps,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, port: (app.server.address() as AddressInfo).port, logs };
}

const json = (body: Buffer) => JSON.parse(body.toString('utf8')) as Record<string, unknown>;

/** The database probe of the second service: settles as the test says. */
let probe: () => Promise<void> = async () => undefined;
let db: SqlDb;
let real: Running;
let probed: Running;

beforeAll(async () => {
  db = (await newServiceDb(tmp.path)).db;
  real = await start(db);
  probed = await start(db, { databaseProbe: () => probe() });
});

afterAll(async () => {
  await real?.app.close();
  await probed?.app.close().catch(() => undefined); // stopped by a test already
  await db.close().catch(() => undefined); // closed by a test already
  tmp.cleanup();
});

describe('GET /healthz', () => {
  it('answers 200 without a key (or with any) when the database answers; never the key check of another path', async () => {
    const ok = await rawGet(real.port, '/healthz');
    expect(ok.status).toBe(200);
    expect(json(ok.body)).toEqual({ status: 'ok', database: 'ok' });
    expect((await rawGet(real.port, '/healthz', { authorization: 'Bearer dak_not-a-key' })).status).toBe(200);
    expect((await rawGet(real.port, '/healthz?api_key=dak_not-a-key')).status).toBe(200);
    const head = await fetch(`http://127.0.0.1:${real.port}/healthz`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    // Exactly this path and these methods: anything else still needs a key, checked first.
    for (const path of ['/status', '/healthz/', '/HEALTHZ', '/healthzz', '/healthz/../status', '/directory']) {
      expect((await rawGet(real.port, path)).status, path).toBe(401);
    }
    for (const method of ['POST', 'PUT', 'DELETE']) {
      expect((await fetch(`http://127.0.0.1:${real.port}/healthz`, { method })).status, method).toBe(401);
    }
  });

  it('503 with Retry-After when the probe fails, naming the problem but not its cause (logged once, with the recovery)', async () => {
    probe = () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.5:5432 (secret detail)'));
    for (let i = 0; i < 3; i++) {
      const down = await rawGet(probed.port, '/healthz');
      expect(down.status).toBe(503);
      expect(down.headers['retry-after']).toBe(String(RETRY_AFTER));
      expect(json(down.body)).toEqual({ error: `this service process cannot query its database: try again in ${RETRY_AFTER} s` });
    }
    const warned = probed.logs.filter((l) => l.msg.includes('cannot query its database'));
    expect(warned).toHaveLength(1);
    expect(warned[0]!.err?.message).toContain('ECONNREFUSED');
    probe = async () => undefined;
    expect((await rawGet(probed.port, '/healthz')).status).toBe(200);
    expect(probed.logs.filter((l) => l.msg.includes('answers again'))).toHaveLength(1);
  });

  it('503 when the probe does not settle within 3 s (a database server that stopped answering)', async () => {
    probe = () => new Promise<void>(() => undefined);
    const started = performance.now();
    const hung = await rawGet(probed.port, '/healthz');
    expect(hung.status).toBe(503);
    expect(performance.now() - started).toBeGreaterThanOrEqual(2900);
    expect(probed.logs.at(-1)?.err?.message).toBe('the database did not answer within 3 s');
    probe = async () => undefined;
  });

  it('503 when the real probe cannot query the SQLite database (closed under it)', async () => {
    await db.close();
    const down = await rawGet(real.port, '/healthz');
    expect(down.status).toBe(503);
    expect(down.headers['retry-after']).toBe(String(RETRY_AFTER));
    expect(json(down.body).error).toContain('cannot query its database');
  });

  it('503 with Retry-After while the service stops', async () => {
    // The request line is in, the headers are not: the connection is busy, so closing waits for it.
    const socket = connect(probed.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    await new Promise((r) => setTimeout(r, 100));
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const stopping = probed.app.close();
    await new Promise((r) => setTimeout(r, 100));
    socket.write('\r\n');
    await closed;
    await stopping;
    const text = Buffer.concat(chunks).toString();
    expect(text).toMatch(/^HTTP\/1\.1 503 /);
    expect(text.toLowerCase()).toMatch(/\r\nretry-after: \d+\r\n/);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toEqual({ error: 'the service is stopping: try again in a moment' });
  });
});
