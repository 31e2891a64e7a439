import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli, tempDir, writeConfig } from '../support/cli.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';
import { Mosquitto } from '../support/mosquitto.js';
import { Operator } from '../support/operator.js';
import { PtyPair } from '../support/socat.js';
import { freePort } from '../support/net.js';
import { sleep } from '../support/wait.js';

// Issue 28 item 2, in the daemon: the first sync waits its random start delay without delaying readiness or the
// door's decisions from the cache, a pushed revision waits with it, a request over MQTT does not; a 503 with
// Retry-After is not tried again before it. The real `door-agent run`, a real broker and service on the loopback.

const tmp = tempDir('door-agent-sync-start-');
afterAll(tmp.cleanup);
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});
let n = 0;

const H = 'd00d'.padEnd(32, '0');
const directory = {
  revision: 5,
  full: true,
  history: H,
  tag: '5'.padStart(16, '0'),
  users: [{ email_id: 1, ad_status: 'ACTIVE', groups: [['Staff']], user_tag: 'USER', email: 'a@example.org' }],
  details: { '1': { policies: [], smartcards: [{ number: '7000001', label: 'badge' }] } },
  removed: [],
};

/** A GET /directory service: each request's time; `answer` says what the next request gets. */
interface Answer {
  status: number;
  headers?: Record<string, string>;
  body: string;
}

async function service(answer: () => Answer) {
  const requests: number[] = [];
  const port = await freePort();
  const server: Server = createServer((req, res) => {
    if (!req.url?.startsWith('/directory')) return void res.writeHead(404).end('{"error":"no"}');
    requests.push(performance.now());
    const a = answer();
    res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
    res.end(a.body);
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  return { url: `http://127.0.0.1:${port}`, requests };
}

function door(serviceUrl: string, service: string, extra = ''): { dir: string; config: string } {
  const dir = join(tmp.path, `d${n++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'api-key'), 'dak_test-key\n');
  const config = writeConfig(dir, {
    id: 'sd',
    access: '{ groups: [Staff] }',
    extra: `service: { baseUrl: "${serviceUrl}", apiKeyFile: ${dir}/api-key, timeoutSeconds: 5${service} }\n${extra}`,
    doorExtra: `    unlockSeconds: 1\n    reader: { path: ${dir}/reader }\n`,
  });
  return { dir, config };
}

function startDaemon(config: string): Daemon {
  const daemon = new Daemon(config);
  cleanups.push(() => daemon.stop('SIGKILL'));
  return daemon;
}

describe('the first sync after start', () => {
  it('waits its start delay; readiness and decisions from the cache do not, nor a request over MQTT; a pushed revision waits with it', async () => {
    const svc = await service(() => ({ status: 200, headers: { etag: `"dir-5-${H}-${directory.tag}"` }, body: JSON.stringify(directory) }));
    const broker = new Mosquitto(join(tmp.path, `broker${n++}`));
    await broker.start();
    cleanups.push(() => broker.stop());
    const op = await Operator.connect(broker.url);
    cleanups.push(() => op.end());
    // The service's retained revision, ahead of a cache that holds none: at connect it would ask for a sync.
    await op.publish('sd/directory/revision', JSON.stringify({ revision: 5, at: new Date().toISOString(), history: H, tag: directory.tag }), {
      retain: true,
      qos: 1,
    });

    const d = door(svc.url, ', startDelaySeconds: 3600, maxRemovalRatio: 1', `mqtt: { url: "${broker.url}", topicPrefix: sd }`);
    expect(runCli(['import', 'examples/snapshot.json', '--config', d.config]).status).toBe(0);
    const pty = new PtyPair(join(d.dir, 'reader'), join(d.dir, 'terminal'));
    await pty.plugIn();
    cleanups.push(() => pty.unplug());

    const daemon = startDaemon(d.config);
    await daemon.waitForMessage('door-agent ready', 30_000);
    await daemon.waitForMessage('reader connected', 30_000);
    expect(daemon.logs.find((l) => l.msg === 'first sync after a random start delay (service.startDelaySeconds)')).toBeDefined();
    // Alice's card, from the imported cache: the door decides now, the sync an hour away at most.
    pty.write('0004213578\r\n');
    await waitUntil(() => readLevel(join(d.dir, 'gpio/gpio17/value')) === '1', 10_000, 'Alice granted from the cache');
    // The retained revision came with the connect: it waits for the first sync.
    await daemon.waitForMessage('connected to the broker', 30_000);
    await daemon.waitForMessage('sync wanted: it runs when the start delay ends', 30_000);
    await sleep(1000);
    expect(svc.requests).toEqual([]);

    // Asked to: at once.
    const from = daemon.logs.length;
    await op.publish('sd/agents/sd/sync', 'now');
    await daemon.waitForMessage('sync done', 30_000, from);
    expect(svc.requests).toHaveLength(1);
    expect(JSON.parse(runCli(['check', '7000001', '--config', d.config]).stdout)).toMatchObject({ granted: true });
  }, 120_000);
});

describe('a 503 with Retry-After', () => {
  it('is not tried again before it; then the sync goes through', async () => {
    let calls = 0;
    const svc = await service(
      (): Answer =>
        ++calls === 1
          ? { status: 503, headers: { 'retry-after': '3' }, body: '{"error":"shedding load"}' }
          : { status: 200, headers: { etag: `"dir-5-${H}-${directory.tag}"` }, body: JSON.stringify(directory) },
    );
    const d = door(svc.url, ', startDelaySeconds: 0, syncIntervalSeconds: 60');
    const daemon = startDaemon(d.config);
    const failed = await daemon.waitForMessage('sync failed; the cache is unchanged', 30_000);
    expect(failed).toMatchObject({ retryAfterMs: 3000, capped: false });
    expect(failed.retryInMs as number).toBeGreaterThanOrEqual(3000);
    await daemon.waitForMessage('sync done', 30_000);
    expect(svc.requests).toHaveLength(2);
    // Timers never fire early (a millisecond of rounding aside); late is fine on a loaded machine.
    expect(svc.requests[1]! - svc.requests[0]!).toBeGreaterThanOrEqual(2990);
    expect(JSON.parse(runCli(['check', '7000001', '--config', d.config]).stdout)).toMatchObject({ granted: true });
  }, 90_000);
});
