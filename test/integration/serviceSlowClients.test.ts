import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServiceConfig } from '../../src/config/load.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { DEFAULT_HTTP_LIMITS, checkingIntervalMs } from '../../src/service/httpLimits.js';
import { openServiceSqlite } from '../../src/service/database.js';
import { DOOR_UUID, ROOT, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { startServiceProcess, type ServiceProcess } from '../support/serviceProcess.js';
import { testService } from '../support/serviceApp.js';
import { newServiceDb } from '../support/serviceDb.js';
import { freePort } from '../support/net.js';
import { sleep } from '../support/wait.js';

// Issue 32 item 7: slow clients. The service runs as its own process (as deployed) with 5 s timeouts; this process
// keeps 500 slow connections open against it (slow headers, a body at one byte a second, silent), replacing each
// as the service closes it, while a door's sync and a GET /multipleusers go through. Every slow connection must be
// closed by the service soon after its timeout.

const tmp = tempDir('door-agent-slow-');
const TIMEOUT_S = 5;
let service: ServiceProcess;
let port: number;
let adminKey: string;
let doorKey: string;
let config: string;

beforeAll(async () => {
  port = await freePort();
  mkdirSync(join(tmp.path, 'svc'));
  config = join(tmp.path, 'svc', 'config.yaml');
  writeFileSync(
    config,
    `server:
  listen: 127.0.0.1:${port}
  dataDir: ${tmp.path}/svc/data
  headersTimeoutSeconds: ${TIMEOUT_S}
  requestTimeoutSeconds: ${TIMEOUT_S}
  keepAliveTimeoutSeconds: ${TIMEOUT_S}
  resources:
    - { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door }
`,
  );
  // Keys made here before the service opens the database (a CLI run per key costs seconds on a loaded machine).
  const db = openServiceSqlite(join(tmp.path, 'svc', 'data', 'service.db'));
  adminKey = await new ApiKeys(db).create('ADMIN', 0, Date.now());
  doorKey = await new ApiKeys(db).create('DOOR', 0, Date.now());
  await db.close();
  service = await startServiceProcess(config);
  const call = async (path: string, body: unknown) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as { add_ids: number[] };
  };
  const invited = await call('/invites', {
    emails: Array.from({ length: 20 }, (_, i) => `u${i}@example.org`),
    smartcards: Array.from({ length: 20 }, (_, i) => [{ number: String(4_000_000 + i), label: 'badge' }]),
    no_email: true,
  });
  await call('/groups', { type: 'users', name: 'Staff', add_ids: invited.add_ids });
}, 60_000);

afterAll(async () => {
  // A service that still holds slow connections would wait for them: a failed run must not hang here.
  await service?.stop(5000);
  tmp.cleanup();
});

type Kind = 'headers' | 'body' | 'silent';

/** One slow client; resolves with how long the service let it stay connected (ms). */
function slowClient(kind: Kind): { opened: Promise<void>; closed: Promise<number>; socket: Socket } {
  const socket = connect(port, '127.0.0.1');
  const start = performance.now();
  let drip: NodeJS.Timeout | undefined;
  const opened = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.once('connect', () => {
    if (kind === 'headers') socket.write(`GET /multipleusers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${adminKey}\r\nX-Slow: `);
    if (kind === 'body') {
      socket.write(
        `POST /groups HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${adminKey}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"add_ids":[`,
      );
    }
    if (kind !== 'silent') drip = setInterval(() => socket.writable && socket.write(kind === 'body' ? '1' : 'a'), 1000);
  });
  socket.on('error', () => undefined);
  socket.on('data', () => undefined);
  const closed = new Promise<number>((resolve) =>
    socket.once('close', () => {
      clearInterval(drip);
      resolve(performance.now() - start);
    }),
  );
  return { opened, closed, socket };
}

describe('slow clients (issue 32 item 7)', () => {
  it('500 slow connections do not keep a door from syncing nor GET /multipleusers from answering, and each is closed after its timeout', async () => {
    const kinds: Kind[] = ['headers', 'body', 'silent'];
    const lifetimes: Record<Kind, number[]> = { headers: [], body: [], silent: [] };
    const pending = new Set<Promise<number>>();
    let keepUp = true;
    const keep = (kind: Kind): Promise<void> => {
      const client = slowClient(kind);
      const tracked = client.closed.then((ms) => {
        lifetimes[kind].push(ms);
        pending.delete(tracked);
        if (keepUp) void keep(kind); // replaced at once: 500 stay open until the door's calls are done
        return ms;
      });
      pending.add(tracked);
      return client.opened;
    };
    await Promise.all(Array.from({ length: 500 }, (_, i) => keep(kinds[i % 3]!)));
    expect(pending.size).toBe(500);

    const dir = join(tmp.path, 'agent');
    mkdirSync(dir);
    writeFileSync(join(dir, 'api-key'), `${doorKey}\n`);
    const agent = writeConfig(dir, {
      id: 'slow',
      access: '{ groups: [Staff] }',
      extra: `service: { baseUrl: "http://127.0.0.1:${port}", apiKeyFile: ${dir}/api-key, timeoutSeconds: 20, startDelaySeconds: 0 }`,
    });
    const [synced, list] = await Promise.all([
      runCliAsync(['sync', '--config', agent]),
      fetch(`http://127.0.0.1:${port}/multipleusers`, { headers: { authorization: `Bearer ${adminKey}` } }).then(async (r) => ({
        status: r.status,
        users: ((await r.json()) as unknown[]).length,
      })),
    ]);
    // Still 500 slow connections at the end of the door's calls (each closed one was replaced).
    expect(pending.size).toBe(500);
    keepUp = false;
    expect(synced.status, synced.stderr).toBe(0);
    expect(list).toEqual({ status: 200, users: 20 });
    expect(synced.stdout).toMatch(/^synced from .* rows written/);

    // Every slow connection closed by the service within its timeout plus a generous margin.
    const deadline = sleep(TIMEOUT_S * 1000 + 12_000);
    await Promise.race([Promise.all([...pending]), deadline]);
    expect(pending.size, 'slow connections the service still holds').toBe(0);
    for (const kind of kinds) {
      const times = lifetimes[kind];
      expect(times.length, kind).toBeGreaterThan(0);
      // Not refused at once (the connection limit is far above 500): held until the timeout, then closed within a
      // checking interval (1 s here) plus a margin for a loaded machine.
      expect(Math.min(...times), kind).toBeGreaterThan(TIMEOUT_S * 1000 - 500);
      expect(Math.max(...times), kind).toBeLessThan(TIMEOUT_S * 1000 + 10_000);
    }
  }, 120_000);

  it('the defaults are those docs/reference-service.md states, and reach the HTTP server', async () => {
    const parsed = parseServiceConfig('server: {}\n', 'service.yaml').server;
    const { headersTimeoutSeconds, requestTimeoutSeconds, keepAliveTimeoutSeconds, maxConnections } = parsed;
    expect({ headersTimeoutSeconds, requestTimeoutSeconds, keepAliveTimeoutSeconds, maxConnections }).toEqual(DEFAULT_HTTP_LIMITS);
    const docs = readFileSync(join(ROOT, 'docs/reference-service.md'), 'utf8');
    for (const [key, value] of Object.entries(DEFAULT_HTTP_LIMITS)) {
      expect(docs).toMatch(new RegExp(`\\| \`server\\.${key}\` \\| ${value} \\|`));
    }
    // A client sending one byte a second is closed within about a minute: the request timeout plus one check.
    expect(DEFAULT_HTTP_LIMITS.requestTimeoutSeconds * 1000 + checkingIntervalMs(DEFAULT_HTTP_LIMITS)).toBe(65_000);
    expect(docs).toContain('between 60 and 65 s');

    const { db } = await newServiceDb(tmp.path, 'defaults');
    const app = testService(db, { resources: [] });
    const server = app.server;
    expect([server.headersTimeout, server.requestTimeout, server.keepAliveTimeout, server.timeout, server.maxConnections]).toEqual([
      30_000, 60_000, 10_000, 61_000, 1000,
    ]);
    await app.close();
    await db.close();
  });

  it('connections past server.maxConnections are closed as they arrive, and the refusal is logged', async () => {
    const { db } = await newServiceDb(tmp.path, 'limit');
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const app = testService(db, { logger, resources: [], http: { maxConnections: 16 } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port: limitPort } = app.server.address() as { port: number };
    const clients = Array.from({ length: 20 }, () => {
      const socket = connect(limitPort, '127.0.0.1');
      socket.on('error', () => undefined);
      const start = performance.now();
      return { socket, closed: new Promise<number>((r) => socket.once('close', () => r(performance.now() - start))) };
    });
    const refused = await Promise.race([Promise.all(clients.slice(16).map((c) => c.closed)), sleep(10_000).then(() => null)]);
    expect(refused, 'the 4 connections past the limit are closed').not.toBeNull();
    const stillOpen = clients.slice(0, 16).filter((c) => !c.socket.destroyed && c.socket.readyState === 'open');
    expect(stillOpen).toHaveLength(16);
    expect(lines.join('')).toContain('connections refused: server.maxConnections reached');
    for (const c of clients) c.socket.destroy();
    await app.close();
    await db.close();
  });
});
