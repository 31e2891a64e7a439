import { mkdirSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/service/sql/openPostgres.js';
import { DOOR_UUID, runCli, tempDir } from '../support/cli.js';
import { seedUsers } from '../support/directorySeed.js';
import { Haproxy, SHIPPED_HAPROXY_CONFIG, haproxyBinary, haproxyCheck, writeTemplatedConfig } from '../support/haproxy.js';
import { freePort, rawGet } from '../support/net.js';
import { startPostgres, type PostgresCluster } from '../support/postgres.js';
import { scrape } from '../support/prometheus.js';
import { startServiceProcess, type ServiceProcess } from '../support/serviceProcess.js';
import { sleep } from '../support/wait.js';

// Issue 52 item 4: Debian's HAProxy with the example configuration the repository ships (examples/haproxy/haproxy.cfg:
// only its addresses, socket and log changed, and the lines needing root left out) in front of two service processes
// started as an operator starts them, on one PostgreSQL database. Requests are spread over both, a process killed is taken out by the health
// check on GET /healthz while the other answers everything, and a 503 with Retry-After from a service reaches the
// client as it was sent, never tried again on the other process. Each process's requests are read from its own
// Prometheus metrics.

/** Users in the database: a full GET /directory of about 8 MB, more than loopback's socket buffers hold. */
const USERS = 20_000;
/** server.retryAfterSeconds of each process: a Retry-After is that to twice that, so the ranges say who answered. */
const RETRY_AFTER = [3, 11];

interface Backend {
  name: string;
  port: number;
  metricsPort: number;
  process: ServiceProcess;
}

const tmp = tempDir('door-agent-haproxy-');
let key: string;
let pg: PostgresCluster;
let backends: Backend[] = [];
let proxy: Haproxy;
let frontPort: number;

/** The `server.database` lines of a configuration on the test's PostgreSQL database. */
const databaseLines = (url: string) => `  database: { url: "${url}", passwordFile: ${pg.passwordFile} }\n`;

/**
 * The database every process shares, on a PostgreSQL cluster of the test's own, and an ADMIN key made in it as an
 * operator makes one (`door-agent service key create`); the database's URL and the key.
 */
async function databaseWithKey(): Promise<{ database: string; key: string }> {
  pg = await startPostgres();
  const database = await pg.createDatabase('door');
  const config = join(tmp.path, 'template.yaml');
  writeFileSync(config, `server:\n  dataDir: ${join(tmp.path, 'template')}\n${databaseLines(database)}`);
  const created = runCli(['service', 'key', 'create', '--rank', 'ADMIN', '--config', config]);
  if (created.status !== 0) throw new Error(`service key create failed (${created.status}): ${created.stderr}`);
  return { database, key: created.stdout.trim() };
}

/** USERS users, each with a card, straight into the database as a bulk import would (before any process starts). */
async function seed(database: string): Promise<void> {
  const db = await openPostgres({ url: database, passwordFile: pg.passwordFile, maxConnections: 2 }, {}, pino({ level: 'silent' }));
  try {
    await seedUsers(db, USERS);
  } finally {
    await db.close();
  }
}

/**
 * The service processes behind the balancer, each started as an operator starts one (`door-agent service --config`
 * from the built CLI) with its metrics on a port of its own and at most one full GET /directory answer at a time,
 * all on the one database (with its key and its users).
 */
async function startBackends(count: number, database: string): Promise<Backend[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const name = `service${i + 1}`;
      const dir = join(tmp.path, name);
      mkdirSync(join(dir, 'data'), { recursive: true });
      const [port, metricsPort] = [await freePort(), await freePort()];
      const config = join(dir, 'service.yaml');
      writeFileSync(
        config,
        `server:
  listen: 127.0.0.1:${port}
  dataDir: ${join(dir, 'data')}
${databaseLines(database)}  maxDirectoryAnswers: 1
  retryAfterSeconds: ${RETRY_AFTER[i]}
  metrics: { listen: 127.0.0.1:${metricsPort} }
  resources:
    - { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door }
`,
      );
      const service = await startServiceProcess(config, { captureStderr: true, timeoutMs: 50_000 });
      return { name, port, metricsPort, process: service };
    }),
  );
}

beforeAll(async () => {
  haproxyBinary(); // a missing haproxy fails here, naming the package
  const made = await databaseWithKey();
  key = made.key;
  await seed(made.database);
  backends = await startBackends(2, made.database);
  frontPort = await freePort();
  const statsSocket = join(tmp.path, 'haproxy.sock');
  const config = writeTemplatedConfig(tmp.path, { frontPort, backends, statsSocket });
  proxy = await Haproxy.start(config, tmp.path, statsSocket);
  // Both taken in by a health check that passed (GET /healthz answered 200), not only assumed up at start.
  await proxy.until('both processes checked and up', (s) => backends.every((b) => s.get(b.name)?.status === 'UP' && s.get(b.name)?.check === 'L7OK'));
}, 120_000);

afterAll(async () => {
  await proxy?.stop();
  await Promise.all(backends.map((b) => b.process.stop(5000)));
  await pg?.close();
  tmp.cleanup();
});

/** A request through the balancer (fetch keeps its connection: each request on it is balanced by itself). */
async function viaProxy(path: string, headers: Record<string, string> = { authorization: `Bearer ${key}` }) {
  const res = await fetch(`http://127.0.0.1:${frontPort}${path}`, { headers });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The GET requests a process has answered on `route`, every status together (its metrics). */
async function answered(backend: Backend, route: string): Promise<number> {
  const { exposition } = await scrape(backend.metricsPort);
  return exposition.samples
    .filter((s) => s.name === 'door_agent_service_http_requests_total' && s.labels.method === 'GET' && s.labels.route === route)
    .reduce((sum, s) => sum + s.value, 0);
}

const answeredAll = (route: string) => Promise.all(backends.map((b) => answered(b, route)));

/** The full GET /directory answers a process is sending now (its GET /status, asked directly). */
async function directoryAnswersInFlight(backend: Backend): Promise<number> {
  const answer = await rawGet(backend.port, '/status', { authorization: `Bearer ${key}` });
  return (JSON.parse(answer.body.toString('utf8')) as { in_flight: { directory_answers: number } }).in_flight.directory_answers;
}

async function until(what: string, predicate: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const started = Date.now();
  while (!(await predicate())) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
}

describe('HAProxy with the shipped example configuration', () => {
  it('the file as shipped is valid for Debian’s HAProxy', () => {
    expect(haproxyCheck(SHIPPED_HAPROXY_CONFIG)).toBeNull();
  });

  it('GET /healthz answers through the balancer without a key; the other routes still need one', async () => {
    const health = await viaProxy('/healthz', {});
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toEqual({ status: 'ok', database: 'ok' });
    expect((await viaProxy('/status', {})).status).toBe(401);
  });

  it('spreads requests over both processes, with no stickiness', async () => {
    const before = await answeredAll('/status');
    const answers = [];
    for (let i = 0; i < 10; i++) answers.push(await viaProxy('/status'));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(answers.some((a) => a.headers.has('set-cookie'))).toBe(false);
    const after = await answeredAll('/status');
    const each = after.map((n, i) => n - before[i]!);
    expect(each[0]! + each[1]!).toBe(10);
    // Round robin: one after the other (a health check that failed on a loaded machine may skip a turn).
    expect(Math.min(...each)).toBeGreaterThanOrEqual(3);
  });

  it('a 503 with Retry-After from a process reaches the client as sent, and is not tried on the other process', async () => {
    // Each process's one place for a full directory answer is held by a client that reads nothing of it.
    const holders: Socket[] = backends.map((b) => {
      const socket = connect(b.port, '127.0.0.1');
      socket.write(`GET /directory HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`);
      socket.pause();
      return socket;
    });
    try {
      for (const b of backends) await until(`${b.name} sending the held answer`, async () => (await directoryAnswersInFlight(b)) === 1);
      const before = await answeredAll('/directory');
      const refused = await viaProxy('/directory');
      expect(refused.status).toBe(503);
      const retryAfter = Number(refused.headers.get('retry-after'));
      // The service's own answer: its message, with the Retry-After it drew (3-5 s at one process, 11-21 s at the other).
      const { error } = JSON.parse(refused.text) as { error: string };
      expect(error).toContain('server.maxDirectoryAnswers');
      expect(error).toContain(`try again in ${retryAfter} s`);
      const at = RETRY_AFTER.findIndex((r) => retryAfter >= r && retryAfter < 2 * r);
      expect(at, `Retry-After ${retryAfter} is no process's`).toBeGreaterThanOrEqual(0);
      // One request at the process that answered, none at the other: the balancer did not try it again.
      const after = await answeredAll('/directory');
      expect(after.map((n, i) => n - before[i]!)).toEqual(backends.map((_, i) => (i === at ? 1 : 0)));
    } finally {
      for (const socket of holders) socket.destroy();
    }
  });

  it('a process killed is taken out by the health check; the other answers every request meanwhile', async () => {
    const [alive, killed] = backends as [Backend, Backend];
    const before = await answered(alive, '/status');
    killed.process.child.kill('SIGKILL');
    await new Promise((r) => killed.process.child.once('exit', r));
    // Before the health check notices: a request sent to the killed process finds no connection and goes to the other.
    const meanwhile = [];
    for (let i = 0; i < 10; i++) meanwhile.push((await viaProxy('/status')).status);
    expect(meanwhile).toEqual(Array(10).fill(200));
    const servers = await proxy.until(`${killed.name} taken out`, (s) => s.get(killed.name)?.status === 'DOWN');
    expect(servers.get(killed.name)?.check).toBe('L4CON'); // its connection refused
    expect(servers.get(alive.name)?.status).toBe('UP');
    const after = [];
    for (let i = 0; i < 10; i++) after.push((await viaProxy('/status')).status);
    expect(after).toEqual(Array(10).fill(200));
    expect((await answered(alive, '/status')) - before).toBe(20);
  });

  it('with no process up, the balancer’s own 503 in the API’s shape, with a Retry-After', async () => {
    const [last] = backends as [Backend];
    await last.process.stop(5000);
    await proxy.until('no process up', (s) => backends.every((b) => s.get(b.name)?.status === 'DOWN'));
    const answer = await viaProxy('/status');
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('5');
    expect(JSON.parse(answer.text)).toEqual({ error: 'no service process is up: try again in a moment' });
  });
});
