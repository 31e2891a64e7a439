import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { brotliCompressSync, constants as zlibConstants, createGzip, gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { ServiceClient, ServiceError } from '../../src/sync/serviceClient.js';
import { syncOnce } from '../../src/sync/sync.js';
import { runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { dumpCache } from '../support/db.js';
import { freePort } from '../support/net.js';
import { holdThreadPool } from '../support/threadPool.js';

// Issue 28, the agent's side: compressed answers (gzip, brotli) decompressed as they stream, bodies that do not
// decompress or decompress past the limit (a zip bomb), an ETag that contradicts its body, 503 + Retry-After,
// and what `door-agent status` says of the last sync. Against a real HTTP server on the loopback and real cache
// files; the CLI where an operator would be, syncOnce in-process where a limit must be made small.

const tmp = tempDir('door-agent-sync-compression-');
afterAll(tmp.cleanup);
let n = 0;

type Coding = 'identity' | 'gzip' | 'br';
interface Answer {
  status?: number;
  body?: Buffer | string;
  headers?: Record<string, string>;
}
type Handler = (url: URL, req: IncomingMessage, res: ServerResponse) => Answer | 'handled';

/** The service's side: answers as the test scripts them, every request recorded with its headers and time. */
class LoopbackService {
  requests: Array<{ path: string; since: string | null; headers: IncomingHttpHeaders; at: number }> = [];
  handler: Handler = () => ({ status: 404, body: '{"error":"no"}' });
  port = 0;
  private server: Server | null = null;

  async start(): Promise<void> {
    this.port = await freePort();
    this.server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      this.requests.push({ path: url.pathname, since: url.searchParams.get('since'), headers: req.headers, at: performance.now() });
      const answer = this.handler(url, req, res);
      if (answer === 'handled') return;
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body ?? '');
    });
    await new Promise<void>((r) => this.server!.listen(this.port, '127.0.0.1', () => r()));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

const H = 'c0ffee'.padEnd(32, '0');
const tagOf = (revision: number) => revision.toString(16).padStart(16, '0');
const etagOf = (revision: number) => `"dir-${revision}-${H}-${tagOf(revision)}"`;
const item = (id: number, status = 'ACTIVE') => ({ email_id: id, ad_status: status, groups: [['Staff']], user_tag: 'USER', email: `user${id}@example.org` });
const detail = (id: number) => ({ policies: [], smartcards: [{ number: String(5_000_000 + id), label: 'badge' }] });
const ids = (count: number) => Array.from({ length: count }, (_, i) => i + 1);

function fullDirectory(revision: number, users: number[], suspended: number[] = []) {
  return {
    revision,
    full: true,
    history: H,
    tag: tagOf(revision),
    users: users.map((id) => item(id, suspended.includes(id) ? 'SUSPENDED' : 'ACTIVE')),
    details: Object.fromEntries(users.map((id) => [String(id), detail(id)])),
    removed: [],
  };
}

function delta(revision: number, suspended: number[], removed: number[] = []) {
  return {
    revision,
    full: false,
    history: H,
    tag: tagOf(revision),
    users: suspended.map((id) => item(id, 'SUSPENDED')),
    details: Object.fromEntries(suspended.map((id) => [String(id), detail(id)])),
    removed,
  };
}

/** A 200 answer in a coding, with an ETag (its own revision's unless told). */
function encoded(value: unknown, coding: Coding, etag?: string): Answer {
  const plain = Buffer.from(JSON.stringify(value));
  const body = coding === 'gzip' ? gzipSync(plain) : coding === 'br' ? brotliCompressSync(plain) : plain;
  const revision = (value as { revision?: number }).revision;
  return {
    body,
    headers: {
      ...(coding === 'identity' ? {} : { 'content-encoding': coding }),
      ...(etag !== undefined ? { etag } : revision !== undefined ? { etag: etagOf(revision) } : {}),
    },
  };
}

/** A door's config: `door-agent sync` must not wait for the daemon's start delay, so it is set long. */
function agentConfig(baseUrl: string, service = ''): { dir: string; config: string; cache: string } {
  const dir = join(tmp.path, `a${n++}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'api-key'), 'dak_test-key\n');
  const config = writeConfig(dir, {
    id: 'cz',
    access: '{ groups: [Staff] }',
    extra: `service: { baseUrl: "${baseUrl}", apiKeyFile: ${dir}/api-key, timeoutSeconds: 5, startDelaySeconds: 3600${service} }`,
  });
  return { dir, config, cache: join(dir, 'data', 'cache.db') };
}

function heldRevision(cache: string): number | null {
  const db = new Database(cache, { readonly: true });
  try {
    const value = db.prepare("SELECT value FROM meta WHERE key = 'directory_revision'").pluck().get() as string | undefined;
    return value === undefined ? null : (JSON.parse(value) as number);
  } finally {
    db.close();
  }
}

const check = (config: string, card: string) => JSON.parse(runCli(['check', card, '--config', config]).stdout) as { granted: boolean; reason: string | null };

interface StatusJson {
  sync: { last: { kind: string; mode: string; durationMs: number | null; wireBytes: number | null; bodyBytes: number | null; at: string } | null };
}
const statusJson = (config: string) => JSON.parse(runCli(['status', '--json', '--config', config]).stdout) as StatusJson;

describe('compressed answers, through door-agent sync', () => {
  const svc = new LoopbackService();
  beforeAll(() => svc.start());
  afterAll(() => svc.stop());

  it('asks for gzip and br; a gzip full answer and a brotli delta apply exactly as plain ones; status shows full or delta, duration and both sizes', async () => {
    const users = ids(300);
    const full = fullDirectory(7, users);
    const change = delta(8, [3], [10]);
    let coding: Coding = 'gzip';
    svc.handler = (url) => {
      if (url.pathname !== '/directory') return { status: 404, body: '{"error":"no"}' };
      if (url.searchParams.get('since') === '8') return { status: 304, headers: { etag: etagOf(8) } };
      return url.searchParams.get('since') === '7' ? encoded(change, 'br') : encoded(full, coding);
    };
    const a = agentConfig(svc.url);
    svc.requests = [];
    const started = performance.now();
    const first = await runCliAsync(['sync', '--config', a.config]);
    expect(first.status, first.stderr).toBe(0);
    // startDelaySeconds (an hour here) is the daemon's: the command syncs at once.
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(svc.requests.map((r) => r.headers['accept-encoding'])).toEqual(['gzip, br']);
    expect(check(a.config, '5000003')).toMatchObject({ granted: true });

    // The same answer uncompressed gives the very same cache.
    const plain = agentConfig(svc.url);
    coding = 'identity';
    expect((await runCliAsync(['sync', '--config', plain.config])).status).toBe(0);
    expect(dumpCache(plain.cache)).toBe(dumpCache(a.cache));

    const plainBytes = Buffer.byteLength(JSON.stringify(full));
    let last = statusJson(a.config).sync.last!;
    expect(last).toMatchObject({ kind: 'full', mode: 'directory_full', wireBytes: gzipSync(JSON.stringify(full)).length, bodyBytes: plainBytes });
    expect(last.wireBytes! * 5).toBeLessThan(last.bodyBytes!);
    expect(last.durationMs).toBeGreaterThanOrEqual(0);
    expect(statusJson(plain.config).sync.last).toMatchObject({ kind: 'full', wireBytes: plainBytes, bodyBytes: plainBytes });
    let text = runCli(['status', '--config', a.config]).stdout;
    expect(text).toMatch(/\nlast sync: full \(GET \/directory\), \d+\.\d s, \d+\.\d KiB on the wire \(\d+\.\d KiB decompressed\)\n/);
    expect(runCli(['status', '--config', plain.config]).stdout).toMatch(
      /\nlast sync: full \(GET \/directory\), \d+\.\d s, \d+\.\d KiB on the wire \(not compressed\)\n/,
    );

    svc.requests = [];
    const second = await runCliAsync(['sync', '--config', a.config]);
    expect(second.status, second.stderr).toBe(0);
    expect(svc.requests.map((r) => [r.since, r.headers['accept-encoding']])).toEqual([['7', 'gzip, br']]);
    expect(check(a.config, '5000003').reason).toBe('user_suspended');
    expect(check(a.config, '5000010').reason).toBe('unknown_credential');
    expect(heldRevision(a.cache)).toBe(8);
    last = statusJson(a.config).sync.last!;
    expect(last).toMatchObject({ kind: 'delta', mode: 'directory_delta', wireBytes: brotliCompressSync(JSON.stringify(change)).length });
    expect(last.bodyBytes).toBe(Buffer.byteLength(JSON.stringify(change)));
    text = runCli(['status', '--config', a.config]).stdout;
    expect(text).toContain('last sync: delta (GET /directory, the changes since the revision held), ');

    expect((await runCliAsync(['sync', '--config', a.config])).status).toBe(0);
    expect(statusJson(a.config).sync.last).toMatchObject({ kind: 'unchanged', wireBytes: 0, bodyBytes: 0 });
    expect(runCli(['status', '--config', a.config]).stdout).toContain('last sync: unchanged (GET /directory: 304, nothing new), ');
  }, 90_000); // seven CLI runs, each a process start and a sync thread: generous on a loaded machine

  it.each([
    [
      'gzip that is not gzip',
      'gzip',
      () => Buffer.from('{"revision":8, not compressed at all'),
      'it does not decompress as gzip (Content-Encoding: gzip): incorrect header check',
    ],
    [
      'brotli that is not brotli',
      'br',
      () => Buffer.from('{"revision":8, not compressed at all'),
      'it does not decompress as brotli (Content-Encoding: br): Decompression failed',
    ],
    [
      'a gzip body cut short',
      'gzip',
      () => {
        const whole = gzipSync(JSON.stringify(delta(8, [3])));
        return whole.subarray(0, whole.length - 12);
      },
      'it does not decompress as gzip (Content-Encoding: gzip): unexpected end of file',
    ],
    [
      'a coding the agent did not ask for',
      'zstd',
      () => Buffer.from('(zstd)'),
      'its Content-Encoding is "zstd", which the agent did not ask for (Accept-Encoding: gzip, br)',
    ],
  ])('%s: refused with a clear error, the cache and the revision held unchanged', async (_what, coding, body, message) => {
    const a = agentConfig(svc.url);
    svc.handler = () => encoded(fullDirectory(7, ids(20)), 'gzip');
    expect((await runCliAsync(['sync', '--config', a.config])).status).toBe(0);
    const before = dumpCache(a.cache);
    svc.handler = () => ({ body: body(), headers: { 'content-encoding': coding, etag: etagOf(8) } });
    const r = await runCliAsync(['sync', '--config', a.config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`sync failed, the cache is unchanged: GET /directory: the answer is refused: ${message}`);
    expect(dumpCache(a.cache)).toBe(before);
    expect(heldRevision(a.cache)).toBe(7);
    expect(runCli(['status', '--config', a.config]).stdout).toContain(`last error: GET /directory: the answer is refused: ${message}`);
  });

  it('an ETag that contradicts its body leads to a full sync: the delta is not applied, everything is asked for and replaces the cache', async () => {
    const a = agentConfig(svc.url);
    svc.handler = () => encoded(fullDirectory(7, ids(10)), 'gzip');
    expect((await runCliAsync(['sync', '--config', a.config])).status).toBe(0);

    // Asked for the changes since 7: a delta of 8 whose ETag says 9 (stored bytes out of step, a confused cache).
    // The full answer is revision 9: user 3 suspended, user 10 gone; the bad delta would have suspended user 4.
    svc.handler = (url) => (url.searchParams.has('since') ? encoded(delta(8, [4]), 'gzip', etagOf(9)) : encoded(fullDirectory(9, ids(9), [3]), 'gzip'));
    svc.requests = [];
    let r = await runCliAsync(['sync', '--config', a.config]);
    expect(r.status, r.stderr).toBe(0);
    expect(svc.requests.map((q) => q.since)).toEqual(['7', null]);
    expect(svc.requests[1]!.headers['if-none-match']).toBeUndefined();
    expect(heldRevision(a.cache)).toBe(9);
    expect([check(a.config, '5000003').reason, check(a.config, '5000004').reason, check(a.config, '5000010').reason]).toEqual([
      'user_suspended',
      null,
      'unknown_credential',
    ]);
    expect(statusJson(a.config).sync.last).toMatchObject({ kind: 'full' });

    // A 304 whose ETag names another version than the one held: "unchanged" from where? Everything instead.
    svc.handler = (url) => (url.searchParams.has('since') ? { status: 304, headers: { etag: etagOf(11) } } : encoded(fullDirectory(11, ids(9), [3, 5]), 'br'));
    svc.requests = [];
    r = await runCliAsync(['sync', '--config', a.config]);
    expect(r.status, r.stderr).toBe(0);
    expect(svc.requests.map((q) => q.since)).toEqual(['9', null]);
    expect([heldRevision(a.cache), check(a.config, '5000005').reason]).toEqual([11, 'user_suspended']);

    // A full answer names its own version and replaces everything: applied whatever its ETag says, in one request.
    svc.handler = () => encoded(fullDirectory(12, ids(9)), 'gzip', etagOf(13));
    svc.requests = [];
    expect((await runCliAsync(['sync', '--config', a.config])).status).toBe(0);
    expect(svc.requests).toHaveLength(1);
    expect([heldRevision(a.cache), check(a.config, '5000005').reason]).toEqual([12, null]);
  });
});

describe('in-process, with a small limit: a zip bomb, 503 and Retry-After', () => {
  const svc = new LoopbackService();
  beforeAll(() => svc.start());
  afterAll(() => svc.stop());
  const LIMIT = 4 << 20;

  function door() {
    const dir = join(tmp.path, `p${n++}`);
    mkdirSync(dir);
    const db = openDatabase(join(dir, 'cache.db'));
    const client = new ServiceClient({ baseUrl: svc.url, apiKey: 'dak_test-key', apiKeyIn: 'header', timeoutMs: 5000, spoolDir: dir, maxStreamedBytes: LIMIT });
    return { dir, db, client, cache: join(dir, 'cache.db'), sync: () => syncOnce(db, client, { concurrency: 4, maxRemovalRatio: 0.5, now: () => Date.now() }) };
  }

  /**
   * A client with `timeoutMs`, and the service's answer: 16 MB of gzip (more than the loopback's buffers hold), all
   * written at once, the thread pool that decompresses it held for `holdMs` as it arrives. `released()` resolves
   * once the pool is free again.
   */
  function answerWithPoolHeld(timeoutMs: number, holdMs: number) {
    const dir = join(tmp.path, `p${n++}`);
    mkdirSync(dir);
    const client = new ServiceClient({ baseUrl: svc.url, apiKey: 'dak_test-key', apiKeyIn: 'header', timeoutMs, spoolDir: dir, maxStreamedBytes: 64 << 20 });
    const plain = randomBytes(16 << 20);
    const body = gzipSync(plain, { level: 1 });
    let held: Promise<void> = Promise.resolve();
    svc.handler = () => {
      held = holdThreadPool(dir, holdMs);
      return { body, headers: { 'content-encoding': 'gzip' } };
    };
    return { client, plain, body, released: () => held };
  }

  it("the timeout is the service's silence, not the agent's own pace: a decompression held up longer than the timeout is waited for", async () => {
    // The thread pool that decompresses is held for 1.5 s as the answer arrives: the agent takes no more bytes until
    // the ones it has are decompressed, so the rest waits in the service's socket. That is the agent's pace, not a
    // silent service.
    const { client, plain, body, released } = answerWithPoolHeld(500, 1500);
    try {
      const started = performance.now();
      const answer = await client.directory(null);
      expect(answer.kind).toBe('answer');
      if (answer.kind === 'answer') {
        expect(answer.body.size).toBe(plain.length);
        answer.body.dispose();
      }
      expect(client.traffic.wireBytes).toBe(body.length);
      expect(performance.now() - started).toBeGreaterThan(1400); // it did wait for the pool, past the timeout
    } finally {
      await released();
    }
  }, 30_000);

  it('a decompression that never finishes (its thread pool stuck) ends the request after ten times the timeout, saying so', async () => {
    // The same held pool, for far longer than the cap: 200 ms of timeout allows 2 s in one chunk's decompression.
    const { client, released } = answerWithPoolHeld(200, 5000);
    try {
      const started = performance.now();
      const failure = await client.directory(null).then(
        () => null,
        (err: unknown) => err,
      );
      const waited = performance.now() - started;
      expect(String(failure)).toMatch(
        /GET \/directory: the agent could not decompress the answer from .*: one chunk took over 2 s \(10 × service\.timeoutSeconds/,
      );
      expect(waited).toBeGreaterThan(1900); // the cap, not the plain timeout
      expect(waited).toBeLessThan(4500); // not the pool's release (5 s)
    } finally {
      await released();
    }
  }, 30_000);

  it('a gzip stream that never ends is stopped as it decompresses, at the limit: the connection closed, nothing held, the cache unchanged', async () => {
    const d = door();
    try {
      svc.handler = () => encoded(fullDirectory(7, ids(20)), 'gzip');
      await d.sync();
      const before = dumpCache(d.cache);
      let produced = 0;
      let closed = false;
      svc.handler = (_url, _req, res) => {
        // {"revision":8,"full":true,"users":[ and then spaces, forever: 1 MiB of them is ~1 KiB of gzip.
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', etag: etagOf(8) });
        const gzip = createGzip({ level: 9 });
        gzip.on('error', () => {}); // written to after the agent hung up: expected
        gzip.pipe(res);
        const spaces = Buffer.alloc(1 << 20, 0x20);
        res.on('close', () => {
          closed = true;
          gzip.destroy();
        });
        gzip.write('{"revision":8,"full":true,"users":[');
        const more = () => {
          while (!closed && produced < 256 << 20) {
            produced += spaces.length;
            if (!gzip.write(spaces)) return void gzip.once('drain', more);
          }
          gzip.end();
        };
        more();
        return 'handled';
      };
      const err = await d.sync().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServiceError);
      expect((err as Error).message).toMatch(
        /^GET \/directory: the answer decompresses to more than 4 MiB \(Content-Encoding: gzip, \d+ bytes received\): not read$/,
      );
      const received = Number(/gzip, (\d+) bytes received/.exec((err as Error).message)![1]);
      expect(received).toBeLessThan(1 << 20); // a few KiB on the wire for 4 MiB decompressed
      await expect.poll(() => closed, { timeout: 10_000 }).toBe(true);
      expect(produced).toBeLessThan(256 << 20); // the service was cut off long before its end
      expect(dumpCache(d.cache)).toBe(before);
      expect(heldRevision(d.cache)).toBe(7);
      expect(readdirSync(d.dir).filter((f) => f.includes('.sync-answer-'))).toEqual([]);
    } finally {
      d.db.close();
    }
  });

  it('a brotli bomb (a few bytes for 64 MiB) and a plain answer past the limit: refused the same way', async () => {
    const d = door();
    try {
      svc.handler = () => encoded(fullDirectory(7, ids(20)), 'gzip');
      await d.sync();
      const before = dumpCache(d.cache);
      const bomb = brotliCompressSync(Buffer.concat([Buffer.from('{"revision":8,"full":true,"users":['), Buffer.alloc(64 << 20, 0x20)]), {
        params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 5 },
      });
      expect(bomb.length).toBeLessThan(64 << 10);
      svc.handler = () => ({ body: bomb, headers: { 'content-encoding': 'br' } });
      await expect(d.sync()).rejects.toThrow(
        /^GET \/directory: the answer decompresses to more than 4 MiB \(Content-Encoding: br, \d+ bytes received\): not read$/,
      );
      svc.handler = () => ({ body: Buffer.alloc(LIMIT + 1, 0x20) });
      await expect(d.sync()).rejects.toThrow('GET /directory: the answer is larger than 4 MiB: not read');
      expect(dumpCache(d.cache)).toBe(before);
    } finally {
      d.db.close();
    }
  });

  it("a 503 or 429 with Retry-After (seconds, or an HTTP-date against the answer's Date) is an error that carries it; without one, none", async () => {
    const d = door();
    try {
      svc.handler = () => ({ status: 503, body: '{"error":"busy, come back later"}', headers: { 'retry-after': '120' } });
      let err = (await d.sync().catch((e: unknown) => e)) as ServiceError;
      expect(err).toBeInstanceOf(ServiceError);
      expect([err.status, err.retryAfterMs, err.message]).toEqual([503, 120_000, 'GET /directory: HTTP 503: busy, come back later (Retry-After: 120 s)']);
      // The service's clock says 10:00:00 and asks for 10:00:45: 45 s, whatever this machine's clock says.
      svc.handler = () => ({
        status: 429,
        body: gzipSync('{"error":"slow down"}'),
        headers: { 'retry-after': 'Thu, 01 Jan 2026 10:00:45 GMT', date: 'Thu, 01 Jan 2026 10:00:00 GMT', 'content-encoding': 'gzip' },
      });
      err = (await d.sync().catch((e: unknown) => e)) as ServiceError;
      expect([err.status, err.retryAfterMs, err.message]).toEqual([429, 45_000, 'GET /directory: HTTP 429: slow down (Retry-After: 45 s)']);
      // A refusal whose body does not decompress still says its status and Retry-After.
      svc.handler = () => ({ status: 503, body: 'not gzip', headers: { 'retry-after': '5', 'content-encoding': 'gzip' } });
      err = (await d.sync().catch((e: unknown) => e)) as ServiceError;
      expect([err.status, err.retryAfterMs]).toEqual([503, 5000]);
      svc.handler = () => ({ status: 503, body: '{"error":"down"}' });
      err = (await d.sync().catch((e: unknown) => e)) as ServiceError;
      expect([err.status, err.retryAfterMs]).toEqual([503, null]);
      svc.handler = () => ({ status: 500, body: '{"error":"oops"}', headers: { 'retry-after': '5' } });
      err = (await d.sync().catch((e: unknown) => e)) as ServiceError;
      expect([err.status, err.retryAfterMs]).toEqual([500, null]);
    } finally {
      d.db.close();
    }
  });
});
