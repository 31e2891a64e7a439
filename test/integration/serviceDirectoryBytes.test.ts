import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServiceConfig } from '../../src/config/load.js';
import type { DirectoryVariant } from '../../src/service/directoryBytes.js';
import { DEFAULT_LOAD_LIMITS } from '../../src/service/loadGate.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { UserStore } from '../../src/service/users.js';
import { tempDir } from '../support/cli.js';
import { rawGet, type RawAnswer } from '../support/net.js';
import { listeningService } from '../support/serviceApp.js';

// Issue 28 item 1 (and the service half of items 2 and 6): GET /directory answered from bytes built once per revision
// and variant, gzip or brotli when the client accepts it, the builds shared by concurrent requests, and shed with
// 503 + Retry-After past the configured bounds. The real service on a loopback port, a real SQLite file, clients
// that read the raw bytes (Node's own http client: it sends no Accept-Encoding it is not given, decompresses nothing).

const USERS = 2500; // three batches of the body builder; 1.4 MB of JSON

const tmp = tempDir('door-agent-directory-bytes-');

/** USERS users in the Staff group, each with a card and a PIN; written before the service opens the database. */
async function seed(db: SqlDb): Promise<void> {
  const users = new UserStore(db);
  await db.transaction(async () => {
    await db.run("INSERT INTO groups (type, name) VALUES ('users', 'Staff')");
    for (let i = 0; i < USERS; i++) {
      const { user } = await users.ensure(`user${i}@example.org`, 'USER', Date.now());
      await users.replaceSmartcards(user.email_id, [
        { number: String(4_000_000 + 2 * i), label: 'badge' },
        { number: String(1000 + i), label: 'PIN' },
      ]);
      await db.run('INSERT INTO group_members (group_id, member_id) VALUES (1, ?)', [user.email_id]);
    }
  });
}

interface Answer {
  revision: number;
  history: string;
  tag: string | null;
  full: boolean;
  users: Array<{ email: string }>;
  details: Record<string, { smartcards: Array<{ number: string; label: string | null }> }>;
  removed: number[];
}

/** The answer's identity bytes, whatever its Content-Encoding. */
function decoded(answer: RawAnswer): Buffer {
  switch (answer.headers['content-encoding']) {
    case undefined:
      return answer.body;
    case 'gzip':
      return gunzipSync(answer.body);
    case 'br':
      return brotliDecompressSync(answer.body);
    default:
      throw new Error(`unexpected Content-Encoding ${answer.headers['content-encoding']}`);
  }
}

const parsed = (answer: RawAnswer) => JSON.parse(decoded(answer).toString('utf8')) as Answer;
const etagOf = (a: Answer) => `"dir-${a.revision}-${a.history}-${a.tag}"`;

async function until(what: string, predicate: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`not within 20 s: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

afterAll(() => tmp.cleanup());

describe('GET /directory from stored bytes', () => {
  const builds: DirectoryVariant[] = [];
  let service: Awaited<ReturnType<typeof listeningService>>;
  const get = (path: string, headers: Record<string, string> = {}, key: string = service.keys.DOOR) =>
    rawGet(service.port, path, { authorization: `Bearer ${key}`, ...headers });
  const fullBuilds = (masked = false) => builds.filter((b) => b.full && b.masked === masked).length;
  const invite = async (email: string) => {
    const res = await fetch(`http://127.0.0.1:${service.port}/invites`, {
      method: 'POST',
      headers: { authorization: `Bearer ${service.keys.SUPER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ emails: [email], send_email: false }),
    });
    expect(res.status, await res.text()).toBe(200);
  };

  beforeAll(async () => {
    const file = join(tmp.path, 'service.db');
    service = await listeningService(file, { onDirectoryBuild: (variant) => void builds.push(variant) }, seed);
  });
  afterAll(async () => {
    await service.app.close();
    await service.db.close();
  });

  it('a client without Accept-Encoding gets plain JSON; gzip and brotli decompress to exactly those bytes, with the same ETag', async () => {
    const plain = await get('/directory');
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(plain.headers.vary).toBe('Accept-Encoding');
    const text = plain.body.toString('utf8');
    const answer = JSON.parse(text) as Answer;
    // The text is JSON.stringify's of the answer object, as fastify serialized it before.
    expect(JSON.stringify(answer)).toBe(text);
    expect(answer.full).toBe(true);
    expect(answer.users).toHaveLength(USERS);
    expect(Object.keys(answer.details)).toHaveLength(USERS);
    expect(answer.details[String(1)]!.smartcards).toEqual([
      { number: '4000000', label: 'badge' },
      { number: '1000', label: 'PIN' },
    ]);
    expect(plain.headers.etag).toBe(etagOf(answer));

    for (const [accept, coding] of [
      ['gzip', 'gzip'],
      ['br', 'br'],
      ['gzip, deflate', 'gzip'], // what Node's fetch (the agents) sends
      ['gzip;q=0.5, br;q=0.8', 'br'],
      ['br;q=0, gzip', 'gzip'],
      ['*', 'br'],
    ] as const) {
      const compressed = await get('/directory', { 'accept-encoding': accept });
      expect(compressed.status, accept).toBe(200);
      expect(compressed.headers['content-encoding'], accept).toBe(coding);
      expect(compressed.headers.vary).toBe('Accept-Encoding');
      expect(compressed.headers.etag).toBe(plain.headers.etag);
      // The first to ask for a coding reads it as it is compressed (chunked); the others, its length and bytes.
      if (compressed.headers['content-length'] !== undefined) expect(compressed.headers['content-length']).toBe(String(compressed.body.length));
      expect(compressed.body.length).toBeLessThan(plain.body.length / 4);
      expect(decoded(compressed).equals(plain.body), accept).toBe(true);
    }
    // Codings it does not store, or refused ones: identity.
    for (const accept of ['compress, zstd', 'gzip;q=0', 'br;q=0, gzip;q=0', 'identity', 'gzip;q=nonsense', ',;,']) {
      const answered = await get('/directory', { 'accept-encoding': accept });
      expect(answered.headers['content-encoding'], accept).toBeUndefined();
      expect(answered.body.equals(plain.body), accept).toBe(true);
    }
    const again = await get('/directory', { 'accept-encoding': 'gzip' });
    expect(again.headers['content-length']).toBe(String(again.body.length));
    // One build for all of these: the full answer, PINs in clear, of this revision.
    expect(fullBuilds()).toBe(1);
  });

  it('the ETag names the revision; If-None-Match with it answers 304, a delta request and a full one alike', async () => {
    const current = parsed(await get('/directory', { 'accept-encoding': 'gzip' }));
    const since = `/directory?since=${current.revision}&history=${current.history}&tag=${current.tag}`;
    const same = await get(since, { 'if-none-match': etagOf(current) });
    expect(same.status).toBe(304);
    expect(same.headers.etag).toBe(etagOf(current));
    expect(same.body.length).toBe(0);
    const delta = await get(since);
    expect(delta.status).toBe(200);
    expect(parsed(delta)).toMatchObject({ revision: current.revision, full: false, users: [], removed: [] });
    expect((await get('/directory', { 'if-none-match': etagOf(current) })).status).toBe(304);
  });

  it('a change moves the revision and the bytes are built again, holding it', async () => {
    const before = parsed(await get('/directory'));
    const buildsBefore = fullBuilds();
    await invite('newcomer@example.org');
    const after = await get('/directory', { 'accept-encoding': 'gzip' });
    const answer = parsed(after);
    expect(answer.revision).toBe(before.revision + 1);
    expect(after.headers.etag).toBe(etagOf(answer));
    expect(after.headers.etag).not.toBe(etagOf(before));
    expect(answer.users).toHaveLength(USERS + 1);
    expect(answer.users.some((u) => u.email === 'newcomer@example.org')).toBe(true);
    expect(before.users.some((u) => u.email === 'newcomer@example.org')).toBe(false);
    expect(fullBuilds()).toBe(buildsBefore + 1);
    // The delta from the revision before holds the newcomer alone.
    const delta = parsed(await get(`/directory?since=${before.revision}&history=${before.history}&tag=${before.tag}`));
    expect(delta.full).toBe(false);
    expect(delta.users.map((u) => u.email)).toEqual(['newcomer@example.org']);
  });

  it('concurrent requests for one revision share one build (and one compression per coding)', async () => {
    const before = parsed(await get('/directory'));
    await invite('concurrent@example.org');
    const buildsBefore = builds.length;
    const accepts = ['gzip', 'br', '', 'gzip, deflate'];
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) => get('/directory', accepts[i % accepts.length] ? { 'accept-encoding': accepts[i % accepts.length]! } : {})),
    );
    const identity = decoded(answers[2]!);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(decoded(answer).equals(identity)).toBe(true);
    }
    expect(JSON.parse(identity.toString('utf8'))).toMatchObject({ revision: before.revision + 1, full: true });
    // And 24 doors asking for the same delta: one build of it.
    const since = `/directory?since=${before.revision}&history=${before.history}&tag=${before.tag}`;
    const deltas = await Promise.all(Array.from({ length: 24 }, () => get(since, { 'accept-encoding': 'gzip' })));
    for (const delta of deltas) expect(parsed(delta).users.map((u) => u.email)).toEqual(['concurrent@example.org']);
    expect(builds.slice(buildsBefore).map((b) => (b.full ? 'full' : `since ${b.since}`))).toEqual(['full', `since ${before.revision}`]);
    const status = (await (await fetch(`http://127.0.0.1:${service.port}/status`, { headers: { authorization: `Bearer ${service.keys.DOOR}` } })).json()) as {
      directory: { revision: number; stored: { revision: number; full_bytes: { identity: number; gzip: number | null; br: number | null } } };
    };
    expect(status.directory.stored.revision).toBe(before.revision + 1);
    expect(status.directory.stored.full_bytes.identity).toBe(identity.length);
    expect(status.directory.stored.full_bytes.gzip).toBeGreaterThan(0);
    expect(status.directory.stored.full_bytes.br).toBeGreaterThan(0);
  });

  it('a key that may not read PINs gets them masked, from a build of its own that is not kept', async () => {
    const masked = parsed(await get('/directory', { 'accept-encoding': 'gzip' }, service.keys.REGULAR));
    expect(masked.details[String(1)]!.smartcards).toEqual([
      { number: '4000000', label: 'badge' },
      { number: '****', label: 'PIN' },
    ]);
    const clear = parsed(await get('/directory', {}, service.keys.DOOR));
    expect(clear.details[String(1)]!.smartcards[1]!.number).toBe('1000');
    const maskedBuilds = fullBuilds(true);
    await get('/directory', {}, service.keys.REGULAR);
    expect(fullBuilds(true)).toBe(maskedBuilds + 1);
  });
});

describe('GET /directory sheds load past its bounds', () => {
  const builds: DirectoryVariant[] = [];
  let hold: Promise<void> | null = null;
  let service: Awaited<ReturnType<typeof listeningService>>;
  const get = (path: string, headers: Record<string, string> = {}) => rawGet(service.port, path, { authorization: `Bearer ${service.keys.DOOR}`, ...headers });
  const status = async () =>
    JSON.parse((await get('/status')).body.toString('utf8')) as {
      directory: { revision: number; history: string; tag: string };
      in_flight: { directory_answers: number; directory_builds: number };
      refused: Record<string, number>;
      limits: Record<string, number>;
    };

  beforeAll(async () => {
    const file = join(tmp.path, 'shedding.db');
    service = await listeningService(
      file,
      {
        loadLimits: { maxDirectoryAnswers: 2, maxDirectoryBuilds: 1, retryAfterSeconds: 1 },
        onDirectoryBuild: (variant) => {
          builds.push(variant);
          return hold ?? undefined;
        },
      },
      seed,
    );
  });
  afterAll(async () => {
    await service.app.close();
    await service.db.close();
  });

  it('503 with Retry-After past maxDirectoryAnswers and maxDirectoryBuilds, counted in GET /status; the answers in flight complete', async () => {
    let release!: () => void;
    hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Two full answers waiting for one build held open: both places taken.
    const first = get('/directory');
    const second = get('/directory');
    await until('two full answers in flight', async () => (await status()).in_flight.directory_answers === 2);
    expect((await status()).in_flight.directory_builds).toBe(1);

    const third = await get('/directory', { 'accept-encoding': 'gzip' });
    expect(third.status).toBe(503);
    const retryAfter = Number(third.headers['retry-after']);
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 2).toBe(true);
    const { error } = JSON.parse(third.body.toString('utf8')) as { error: string };
    expect(error).toContain('server.maxDirectoryAnswers');
    expect(error).toContain(`try again in ${retryAfter} s`);

    // A delta needs a build of its own, and the one place for builds is taken.
    const { revision, history, tag } = (await status()).directory;
    const delta = await get(`/directory?since=${revision}&history=${history}&tag=${tag}`);
    expect(delta.status).toBe(503);
    expect(Number(delta.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(delta.body.toString('utf8')).error).toContain('server.maxDirectoryBuilds');

    const counted = await status();
    expect(counted.refused).toMatchObject({ directory_answers: 1, directory_builds: 1 });
    expect(counted.limits).toMatchObject({ max_directory_answers: 2, max_directory_builds: 1, retry_after_seconds: 1 });

    hold = null;
    release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.status).toBe(200);
    expect(b.body.equals(a.body)).toBe(true);
    expect((JSON.parse(a.body.toString('utf8')) as Answer).users).toHaveLength(USERS);
    expect(builds.filter((v) => v.full)).toHaveLength(1);
    // The places are free again: the next requests are answered.
    await until('no answer in flight', async () => (await status()).in_flight.directory_answers === 0);
    expect((await get('/directory', { 'accept-encoding': 'gzip' })).status).toBe(200);
    expect((await get(`/directory?since=${revision}&history=${history}&tag=${tag}`)).status).toBe(200);
  });
});

describe('the bounds in the configuration', () => {
  it('default to the service defaults; a bound of 0 is refused, naming the key', () => {
    const { maxDirectoryAnswers, maxDirectoryBuilds, retryAfterSeconds } = parseServiceConfig('server: {}\n', 'service.yaml').server;
    expect({ maxDirectoryAnswers, maxDirectoryBuilds, retryAfterSeconds }).toEqual(DEFAULT_LOAD_LIMITS);
    expect(() => parseServiceConfig('server: { maxDirectoryBuilds: 0 }\n', 'service.yaml')).toThrow(/server\.maxDirectoryBuilds/);
  });
});
