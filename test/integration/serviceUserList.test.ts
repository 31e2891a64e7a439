import Database from 'better-sqlite3';
import Fastify, { type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { BadRequest, boolParam, intParam, parseParams } from '../../src/service/params.js';
import { openPostgres } from '../../src/service/sql/openPostgres.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { SqliteDb } from '../../src/service/sql/sqliteDb.js';
import { userAnswers } from '../../src/service/userList.js';
import { UserStore } from '../../src/service/users.js';
import { tempDir } from '../support/cli.js';
import { testService } from '../support/serviceApp.js';
import { ENGINE, newServiceDb, type TestDbLocation } from '../support/serviceDb.js';

// Issue 15 item 9: GET /multipleusers and GET /user answered from strings serialized once. The answers must be
// the very bytes the handlers sent before (checked against those handlers, kept here verbatim as the reference),
// and no answer may outlive a change: the GET right after any write shows it.
const tmp = tempDir('door-agent-userlist-');
let db: SqlDb;
let location: TestDbLocation;
let app: FastifyInstance;
let reference: FastifyInstance;
let headers: Record<string, string>;

/** The handlers of GET /multipleusers and GET /user before the cache, on their own fastify. */
function referenceHandlers(store: UserStore): FastifyInstance {
  const ref = Fastify({ logger: false });
  ref.setErrorHandler((err: Error, _request, reply) => reply.code((err as BadRequest).status ?? 500).send({ error: err.message }));
  ref.get('/multipleusers', async (request) => {
    const p = parseParams(z.object({ email: boolParam.optional(), user_tag: z.enum(['GUEST', 'USER']).optional() }), request.query, request.body);
    const groups = await store.allGroups();
    return (await store.list(p.user_tag)).map((u) => store.listItem(u, p.email ?? false, groups));
  });
  ref.get('/user', async (request) => {
    const p = parseParams(z.object({ email_id: intParam }), request.query, request.body);
    const user = await store.get(p.email_id);
    if (!user) throw new BadRequest(`no user with email_id ${p.email_id}`, 404);
    return await store.detail(user);
  });
  return ref;
}

const call = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: Record<string, unknown>) => {
  const res = await app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(200);
  return res.json<Record<string, unknown>>();
};
const list = async (query = '') => (await app.inject({ method: 'GET', url: `/multipleusers${query}`, headers })).json<Array<Record<string, unknown>>>();
const byEmail = async (email: string) => (await list()).find((u) => u.email === email);

/**
 * A second connection to the service's database, as another service process or an operator's tool has: a
 * better-sqlite3 handle of its own on the file, or a pool of its own on the PostgreSQL database.
 */
async function secondConnection(): Promise<SqlDb> {
  if (location.engine === 'sqlite') return new SqliteDb(new Database(location.file));
  return openPostgres({ url: location.url, passwordFile: location.passwordFile, maxConnections: 2 }, {}, pino({ level: 'silent' }));
}

const LIST_QUERIES = [
  '',
  '?email=true',
  '?email=1',
  '?email=false',
  '?email=0',
  '?user_tag=USER',
  '?user_tag=GUEST',
  '?email=true&user_tag=GUEST',
  '?email=1&user_tag=USER',
];

/** Every variant of the list, and every user's detail (and a few unknown ids), answered the same as the reference. */
async function expectSameAsReference(): Promise<void> {
  for (const query of LIST_QUERIES) {
    const [now, before] = await Promise.all([app.inject({ url: `/multipleusers${query}`, headers }), reference.inject({ url: `/multipleusers${query}` })]);
    expect(now.statusCode).toBe(200);
    expect(now.body, `GET /multipleusers${query}`).toBe(before.body);
    expect(now.headers['content-type']).toBe(before.headers['content-type']);
    expect(now.headers['content-length']).toBe(before.headers['content-length']);
  }
  const ids = await db.column<number>('SELECT email_id FROM users');
  for (const id of [...ids, 0, Math.max(...ids) + 1]) {
    const [now, before] = await Promise.all([app.inject({ url: `/user?email_id=${id}`, headers }), reference.inject({ url: `/user?email_id=${id}` })]);
    expect(now.statusCode, `GET /user?email_id=${id}`).toBe(before.statusCode);
    expect(now.body, `GET /user?email_id=${id}`).toBe(before.body);
    if (now.statusCode === 200) expect(now.headers['content-type']).toBe(before.headers['content-type']);
  }
}

beforeAll(async () => {
  ({ db, location } = await newServiceDb(tmp.path));
  headers = { authorization: `Bearer ${await new ApiKeys(db).create('SUPER', 0, Date.now())}` };
  app = testService(db);
  await app.ready();
  reference = referenceHandlers(new UserStore(db));
  // An organization with two user groups, members of none, one or both, guests, suspended users, a removed one.
  const staff = (await call('POST', '/groups', { type: 'users', name: 'Staff', add_ids: [] })).group_id as number;
  const night = (await call('POST', '/groups', { type: 'users', name: 'Night shift', add_ids: [] })).group_id as number;
  const emails = Array.from({ length: 24 }, (_, i) => `user${i}@example.org`);
  await call('POST', '/invites', {
    emails: emails.slice(0, 12),
    groups: [{ id: staff, name: 'Staff' }],
    no_email: true,
    smartcards: [[{ number: '4213578', label: 'badge' }, { number: '1234' }]],
  });
  await call('POST', '/invites', { emails: emails.slice(12), no_email: true });
  const ids = Object.fromEntries((await list()).map((u) => [u.email as string, u.email_id as number]));
  await call('PUT', '/groups', { type: 'users', group_id: night, add_ids: [ids['user3@example.org'], ids['user15@example.org'], ids['user20@example.org']] });
  await call('POST', '/magiclinkadmin', {
    email_list: ['guest1@example.org', 'guest2@example.org', 'user22@example.org'],
    resource_id_list: [12],
    name: 'Visitors',
    smartcards: [{ number: '7700001', label: 'visitor' }],
  });
  for (const email of ['user5@example.org', 'user16@example.org']) await call('PUT', '/togglesuspension', { email_id: ids[email] });
  await call('DELETE', `/user?email_id=${ids['user7@example.org']}`);
  await call('PUT', '/modifyallusernames', { email_id: ids['user1@example.org'], computer_usernames: [{ computer_username: 'u1' }] });
  // Names that JSON has to escape, set as a migration or an operator could.
  await db.run("UPDATE users SET first_name = ?, last_name = ? WHERE email = 'user2@example.org'", ['Zoë "Q" \\ O’Brien', 'tab\there\u0001 😀']);
  await db.run("UPDATE users SET first_name = '', last_name = '' WHERE email = 'user4@example.org'");
});
afterAll(async () => {
  await app?.close();
  await reference?.close();
  await db?.close();
  tmp.cleanup();
});

describe('GET /multipleusers and GET /user from the serialized answers (issue 15 item 9)', () => {
  it('answer the same bytes and content type as the handlers before: groups, tags, suspended, removed, e-mail on and off, user_tag', async () => {
    const all = await list();
    expect(all.some((u) => u.user_tag === 'GUEST') && all.some((u) => u.ad_status === 'SUSPENDED')).toBe(true);
    expect(all.some((u) => (u.groups as unknown[]).length === 2)).toBe(true);
    expect(all.some((u) => u.email === 'user7@example.org')).toBe(false);
    await expectSameAsReference();
    // Asked twice, from the cache this time.
    await expectSameAsReference();
    expect((await app.inject({ url: '/multipleusers', headers })).headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('bad parameters are refused as before', async () => {
    for (const url of ['/multipleusers?user_tag=ADMIN', '/multipleusers?email=yes', '/user', '/user?email_id=abc']) {
      const [now, before] = await Promise.all([app.inject({ url, headers }), reference.inject({ url })]);
      expect(now.statusCode, url).toBe(400);
      expect(now.body, url).toBe(before.body);
    }
  });

  it('the list is built in the same few queries whatever the number of users, and only when the data changed', async () => {
    // The queries run for the answer (not the key check, the cache's change stamp, nor a directory refresh that may
    // run meanwhile), counted as they run through the database.
    const queriesForList = async () => {
      userAnswers(db).invalidate();
      const spies = (['all', 'get', 'column', 'value', 'run'] as const).map((method) => vi.spyOn(db, method));
      try {
        await list('?email=true');
        return spies.flatMap((spy) => spy.mock.calls).filter(([text]) => !/api_keys|directory_|total_changes|pg_current_snapshot/.test(String(text))).length;
      } finally {
        for (const spy of spies) spy.mockRestore();
      }
    };
    const before = await queriesForList();
    await call('POST', '/invites', { emails: Array.from({ length: 40 }, (_, i) => `more${i}@example.org`), no_email: true });
    expect(await queriesForList()).toBe(before);
    expect(before).toBe(2); // the users, the memberships
    // Served again with no change: no list query at all. The directory's revision is brought up to date first
    // (GET /directory), so that its change timer has nothing left to write meanwhile. On PostgreSQL the change stamp
    // is the cluster's, and the other test files write to the same cluster at the same time: counted on SQLite.
    const settled = async () => expect((await app.inject({ url: '/directory', headers })).statusCode).toBe(200);
    await settled();
    const list0 = UserStore.prototype.list;
    let listed = 0;
    UserStore.prototype.list = function (this: UserStore, ...args: Parameters<UserStore['list']>) {
      listed++;
      return list0.apply(this, args);
    };
    try {
      await list('?user_tag=GUEST');
      listed = 0;
      await list('?user_tag=GUEST');
      await list();
      if (ENGINE === 'sqlite') expect(listed).toBe(0);
      await db.run("UPDATE users SET last_name = 'Changed' WHERE email = 'more0@example.org'");
      await settled();
      listed = 0;
      await list('?user_tag=GUEST');
      await list();
      if (ENGINE === 'sqlite') expect(listed).toBe(1); // one read of the users for every variant built at the same data
      expect((await byEmail('more0@example.org'))!.last_name).toBe('Changed');
    } finally {
      UserStore.prototype.list = list0;
    }
    await expectSameAsReference();
  });

  it('every write through the API shows in the very next GET', async () => {
    await list();
    await list('?email=true');
    await call('POST', '/invites', { emails: ['new@example.org'], no_email: true });
    const created = (await byEmail('new@example.org'))!;
    expect(created).toMatchObject({ ad_status: 'ACTIVE', groups: [], user_tag: 'USER' });
    const id = created.email_id as number;
    expect((await list('?email=true')).find((u) => u.email_id === id)!.name).toContain('<new@example.org>');

    const group = (await call('POST', '/groups', { type: 'users', name: 'Late', add_ids: [id] })).group_id as number;
    expect((await byEmail('new@example.org'))!.groups).toEqual([['Late']]);
    await call('PUT', '/groups', { type: 'users', group_id: group, del_ids: [id] });
    expect((await byEmail('new@example.org'))!.groups).toEqual([]);

    await call('PUT', '/togglesuspension', { email_id: id });
    expect((await byEmail('new@example.org'))!.ad_status).toBe('SUSPENDED');
    await call('PUT', '/togglesuspension', { email_id: id });
    expect((await byEmail('new@example.org'))!.ad_status).toBe('ACTIVE');

    await call('POST', '/magiclinkadmin', { email_list: ['visitor@example.org'], resource_id_list: [12], name: 'Visit' });
    const guest = (await list('?user_tag=GUEST')).find((u) => u.email === 'visitor@example.org')!;
    expect(guest.user_tag).toBe('GUEST');
    await call('PUT', '/promoteguest', { email_id: guest.email_id });
    expect((await list('?user_tag=GUEST')).some((u) => u.email === 'visitor@example.org')).toBe(false);
    expect((await list('?user_tag=USER')).some((u) => u.email === 'visitor@example.org')).toBe(true);

    // GET /user too: cards, computer usernames, policies, removal.
    const detail = async () => app.inject({ url: `/user?email_id=${id}`, headers });
    expect((await detail()).json()).toMatchObject({ smartcards: [], computer_usernames: [] });
    await call('PUT', '/modifysmartcard', { email_id: id, smartcards: JSON.stringify([{ number: '5550001', label: 'badge' }]) });
    expect((await detail()).json<{ smartcards: unknown[] }>().smartcards).toEqual([expect.objectContaining({ number: '5550001' })]);
    await call('PUT', '/modifyallusernames', { email_id: id, computer_usernames: [{ computer_username: 'newbie' }] });
    expect((await detail()).json<{ computer_usernames: string[] }>().computer_usernames).toEqual(['newbie']);
    await call('POST', '/magiclinkadmin', { email_list: ['new@example.org'], resource_id_list: [12], name: 'Night visit' });
    expect((await detail()).json<{ policies: string[][] }>().policies).toContainEqual(['Night visit']);

    await call('DELETE', `/user?email_id=${id}`);
    expect(await byEmail('new@example.org')).toBeUndefined();
    expect((await detail()).statusCode).toBe(404);
    await expectSameAsReference();
  });

  it('a write that bypasses the HTTP API, on this connection or another, shows in the very next GET', async () => {
    const email = 'user0@example.org';
    expect((await byEmail(email))!.ad_status).toBe('ACTIVE');
    const id = (await byEmail(email))!.email_id as number;
    await app.inject({ url: `/user?email_id=${id}`, headers });
    // The same connection, through the store (no HTTP call, no hook).
    await new UserStore(db).toggleSuspension(id);
    expect((await byEmail(email))!.ad_status).toBe('SUSPENDED');
    await new UserStore(db).replaceSmartcards(id, [{ number: '6660001', label: 'spare' }]);
    expect(
      (await app.inject({ url: `/user?email_id=${id}`, headers })).json<{ smartcards: Array<{ number: string }> }>().smartcards.map((c) => c.number),
    ).toEqual(['6660001']);
    // Another connection (another service process, sqlite3 or psql by hand).
    const other = await secondConnection();
    try {
      await other.run('UPDATE users SET suspended = 0 WHERE email_id = ?', [id]);
      expect((await byEmail(email))!.ad_status).toBe('ACTIVE');
      await other.run('DELETE FROM group_members WHERE member_id = ?', [id]);
      expect((await byEmail(email))!.groups).toEqual([]);
      await other.run('DELETE FROM smartcards WHERE email_id = ?', [id]);
      expect((await app.inject({ url: `/user?email_id=${id}`, headers })).json<{ smartcards: unknown[] }>().smartcards).toEqual([]);
    } finally {
      await other.close();
    }
    await expectSameAsReference();
  });

  it('nothing is cached from inside an open transaction (it may still roll back)', async () => {
    const email = 'user1@example.org';
    await list();
    const id = (await byEmail(email))!.email_id as number;
    // The GETs made inside the transaction read through it (its async context), as a handler called from it would.
    const rolledBack = db.transaction(async () => {
      await db.run('UPDATE users SET suspended = 1 WHERE email_id = ?', [id]);
      expect((await byEmail(email))!.ad_status).toBe('SUSPENDED');
      expect((await app.inject({ url: `/user?email_id=${id}`, headers })).statusCode).toBe(200);
      throw new Error('rolled back on purpose');
    });
    await expect(rolledBack).rejects.toThrow('rolled back on purpose');
    expect((await byEmail(email))!.ad_status).toBe('ACTIVE');
    await expectSameAsReference();
  });
});
