import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guestLinkSchema } from '../../src/api/shapes.js';
import { pinLabelSet } from '../../src/core/credentials.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { openServiceDatabase } from '../../src/service/database.js';
import { SERVICE_MIGRATIONS } from '../../src/service/migrations.js';
import { UserStore } from '../../src/service/users.js';
import { startService, type RunningService } from '../../src/service/root.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { SqliteDb } from '../../src/service/sql/sqliteDb.js';
import { CredentialCache } from '../../src/store/credentialCache.js';
import { openDatabase } from '../../src/store/database.js';
import { GuestLinkStore } from '../../src/store/guestLinkStore.js';
import { readHeldRevision, writeHeldRevision } from '../../src/store/heldRevision.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { systemClock } from '../../src/util/clock.js';
import { DOOR_UUID, runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { dumpCache } from '../support/db.js';
import { freePort } from '../support/net.js';
import { inProcessService } from '../support/serviceApp.js';
import { describeOn } from '../support/serviceDb.js';
import { exampleSnapshot, writeSnapshot } from '../support/snapshot.js';

// Card and PIN validity dates: valid_from (inclusive) and valid_until (exclusive), UTC "YYYY-MM-DD hh:mm:ss", on a
// smartcard entry of the service; stored by the service, carried by GET /user and GET /directory, synced into the
// cache and decided on: an expired card is refused with credential_expired, a future one with
// credential_not_yet_valid.

const tmp = tempDir('door-agent-dates-');
afterAll(tmp.cleanup);
let n = 0;

/** Every decision below is made at this instant (`check --at`): Wednesday 2026-07-01 14:00 in Berlin. */
const AT = '2026-07-01T12:00:00Z';
const EXPIRED = { valid_from: '2026-01-01 00:00:00', valid_until: '2026-07-01 12:00:00' }; // ends exactly at AT
const FUTURE = { valid_from: '2026-07-01 12:00:01' };
const CURRENT = { valid_from: '2026-07-01 12:00:00', valid_until: '2026-12-31 00:00:00' }; // starts exactly at AT

type Check = { granted: boolean; reason: string | null; holders: Array<Record<string, unknown>> };
const check = (config: string, credential: string, ...flags: string[]) =>
  JSON.parse(runCli(['check', credential, '--at', AT, '--config', config, ...flags]).stdout) as Check;

describe("the reference service keeps a card's validity dates", () => {
  let db: SqlDb;
  let app: Awaited<ReturnType<typeof inProcessService>>['app'];
  let headers: Record<string, string>;
  let aliceId: number;
  const inject = (method: 'GET' | 'PUT' | 'POST', url: string, payload?: Record<string, unknown>) =>
    app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

  beforeAll(async () => {
    ({ db, app, headers } = await inProcessService(join(tmp.path, 'service.db')));
    const invited = await inject('POST', '/invites', { emails: ['alice@example.org'], no_email: true });
    aliceId = invited.json<{ add_ids: number[] }>().add_ids[0]!;
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  it('PUT /modifysmartcard takes them; GET /user and GET /modifysmartcard return them, an undated card without them', async () => {
    const cards = [
      { number: '4213578', label: 'badge', ...CURRENT },
      { number: '2468', label: 'PIN', valid_until: '2026-12-31 00:00:00' },
      { number: '7777777', label: null, valid_from: null, valid_until: null },
    ];
    const put = await inject('PUT', '/modifysmartcard', { email_id: aliceId, smartcards: cards });
    expect(put.statusCode, put.body).toBe(200);
    const expected = [
      { number: '4213578', label: 'badge', ...CURRENT },
      { number: '2468', label: 'PIN', valid_until: '2026-12-31 00:00:00' },
      { number: '7777777', label: null },
    ];
    expect((await inject('GET', `/user?email_id=${aliceId}`)).json<{ smartcards: unknown }>().smartcards).toEqual(expected);
    expect((await inject('GET', `/modifysmartcard?email_id=${aliceId}`)).json<{ smartcards: unknown }>().smartcards).toEqual(expected);
    // PUT /modifysmartcards (the plural) is the same call; a serialized JSON array is accepted too.
    const plural = await inject('PUT', '/modifysmartcards', {
      email_id: aliceId,
      smartcards: JSON.stringify([{ number: '4213578', label: 'badge', ...EXPIRED }]),
    });
    expect(plural.statusCode, plural.body).toBe(200);
    expect((await inject('GET', `/user?email_id=${aliceId}`)).json<{ smartcards: unknown }>().smartcards).toEqual([
      { number: '4213578', label: 'badge', ...EXPIRED },
    ]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['until equal to from', { valid_from: '2026-06-01 00:00:00', valid_until: '2026-06-01 00:00:00' }, 'smartcards[0].valid_until: is not after valid_from'],
    ['until before from', { valid_from: '2026-06-01 00:00:00', valid_until: '2026-05-01 00:00:00' }, 'smartcards[0].valid_until: is not after valid_from'],
    ['a malformed from', { valid_from: '2026-06-01' }, 'smartcards[0].valid_from: expected a UTC date "YYYY-MM-DD hh:mm:ss"'],
    ['an until that is no date', { valid_until: '2026-13-01 00:00:00' }, 'smartcards[0].valid_until: expected a UTC date "YYYY-MM-DD hh:mm:ss"'],
  ])('refuses %s with a 400 naming the field, and keeps the cards it had', async (_what, dates, message) => {
    const before = (await inject('GET', `/user?email_id=${aliceId}`)).body;
    const put = await inject('PUT', '/modifysmartcard', { email_id: aliceId, smartcards: [{ number: '4213578', label: 'badge', ...dates }] });
    expect(put.statusCode).toBe(400);
    expect(put.json<{ error: string }>().error).toContain(message);
    expect((await inject('GET', `/user?email_id=${aliceId}`)).body).toBe(before);
  });

  it("a date change advances GET /directory's revision, and the delta carries the dates", async () => {
    const first = (await inject('GET', '/directory')).json<{
      revision: number;
      history: string;
      tag: string;
      details: Record<string, { smartcards: unknown }>;
    }>();
    expect(first.details[String(aliceId)]!.smartcards).toEqual([{ number: '4213578', label: 'badge', ...EXPIRED }]);
    const since = `/directory?since=${first.revision}&history=${first.history}&tag=${first.tag}`;
    // The same cards again: no change, no new revision.
    await inject('PUT', '/modifysmartcard', { email_id: aliceId, smartcards: [{ number: '4213578', label: 'badge', ...EXPIRED }] });
    expect((await inject('GET', since)).json<{ revision: number; users: unknown[] }>()).toMatchObject({ revision: first.revision, users: [] });
    // Only valid_until moves.
    await inject('PUT', '/modifysmartcard', {
      email_id: aliceId,
      smartcards: [{ number: '4213578', label: 'badge', ...EXPIRED, valid_until: '2026-07-02 00:00:00' }],
    });
    const delta = (await inject('GET', since)).json<{ revision: number; full: boolean; details: Record<string, { smartcards: unknown }> }>();
    expect(delta.revision).toBe(first.revision + 1);
    expect(delta.full).toBe(false);
    expect(delta.details[String(aliceId)]!.smartcards).toEqual([{ number: '4213578', label: 'badge', ...EXPIRED, valid_until: '2026-07-02 00:00:00' }]);
  });

  it("POST /invites and POST /magiclinkadmin pass a card's dates through (and check them)", async () => {
    const invited = await inject('POST', '/invites', {
      emails: ['bob@example.org'],
      smartcards: [[{ number: '5550001', label: 'badge', ...FUTURE }]],
      no_email: true,
    });
    expect(invited.statusCode, invited.body).toBe(200);
    const bob = invited.json<{ add_ids: number[] }>().add_ids[0]!;
    expect((await inject('GET', `/user?email_id=${bob}`)).json<{ smartcards: unknown }>().smartcards).toEqual([
      { number: '5550001', label: 'badge', ...FUTURE },
    ]);
    const bad = await inject('POST', '/invites', {
      emails: ['carol@example.org'],
      smartcards: [[{ number: '5550002', valid_from: '2026-02-01 00:00:00', valid_until: '2026-01-01 00:00:00' }]],
      no_email: true,
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json<{ error: string }>().error).toContain('smartcards[0][0].valid_until: is not after valid_from');

    const created = await inject('POST', '/magiclinkadmin', {
      email_list: ['guest@example.org'],
      resource_id_list: [12],
      name: 'Visitor',
      smartcards: [{ number: '7700001', label: 'visitor', ...CURRENT }],
      send_email: false,
    });
    expect(created.statusCode, created.body).toBe(200);
    const guest = created.json<{ email_ids: Record<string, number> }>().email_ids['guest@example.org']!;
    expect((await inject('GET', `/user?email_id=${guest}`)).json<{ smartcards: unknown }>().smartcards).toEqual([
      { number: '7700001', label: 'visitor', ...CURRENT },
    ]);
    const stored = JSON.parse((await db.value<string>('SELECT link FROM guest_links ORDER BY magic_link_id DESC LIMIT 1'))!) as Record<string, unknown>;
    // What the doors receive over MQTT: the agent's guestLinkSchema accepts it, dates included.
    expect(guestLinkSchema.parse(stored).smartcards).toEqual([{ number: '7700001', label: 'visitor', ...CURRENT }]);
  });
});

describe('a sync brings the dates to the door, and the door decides on them', () => {
  let service: RunningService;
  let admin: string;
  let config: string;
  const call = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${service.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status, `${method} ${path}`).toBe(200);
    return (await res.json()) as Record<string, unknown>;
  };
  const sync = async () => {
    const r = await runCliAsync(['sync', '--config', config]);
    expect(r.status, r.stderr).toBe(0);
    return r;
  };

  beforeAll(async () => {
    const dataDir = join(tmp.path, 'svc');
    mkdirSync(dataDir);
    // keepAliveTimeoutSeconds: this test's fetch reuses its connection after the CLI runs of seconds in between;
    // the default 10 s would let the service close it just as it is reused (ECONNRESET on a loaded machine).
    service = await startService(
      {
        server: {
          listen: '127.0.0.1:0',
          dataDir,
          lockReplyTimeoutSeconds: 5,
          keepAliveTimeoutSeconds: 600,
          resources: [{ resourceId: 12, uuid: DOOR_UUID, type: 'DOOR', name: 'Front door' }],
        },
      },
      { clock: systemClock, logger: pino({ level: 'silent' }), env: {} },
    );
    admin = await new ApiKeys(service.db).create('ADMIN', 0, Date.now());
    const invited = (await call('POST', '/invites', {
      emails: ['alice@example.org', 'bob@example.org', 'carol@example.org'],
      smartcards: [
        [
          { number: '4213578', label: 'badge', ...EXPIRED },
          { number: '2468', label: 'PIN', ...EXPIRED },
        ],
        [
          { number: '4213579', label: 'badge', ...FUTURE },
          { number: '1357', label: 'PIN', ...FUTURE },
        ],
        [{ number: '4213580', label: 'badge', ...CURRENT }],
      ],
      no_email: true,
    })) as { add_ids: number[] };
    await call('POST', '/groups', { type: 'users', name: 'Staff', add_ids: invited.add_ids });
    const dir = join(tmp.path, 'agent');
    mkdirSync(dir);
    writeFileSync(join(dir, 'api-key'), `${await new ApiKeys(service.db).create('DOOR', 0, Date.now())}\n`);
    config = writeConfig(dir, {
      id: 'dates',
      access: '{ groups: [Staff] }',
      extra: `service: { baseUrl: "${service.url}", apiKeyFile: ${dir}/api-key, startDelaySeconds: 0 }`,
    });
  });
  afterAll(() => service.stop());

  it('refuses an expired card or PIN with credential_expired, a future one with credential_not_yet_valid, and shows the dates', async () => {
    await sync();
    expect(check(config, '4213578')).toMatchObject({
      granted: false,
      reason: 'credential_expired',
      holders: [{ granted: false, reason: 'credential_expired', valid: '2026-01-01 00:00 – 2026-07-01 12:00 UTC' }],
    });
    expect(check(config, '2468', '--kind', 'pin')).toMatchObject({ granted: false, reason: 'credential_expired' });
    expect(check(config, '4213579')).toMatchObject({
      granted: false,
      reason: 'credential_not_yet_valid',
      holders: [{ valid: 'from 2026-07-01 12:00:01 UTC' }],
    });
    expect(check(config, '1357', '--kind', 'pin')).toMatchObject({ granted: false, reason: 'credential_not_yet_valid' });
    expect(check(config, '4213580')).toMatchObject({
      granted: true,
      reason: null,
      holders: [{ granted: true, valid: '2026-07-01 12:00 – 2026-12-31 00:00 UTC' }],
    });
    // A second later the future card opens; the expired one opened a second before.
    expect(JSON.parse(runCli(['check', '4213579', '--at', '2026-07-01T12:00:01Z', '--config', config]).stdout)).toMatchObject({ granted: true });
    expect(JSON.parse(runCli(['check', '4213578', '--at', '2026-07-01T11:59:59Z', '--config', config]).stdout)).toMatchObject({ granted: true });
    // A dated card needs a trusted clock.
    expect(JSON.parse(runCli(['check', '4213580', '--at', '2023-06-01T00:00:00Z', '--config', config]).stdout)).toMatchObject({
      granted: false,
      reason: 'clock_untrusted',
    });
  });

  it('a date changed at the service reaches the door with the next (incremental) sync; the row is rewritten', async () => {
    const list = (await (await fetch(`${service.url}/multipleusers`, { headers: { authorization: `Bearer ${admin}` } })).json()) as Array<{
      email_id: number;
      email: string;
    }>;
    const aliceId = list.find((u) => u.email === 'alice@example.org')!.email_id;
    await sync(); // up to date first (nothing to do after the test above), so the one below is a delta
    await call('PUT', '/modifysmartcard', {
      email_id: aliceId,
      smartcards: [
        { number: '4213578', label: 'badge', valid_from: '2026-01-01 00:00:00', valid_until: '2027-01-01 00:00:00' },
        { number: '2468', label: 'PIN', ...EXPIRED },
      ],
    });
    const r = await sync();
    // One row rewritten; a delta of Alice alone (a full sync would count the other users' cards as unchanged too).
    expect(r.stdout).toContain('(1 rows written)');
    expect(r.stdout).toMatch(/credentials +0 added, 1 changed, 0 removed, 1 unchanged/);
    expect(check(config, '4213578')).toMatchObject({ granted: true, holders: [{ valid: '2026-01-01 00:00 – 2027-01-01 00:00 UTC' }] });
    expect(check(config, '2468', '--kind', 'pin')).toMatchObject({ granted: false, reason: 'credential_expired' });
    // The dates removed: unbounded again, no dates shown.
    await call('PUT', '/modifysmartcard', {
      email_id: aliceId,
      smartcards: [
        { number: '4213578', label: 'badge' },
        { number: '2468', label: 'PIN' },
      ],
    });
    await sync();
    const undated = check(config, '2468', '--kind', 'pin');
    expect(undated).toMatchObject({ granted: true });
    expect(undated.holders[0]).not.toHaveProperty('valid');
  });
});

// This and the next two are the door's side alone (a stand-in directory, a snapshot, the agent's cache): nothing of
// the service's database, so they run once, in the SQLite project.
describeOn('sqlite', 'a delta carrying a bad date', () => {
  let server: Server;
  let port = 0;
  let answer: (since: string | null) => unknown;
  beforeAll(async () => {
    port = await freePort();
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      res.setHeader('content-type', 'application/json');
      if (url.pathname !== '/directory') {
        res.statusCode = 404;
        return void res.end('{"error":"no"}');
      }
      res.end(JSON.stringify(answer(url.searchParams.get('since'))));
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    server.closeAllConnections();
  });

  const item = (id: number) => ({ email_id: id, ad_status: 'ACTIVE', groups: [['Staff']], user_tag: 'USER', email: `u${id}@example.org` });
  const detail = (id: number, dates: Record<string, unknown> = {}) => ({ policies: [], smartcards: [{ number: String(5_000_000 + id), ...dates }] });
  const ids = [1, 2, 3, 4];
  const full = {
    revision: 7,
    full: true,
    users: ids.map(item),
    details: Object.fromEntries(ids.map((id) => [String(id), detail(id, id === 3 ? CURRENT : {})])),
    removed: [],
  };

  it.each<[string, Record<string, unknown>, string]>([
    [
      'valid_until before valid_from',
      { valid_from: '2026-08-01 00:00:00', valid_until: '2026-07-01 00:00:00' },
      'GET /directory: $.details["3"].smartcards[0].valid_until: is not after valid_from',
    ],
    [
      'a malformed valid_until',
      { valid_until: 'next year' },
      'GET /directory: $.details["3"].smartcards[0].valid_until: expected a UTC date "YYYY-MM-DD hh:mm:ss"',
    ],
  ])('%s is refused, naming the field, and the cache stays as it was', async (_what, dates, message) => {
    const dir = join(tmp.path, `bad-${n++}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'api-key'), 'dak_test-key\n');
    const config = writeConfig(dir, {
      id: 'bad',
      access: '{ groups: [Staff] }',
      extra: `service: { baseUrl: "http://127.0.0.1:${port}", apiKeyFile: ${dir}/api-key, timeoutSeconds: 5, startDelaySeconds: 0 }`,
    });
    answer = () => full;
    expect((await runCliAsync(['sync', '--config', config])).status).toBe(0);
    const before = dumpCache(join(dir, 'data', 'cache.db'));
    expect(check(config, '5000003')).toMatchObject({ granted: true });

    answer = (since) => (since === '7' ? { revision: 8, full: false, users: [item(3)], details: { '3': detail(3, dates) }, removed: [] } : full);
    const r = await runCliAsync(['sync', '--config', config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(message);
    expect(dumpCache(join(dir, 'data', 'cache.db'))).toBe(before);
    expect(check(config, '5000003')).toMatchObject({ granted: true, holders: [{ valid: '2026-07-01 12:00 – 2026-12-31 00:00 UTC' }] });
  });
});

describeOn('sqlite', 'snapshot import and guest links over MQTT carry the dates too', () => {
  it('door-agent import stores them, and refuses a bad one with its path, changing nothing', () => {
    const dir = join(tmp.path, `import-${n++}`);
    mkdirSync(dir);
    const config = writeConfig(dir, { access: '{ groups: [Staff] }' });
    const snapshot = exampleSnapshot();
    const cards = snapshot.details['101']!.smartcards as Array<Record<string, unknown>>;
    Object.assign(cards[0]!, EXPIRED);
    const imported = runCli(['import', writeSnapshot(dir, 'dated.json', snapshot), '--config', config]);
    expect(imported.status, imported.stderr).toBe(0);
    expect(check(config, '0004213578')).toMatchObject({ granted: false, reason: 'credential_expired' });
    const before = dumpCache(join(dir, 'data', 'cache.db'));

    Object.assign(cards[0]!, { valid_from: '2026-08-01 00:00:00', valid_until: '2026-08-01 00:00:00' });
    const refused = runCli(['import', writeSnapshot(dir, 'bad.json', snapshot), '--config', config]);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('$.details["101"].smartcards[0].valid_until: is not after valid_from');
    expect(dumpCache(join(dir, 'data', 'cache.db'))).toBe(before);
  });

  it("a guest link's card keeps its own dates; a date change is stored, not taken as unchanged", () => {
    const db = openDatabase(join(tmp.path, `links-${n++}.db`));
    try {
      const store = new GuestLinkStore(db, new Set([12]));
      const cache = new CredentialCache(db);
      const link = (dates: Record<string, unknown>) =>
        guestLinkSchema.parse({
          magic_link_id: '9',
          magic_token: 'GuestToken-0123456789abcdef',
          name: 'Visitor',
          resource_id_list: [12],
          smartcards: [{ number: '7700001', ...dates }],
        });
      expect(store.store(link(EXPIRED))).toBe('stored');
      expect(cache.holdersOfNumber('7700001', 'card', pinLabelSet(['PIN']))).toMatchObject([
        { kind: 'link', validFrom: Date.UTC(2026, 0, 1), validUntil: Date.UTC(2026, 6, 1, 12) },
      ]);
      expect(store.store(link(EXPIRED))).toBe('unchanged');
      expect(store.store(link({ ...EXPIRED, valid_until: '2026-09-01 00:00:00' }))).toBe('stored');
      expect(cache.holdersOfNumber('7700001', 'card', pinLabelSet(['PIN']))).toMatchObject([{ validUntil: Date.UTC(2026, 8, 1) }]);
      expect(store.store(link({}))).toBe('stored');
      expect(cache.holdersOfNumber('7700001', 'card', pinLabelSet(['PIN']))[0]).not.toHaveProperty('validUntil');
    } finally {
      db.close();
    }
  });
});

describeOn('sqlite', 'upgrade: a cache from before validity dates', () => {
  it('gets the two columns, and its revision held is forgotten so the next sync is a full one', () => {
    const file = join(tmp.path, 'old-cache.db');
    const db = openDatabase(file);
    writeHeldRevision(db, { revision: 41, history: 'a'.repeat(32), tag: 'b'.repeat(16) });
    const step = MIGRATIONS.findIndex((m) => typeof m === 'string' && m.includes('ADD COLUMN valid_from'));
    expect(step).toBeGreaterThan(0);
    db.exec(`ALTER TABLE credentials DROP COLUMN valid_from; ALTER TABLE credentials DROP COLUMN valid_until; PRAGMA user_version = ${step}`);
    db.close();
    const upgraded = openDatabase(file);
    try {
      expect(readHeldRevision(upgraded)).toBeNull();
      expect(upgraded.prepare("SELECT name FROM pragma_table_info('credentials') WHERE name LIKE 'valid_%' ORDER BY name").pluck().all()).toEqual([
        'valid_from',
        'valid_until',
      ]);
    } finally {
      upgraded.close();
    }
  });
});

// About the SQLite file and its schema upgrade: SQLite only.
describeOn('sqlite', 'upgrade: a service database from before validity dates', () => {
  it('keeps its cards, undated, and takes dates from then on', async () => {
    const file = join(tmp.path, 'old-service.db');
    const step = SERVICE_MIGRATIONS.findIndex((sql) => sql.includes('ADD COLUMN valid_from'));
    expect(step).toBeGreaterThan(0);
    const old = new Database(file);
    for (const sql of SERVICE_MIGRATIONS.slice(0, step)) old.exec(sql);
    old.pragma(`user_version = ${step}`);
    old.exec(`INSERT INTO users (email_id, user_id, email, username, unique_id, created) VALUES (1, 1, 'alice@example.org', 'alice', 'u-1', '2026-01-01 00:00:00');
              INSERT INTO smartcards (email_id, position, number, label) VALUES (1, 0, '4213578', 'badge');`);
    old.close();
    const db = new SqliteDb(openServiceDatabase(file));
    try {
      const users = new UserStore(db);
      expect(await users.smartcards(1)).toEqual([{ number: '4213578', label: 'badge' }]);
      await users.replaceSmartcards(1, [{ number: '4213578', label: 'badge', valid_until: '2027-01-01 00:00:00' }]);
      expect(await users.smartcards(1)).toEqual([{ number: '4213578', label: 'badge', valid_until: '2027-01-01 00:00:00' }]);
    } finally {
      await db.close();
    }
  });
});
