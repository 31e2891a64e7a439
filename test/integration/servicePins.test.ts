import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASKED_PIN, userDetailSchema } from '../../src/api/shapes.js';
import { ApiKeys, type KeyKind } from '../../src/service/apiKeys.js';
import { openServiceDatabase } from '../../src/service/database.js';
import { SERVICE_MIGRATIONS } from '../../src/service/migrations.js';
import { startService, type RunningService } from '../../src/service/root.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { SqliteDb } from '../../src/service/sql/sqliteDb.js';
import { systemClock } from '../../src/util/clock.js';
import { DOOR_UUID, runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { testService } from '../support/serviceApp.js';
import { itOn, newServiceDb } from '../support/serviceDb.js';

// Issue 32 item 16: who may read PINs. PINs are smartcard entries labelled as a PIN (server.pinLabels); with the
// card they are both factors of a card_and_pin door, so only ADMIN/SUPER keys and DOOR keys (door controllers)
// read them in clear; REGULAR keys get "****". A DOOR key changes nothing.

const tmp = tempDir('door-agent-pins-');
afterAll(tmp.cleanup);

const KINDS: KeyKind[] = ['REGULAR', 'ADMIN', 'SUPER', 'DOOR'];
const CARDS = [
  { number: '4213578', label: 'badge' },
  { number: '1234', label: 'PIN' },
  { number: '0987', label: ' pin ' }, // labels compare as the agent's access.pinLabels: trimmed, any case
  { number: '5555', label: 'Pin code' }, // a PIN only where server.pinLabels says so
  { number: '7777777', label: null },
];

let db: SqlDb;
let app: ReturnType<typeof testService>;
const keys = {} as Record<KeyKind, string>;
let aliceId: number;

const get = (path: string, kind: KeyKind) => app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${keys[kind]}` } });

beforeAll(async () => {
  ({ db } = await newServiceDb(tmp.path));
  for (const kind of KINDS) keys[kind] = await new ApiKeys(db).create(kind, 0, Date.now());
  app = testService(db, { pinLabels: ['PIN', 'Pin code'] });
  await app.ready();
  const invited = await app.inject({
    method: 'POST',
    url: '/invites',
    headers: { authorization: `Bearer ${keys.ADMIN}` },
    payload: { emails: ['alice@example.org'], smartcards: [CARDS], no_email: true },
  });
  expect(invited.statusCode, invited.body).toBe(200);
  aliceId = (invited.json() as { add_ids: number[] }).add_ids[0]!;
});
afterAll(async () => {
  await app.close();
  await db.close();
});

const masked = CARDS.map((c) => (c.label !== null && ['pin', 'pin code'].includes(c.label.trim().toLowerCase()) ? { ...c, number: MASKED_PIN } : c));

describe('PIN values by key kind', () => {
  it.each(KINDS)('GET /user, GET /modifysmartcard and GET /directory (full and delta) with a %s key', async (kind) => {
    const expected = kind === 'REGULAR' ? masked : CARDS;
    // Twice each, the other kinds in between: the cached answers never serve one kind's form to another.
    for (let round = 0; round < 2; round++) {
      for (const other of KINDS) await get(`/user?email_id=${aliceId}`, other);
      const user = await get(`/user?email_id=${aliceId}`, kind);
      expect(user.statusCode).toBe(200);
      expect(user.json().smartcards).toEqual(expected);
    }
    const cards = await get(`/modifysmartcard?email_id=${aliceId}`, kind);
    expect(cards.statusCode).toBe(200);
    expect(cards.json()).toEqual({ email_id: aliceId, smartcards: expected });
    const full = await get('/directory', kind);
    expect(full.statusCode).toBe(200);
    expect(full.json().details[String(aliceId)].smartcards).toEqual(expected);
    const delta = await get('/directory?since=0', kind);
    expect(delta.json().full).toBe(false);
    expect(delta.json().details[String(aliceId)].smartcards).toEqual(expected);
    // No key sees a PIN in the list: it holds no cards.
    const list = await get('/multipleusers', kind);
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toMatch(/1234|0987|5555|4213578/);
  });

  it('a masked answer is refused by the agent, naming the key it needs; the clear one is accepted', async () => {
    const regular = (await get(`/user?email_id=${aliceId}`, 'REGULAR')).json();
    const refused = userDetailSchema.safeParse(regular);
    expect(refused.success).toBe(false);
    expect(refused.error!.issues[0]!.message).toContain('give the agent a DOOR key');
    expect(userDetailSchema.safeParse((await get(`/user?email_id=${aliceId}`, 'DOOR')).json()).success).toBe(true);
  });
});

describe('a DOOR key only reads', () => {
  const counts = () =>
    db.get(
      `SELECT (SELECT count(*) FROM users) AS users, (SELECT sum(suspended) FROM users) AS suspended, (SELECT count(*) FROM smartcards) AS cards,
         (SELECT count(*) FROM groups) AS groups, (SELECT count(*) FROM guest_links) AS links`,
    );

  it.each([
    ['PUT', '/togglesuspension', { email_id: 1 }],
    ['PUT', '/modifysmartcard', { email_id: 1, smartcards: [{ number: '1', label: 'PIN' }] }],
    ['PUT', '/modifysmartcards', { email_id: 1, smartcards: [] }],
    ['POST', '/groups', { type: 'users', name: 'Door made', add_ids: [1] }],
    ['POST', '/invites', { emails: ['mallory@example.org'], no_email: true }],
    ['DELETE', '/user', { email_id: 1 }],
    ['POST', '/magiclinkadmin', { email_list: ['v@example.org'], resource_id_list: [12], name: 'V' }],
    ['POST', '/setlockstatus', { uuid: DOOR_UUID, lock_state: false }],
    ['POST', '/lockdown', { active: true, uuid: DOOR_UUID }],
  ] as const)('%s %s: 403, nothing changed', async (method, url, payload) => {
    const before = await counts();
    for (const inBody of [false, true]) {
      const answer = await app.inject({
        method,
        url,
        headers: inBody ? {} : { authorization: `Bearer ${keys.DOOR}` },
        payload: inBody ? { ...payload, api_key: keys.DOOR } : payload,
      });
      // The key is read from the body of every call, as from the header.
      expect(answer.statusCode, answer.body).toBe(403);
      expect(answer.json().error).toMatch(/DOOR key only reads|rank ADMIN/);
    }
    expect(await counts()).toEqual(before);
  });
});

describe('DOOR keys: created by the CLI, kept across the schema upgrade, and what an agent needs', () => {
  // About the SQLite file and its schema upgrade: SQLite only.
  itOn('sqlite', 'service key create --rank DOOR; a database of the schema before keeps its keys', async () => {
    // A service.db of the schema before DOOR keys, with an ADMIN key in it.
    const oldFile = join(tmp.path, 'old', 'service.db');
    mkdirSync(join(tmp.path, 'old'));
    const doorKeys = SERVICE_MIGRATIONS.findIndex((sql) => sql.includes('api_keys_new'));
    const old = new Database(oldFile);
    for (const sql of SERVICE_MIGRATIONS.slice(0, doorKeys)) old.exec(sql);
    old.pragma(`user_version = ${doorKeys}`);
    old.pragma('journal_mode = WAL');
    const oldKeys = new ApiKeys(new SqliteDb(old));
    const oldKey = await oldKeys.create('ADMIN', 0, Date.now());
    await expect(oldKeys.create('DOOR', 0, Date.now())).rejects.toThrow(/CHECK/);
    old.close();
    const config = join(tmp.path, 'old', 'service.yaml');
    writeFileSync(config, `server: { dataDir: ${join(tmp.path, 'old')} }\n`);
    const created = runCli(['service', 'key', 'create', '--rank', 'DOOR', '--config', config]);
    expect(created.status, created.stderr).toBe(0);
    expect(created.stderr).toContain('created a DOOR API key');
    const reopened = new SqliteDb(openServiceDatabase(oldFile));
    expect(await new ApiKeys(reopened).verify(created.stdout.trim(), Date.now())).toBe('DOOR');
    expect(await new ApiKeys(reopened).verify(oldKey, Date.now())).toBe('ADMIN');
    await reopened.close();
    expect(runCli(['service', 'key', 'create', '--rank', 'GATE', '--config', config]).stderr).toContain('REGULAR, ADMIN, SUPER, DOOR');
  });

  it('an agent syncs PINs with a DOOR key; with a REGULAR key its sync is refused, naming the key to use, and nothing is applied', async () => {
    const dataDir = join(tmp.path, 'svc');
    mkdirSync(dataDir);
    const service: RunningService = await startService(
      {
        server: {
          listen: '127.0.0.1:0',
          dataDir,
          lockReplyTimeoutSeconds: 5,
          resources: [{ resourceId: 12, uuid: DOOR_UUID, type: 'DOOR', name: 'Front door' }],
        },
      },
      { clock: systemClock, logger: pino({ level: 'silent' }), env: {} },
    );
    try {
      const admin = await new ApiKeys(service.db).create('ADMIN', 0, Date.now());
      const call = (method: string, path: string, body: unknown) =>
        fetch(`${service.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const invited = (await (
        await call('POST', '/invites', {
          emails: ['bob@example.org'],
          smartcards: [
            [
              { number: '4213578', label: 'badge' },
              { number: '2468', label: 'PIN' },
            ],
          ],
          no_email: true,
        })
      ).json()) as { add_ids: number[] };
      expect((await call('POST', '/groups', { type: 'users', name: 'Staff', add_ids: invited.add_ids })).status).toBe(200);
      const agent = async (kind: KeyKind) => {
        const dir = join(tmp.path, `agent-${kind}`);
        mkdirSync(dir);
        writeFileSync(join(dir, 'api-key'), `${await new ApiKeys(service.db).create(kind, 0, Date.now())}\n`);
        return writeConfig(dir, {
          id: 'pins',
          access: '{ groups: [Staff] }',
          extra: `service: { baseUrl: "${service.url}", apiKeyFile: ${dir}/api-key, startDelaySeconds: 0 }`,
        });
      };
      const door = await agent('DOOR');
      const synced = await runCliAsync(['sync', '--config', door]);
      expect(synced.status, synced.stderr).toBe(0);
      expect(JSON.parse(runCli(['check', '2468', '--kind', 'pin', '--config', door]).stdout)).toMatchObject({ granted: true });

      const regular = await agent('REGULAR');
      const refused = await runCliAsync(['sync', '--config', regular]);
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toContain('give the agent a DOOR key');
      expect(JSON.parse(runCli(['check', '4213578', '--config', regular]).stdout)).toMatchObject({ granted: false });
    } finally {
      await service.stop();
    }
  });
});
