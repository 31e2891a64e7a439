import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SyncRunAnswer } from '../../src/api/identity.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { BadRequest } from '../../src/service/badRequest.js';
import type { LdapSyncControl } from '../../src/service/identity/ldap/ldapSyncControl.js';
import type { IdentityOptions } from '../../src/service/options.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { DOOR_UUID, runCli, tempDir } from '../support/cli.js';
import { testService } from '../support/serviceApp.js';
import { newServiceDb, type TestDbLocation } from '../support/serviceDb.js';

// Issue 56 item 3: which source owns a user is visible in the API and the console, and what SCIM or LDAP owns is
// refused elsewhere with a message saying where to change it, nothing changed. The users and groups a source owns
// are made as SCIM and LDAP leave them (users.source, groups.source written in the database); the LDAP sync behind
// POST /identity-sources/ldap/sync is a stand-in that answers runs (the real one: ldapSync.test.ts).
const tmp = tempDir('door-agent-identity-ownership-');
const PUBLIC_URL = 'https://doors.example.org';
const LDAP_URL = 'ldaps://dc1.example.org';
const EMPLOYEE_NUMBER = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber';
// SCIM maps cards (its users' cards are the provider's); LDAP does not (its users' cards stay at the service).
const IDENTITY: IdentityOptions = {
  scim: { enabled: true, cardAttribute: EMPLOYEE_NUMBER },
  ldap: {
    url: LDAP_URL,
    startTls: false,
    preset: 'active-directory',
    users: { baseDn: 'OU=Staff,DC=example,DC=org' },
    attributes: {},
    intervalMinutes: 15,
    onMissing: 'suspend',
    maxSuspendShare: 0.05,
    timeoutSeconds: 10,
    pageSize: 500,
  },
};
const CONSOLE = { options: { enabled: true, sessionMinutes: 30, maxSessionHours: 12 }, feed: null, mailConfigured: false, publicUrl: PUBLIC_URL };

const NO_COUNTS = {
  entries: 0,
  groups: 0,
  created: 0,
  claimed: 0,
  updated: 0,
  suspended: 0,
  reactivated: 0,
  removed: 0,
  memberships: 0,
  groupsChanged: 0,
  skipped: 0,
};

/** The LDAP sync as the routes see it: each request kept, each answer what `next` makes of it. */
class StandInSync implements LdapSyncControl {
  readonly asked: Array<{ trigger: string; confirmSuspensions?: number }> = [];
  next: (request: { trigger: string; confirmSuspensions?: number }) => Promise<SyncRunAnswer> = async () => {
    throw new Error('no answer set');
  };
  async runNow(request: { trigger: string; confirmSuspensions?: number }): Promise<SyncRunAnswer> {
    this.asked.push(request);
    return this.next(request);
  }
}

let db: SqlDb;
let location: TestDbLocation;
let app: ReturnType<typeof testService>;
let bare: ReturnType<typeof testService>;
const sync = new StandInSync();
const keys = { SUPER: '', ADMIN: '', REGULAR: '' };
const ids: Record<string, number> = {};
const groupIds: Record<string, number> = {};

async function call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: Record<string, unknown>, key = keys.ADMIN, on = app) {
  const res = await on.inject({ method, url, headers: { authorization: `Bearer ${key}` }, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, json: res.json<Record<string, unknown>>(), body: res.body };
}
async function ok(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: Record<string, unknown>) {
  const res = await call(method, url, payload);
  expect(res.status, `${method} ${url}: ${res.body}`).toBe(200);
  return res.json;
}
/** A user's row as the refusals must leave it. */
const userRow = (email: string) =>
  db.get<{ suspended: number; removed_at: string | null; source: string; external_id: string | null; source_dn: string | null; first_name: string }>(
    'SELECT suspended, removed_at, source, external_id, source_dn, first_name FROM users WHERE email = ?',
    [email],
  );
const cardsOf = (email: string) =>
  db.column<string>('SELECT s.number FROM smartcards s JOIN users u USING (email_id) WHERE u.email = ? ORDER BY s.position', [email]);
const membersOf = (group: string) =>
  db.column<string>(
    'SELECT u.email FROM users u JOIN group_members m ON m.member_id = u.email_id JOIN groups g USING (group_id) WHERE g.name = ? ORDER BY u.email',
    [group],
  );

beforeAll(async () => {
  ({ db, location } = await newServiceDb(tmp.path));
  const apiKeys = new ApiKeys(db);
  for (const rank of ['SUPER', 'ADMIN', 'REGULAR'] as const) keys[rank] = await apiKeys.create(rank, 0, Date.now());
  app = testService(db, { identity: IDENTITY, ldapSync: sync, console: CONSOLE });
  await app.ready();
  // The same database without server.identity: no LDAP source.
  bare = testService(db);
  await bare.ready();

  for (const name of ['Staff', 'Engineering', 'Sales']) groupIds[name] = (await ok('POST', '/groups', { type: 'users', name, add_ids: [] })).group_id as number;
  const people = ['alice', 'carl', 'lena', 'liam', 'sam', 'olga'].map((n) => `${n}@example.org`);
  await ok('POST', '/invites', { emails: people, no_email: true });
  for (const u of (await call('GET', '/multipleusers')).json as unknown as Array<{ email: string; email_id: number }>) ids[u.email.split('@')[0]!] = u.email_id;
  await ok('PUT', '/groups', { type: 'users', group_id: groupIds.Engineering, add_ids: [ids.lena, ids.liam] });
  await ok('PUT', '/groups', { type: 'users', group_id: groupIds.Sales, add_ids: [ids.sam] });
  await ok('PUT', '/modifysmartcard', { email_id: ids.sam, smartcards: [{ number: '4400001', label: 'SCIM' }] });
  await ok('PUT', '/modifysmartcard', { email_id: ids.lena, smartcards: [{ number: '4400002', label: 'badge' }] });
  // As the LDAP sync and SCIM leave them: lena, liam and olga from LDAP, sam from SCIM; Engineering LDAP's, Sales SCIM's.
  const fromLdap: Array<[string, string]> = [
    ['lena', 'CN=Lena Lund,OU=Staff,DC=example,DC=org'],
    ['liam', 'CN=Liam Lee,OU=Staff,DC=example,DC=org'],
    ['olga', 'CN=Olga Olsen,OU=Staff,DC=example,DC=org'],
  ];
  for (const [who, dn] of fromLdap) {
    await db.run("UPDATE users SET source = 'ldap', external_id = ?, source_dn = ?, source_seen_at = ?, first_name = ? WHERE email = ?", [
      `guid-${who}`,
      dn,
      Date.now(),
      `${who[0]!.toUpperCase()}${who.slice(1)}`,
      `${who}@example.org`,
    ]);
  }
  await db.run("UPDATE users SET source = 'scim', external_id = 'okta-00u1sam' WHERE email = 'sam@example.org'");
  await db.run(
    "UPDATE groups SET source = 'ldap', external_id = 'guid-eng', source_dn = 'CN=Engineering,OU=Door Groups,DC=example,DC=org' WHERE name = 'Engineering'",
  );
  await db.run("UPDATE groups SET source = 'scim', external_id = 'okta-grp-sales' WHERE name = 'Sales'");
  // A directory change after them: their revision is issued (the fingerprints of what a door sees did not move).
  await ok('PUT', '/modifyallusernames', { email_id: ids.carl, computer_usernames: [{ computer_username: 'carl' }] });
});

afterAll(async () => {
  await app?.close();
  await bare?.close();
  await db?.close();
  tmp.cleanup();
});

describe('which source owns a user, in the API', () => {
  it("GET /multipleusers and GET /user give each user's source; GET /directory gives none, and a claim issues no revision", async () => {
    const list = (await call('GET', '/multipleusers')).json as unknown as Array<{ email: string; source: string }>;
    expect(Object.fromEntries(list.map((u) => [u.email, u.source]))).toEqual({
      'alice@example.org': 'local',
      'carl@example.org': 'local',
      'lena@example.org': 'ldap',
      'liam@example.org': 'ldap',
      'sam@example.org': 'scim',
      'olga@example.org': 'ldap',
    });
    expect((await ok('GET', `/user?email_id=${ids.lena}`)).source).toBe('ldap');
    expect((await ok('GET', `/user?email_id=${ids.alice}`)).source).toBe('local');

    // The doors' answer: the list form and the detail without `source`, so a claim changes none of its bytes.
    const full = await ok('GET', '/directory');
    const users = full.users as Array<Record<string, unknown>>;
    expect(users.map((u) => u.email)).toContain('lena@example.org');
    expect(users.every((u) => !('source' in u))).toBe(true);
    expect(Object.values(full.details as Record<string, object>).every((d) => !('source' in d))).toBe(true);

    // SCIM claims carl (a PUT to a local user): what a door sees of him is the same, so only alice's change is news.
    await db.run("UPDATE users SET source = 'scim', external_id = 'okta-00u1carl' WHERE email = 'carl@example.org'");
    await ok('PUT', '/modifysmartcard', { email_id: ids.alice, smartcards: [{ number: '4400100', label: 'badge' }] });
    const since = await ok('GET', `/directory?since=${full.revision}&history=${full.history}&tag=${full.tag}`);
    expect(since.full).toBe(false);
    expect(since.revision).toBe((full.revision as number) + 1);
    expect((since.users as Array<{ email: string }>).map((u) => u.email)).toEqual(['alice@example.org']);
    expect((await ok('GET', `/user?email_id=${ids.carl}`)).source).toBe('scim');
    await db.run("UPDATE users SET source = 'local', external_id = NULL WHERE email = 'carl@example.org'");
  });
});

describe('what a source owns is refused elsewhere (409), nothing changed', () => {
  it('PUT /togglesuspension and DELETE /user of an LDAP or a SCIM user, saying where to do it; a local user as before', async () => {
    const suspend = await call('PUT', '/togglesuspension', { email_id: ids.lena });
    expect(suspend).toMatchObject({
      status: 409,
      json: { error: `lena@example.org is managed by LDAP (${LDAP_URL}): suspend or enable the account there; the next sync brings it here` },
    });
    const remove = await call('DELETE', '/user?email=sam@example.org');
    expect(remove).toMatchObject({
      status: 409,
      json: { error: 'sam@example.org is managed by the identity provider (SCIM): disable or delete the account there; the provider sends it here' },
    });
    expect((await call('DELETE', `/user?email_id=${ids.liam}`)).status).toBe(409);
    expect(await userRow('lena@example.org')).toMatchObject({ suspended: 0, removed_at: null, source: 'ldap', external_id: 'guid-lena' });
    expect(await userRow('sam@example.org')).toMatchObject({ suspended: 0, removed_at: null, source: 'scim' });
    expect(await userRow('liam@example.org')).toMatchObject({ removed_at: null });
    expect(await membersOf('Engineering')).toEqual(['lena@example.org', 'liam@example.org']);
    expect(await cardsOf('sam@example.org')).toEqual(['4400001']);

    // The service's own users are the service's to suspend.
    expect((await ok('PUT', '/togglesuspension', { email_id: ids.alice })).success).toBe('alice@example.org is now SUSPENDED');
    expect((await ok('PUT', '/togglesuspension', { email_id: ids.alice })).success).toBe('alice@example.org is now ACTIVE');
  });

  it('PUT /modifysmartcard(s): refused where the source maps cards (SCIM here), taken where it does not (LDAP here)', async () => {
    for (const path of ['/modifysmartcard', '/modifysmartcards']) {
      const refused = await call('PUT', path, { email_id: ids.sam, smartcards: [{ number: '4400009' }] });
      expect(refused).toMatchObject({
        status: 409,
        json: {
          error:
            "sam@example.org is managed by the identity provider (SCIM): change the card in the person's entry there (the attribute the site maps); the provider sends it here",
        },
      });
    }
    expect(await cardsOf('sam@example.org')).toEqual(['4400001']);
    await ok('PUT', '/modifysmartcard', { email_id: ids.lena, smartcards: [{ number: '4400002', label: 'badge' }, { number: '4400003' }] });
    expect(await cardsOf('lena@example.org')).toEqual(['4400002', '4400003']);
  });

  it("PUT /groups: a source's group keeps its members; a local group takes anyone, SCIM's and LDAP's users too", async () => {
    const add = await call('PUT', '/groups', { type: 'users', group_id: groupIds.Engineering, add_ids: [ids.alice] });
    expect(add).toMatchObject({
      status: 409,
      json: { error: `group Engineering is managed by LDAP (${LDAP_URL}): change the group's members there; the next sync brings it here` },
    });
    const del = await call('PUT', '/groups', { type: 'users', group_id: groupIds.Sales, del_ids: [ids.sam] });
    expect(del).toMatchObject({
      status: 409,
      json: { error: "group Sales is managed by the identity provider (SCIM): change the group's members there; the provider sends it here" },
    });
    expect(await membersOf('Engineering')).toEqual(['lena@example.org', 'liam@example.org']);
    expect(await membersOf('Sales')).toEqual(['sam@example.org']);
    // Asking for no change is no change: answered as before.
    expect((await call('PUT', '/groups', { type: 'users', group_id: groupIds.Engineering })).status).toBe(200);

    await ok('PUT', '/groups', { type: 'users', group_id: groupIds.Staff, add_ids: [ids.alice, ids.lena, ids.sam] });
    expect(await membersOf('Staff')).toEqual(['alice@example.org', 'lena@example.org', 'sam@example.org']);
    await ok('PUT', '/groups', { type: 'users', group_id: groupIds.Staff, del_ids: [ids.lena] });
    expect(await membersOf('Staff')).toEqual(['alice@example.org', 'sam@example.org']);
  });

  it("POST /invites naming a source's group: 409, nobody invited, no mail queued", async () => {
    const mails = await db.value<number | string>('SELECT count(*) FROM mail_outbox');
    const invite = await call('POST', '/invites', {
      emails: ['newcomer@example.org'],
      groups: [
        { id: groupIds.Staff, name: 'Staff' },
        { id: groupIds.Engineering, name: 'Engineering' },
      ],
    });
    expect(invite).toMatchObject({
      status: 409,
      json: { error: `group Engineering is managed by LDAP (${LDAP_URL}): change the group's members there; the next sync brings it here` },
    });
    expect(await userRow('newcomer@example.org')).toBeUndefined();
    expect(await db.value<number | string>('SELECT count(*) FROM mail_outbox')).toEqual(mails);
    const local = await ok('POST', '/invites', { emails: ['newcomer@example.org'], groups: [{ id: groupIds.Staff }], no_email: true });
    expect(local.added).toEqual(['newcomer@example.org']);
  });

  it('POST /magiclinkadmin giving a card to a user whose cards the source maps: 409, no link, no card; without a card it is made', async () => {
    const links = await db.value<number | string>('SELECT count(*) FROM guest_links');
    const refused = await call('POST', '/magiclinkadmin', {
      email_list: ['sam@example.org'],
      resource_id_list: [12],
      name: 'Sam visits',
      smartcards: [{ number: '7700009', label: 'visitor' }],
      send_email: false,
    });
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatch(/^sam@example\.org is managed by the identity provider \(SCIM\): change the card/);
    expect(await db.value<number | string>('SELECT count(*) FROM guest_links')).toEqual(links);
    expect(await cardsOf('sam@example.org')).toEqual(['4400001']);
    expect(
      (await call('POST', '/magiclinkadmin', { email_list: ['sam@example.org'], resource_id_list: [12], name: 'Sam visits', send_email: false })).status,
    ).toBe(200);
  });

  it('a user a source removed, invited again at the service, comes back local: no source claims them by its old keys', async () => {
    await db.run("UPDATE users SET removed_at = '2026-01-01 00:00:00', suspended = 1 WHERE email = 'olga@example.org'");
    const again = await ok('POST', '/invites', { emails: ['olga@example.org'], no_email: true });
    expect(again.added).toEqual(['olga@example.org']);
    expect(await userRow('olga@example.org')).toMatchObject({ suspended: 0, removed_at: null, source: 'local', external_id: null, source_dn: null });
    expect((await ok('GET', `/user?email_id=${ids.olga}`)).source).toBe('local');
    expect((await ok('PUT', '/togglesuspension', { email_id: ids.olga })).success).toBe('olga@example.org is now SUSPENDED');
  });
});

/** A sync run as stored by the LDAP sync (identity_sync_runs), its id answered. */
async function storeRun(run: {
  started: number;
  outcome: SyncRunAnswer['outcome'];
  reason?: string;
  counts?: object;
  wouldSuspend?: number;
  sample?: string[];
}) {
  return Number(
    await db.value(
      `INSERT INTO identity_sync_runs (source, trigger, started_at, finished_at, outcome, reason, counts, would_suspend, sample)
         VALUES ('ldap', 'schedule', ?, ?, ?, ?, ?, ?, ?) RETURNING run_id`,
      [
        run.started,
        run.outcome === 'running' ? null : run.started + 4_000,
        run.outcome,
        run.reason ?? null,
        JSON.stringify(run.counts ?? {}),
        run.wouldSuspend ?? null,
        run.sample ? JSON.stringify(run.sample) : null,
      ],
    ),
  );
}
const utc = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
const T0 = Date.UTC(2026, 4, 4, 8, 0, 0);
const HELD_REASON =
  'would suspend 3 of 3 users from LDAP (over maxSuspendShare 5 %): check users.baseDn and users.filter, then apply with confirm_suspensions=3';

describe('GET /identity-sources and POST /identity-sources/ldap/sync', () => {
  it("answers each source's users and groups, the LDAP server, the last ten syncs newest first, the last good one and the next", async () => {
    await db.run('DELETE FROM identity_sync_runs');
    for (let i = 0; i < 11; i++) {
      await storeRun({ started: T0 + i * 900_000, outcome: 'ok', counts: { entries: 3, groups: 1, updated: i } });
    }
    const failed = await storeRun({
      started: T0 + 11 * 900_000,
      outcome: 'failed',
      reason: 'cannot bind as CN=door-agent,OU=Service Accounts,DC=example,DC=org: invalid credentials',
    });
    await db.run("DELETE FROM identity_sync_state WHERE source = 'ldap'");
    await db.run("INSERT INTO identity_sync_state (source, last_ok_at, next_at) VALUES ('ldap', ?, ?)", [T0 + 10 * 900_000 + 4_000, T0 + 12 * 900_000]);

    const answer = await ok('GET', '/identity-sources');
    // lena and liam from LDAP, sam from SCIM; olga is local again (invited after LDAP removed her).
    const users = await db.value<number | string>('SELECT count(*) FROM users WHERE removed_at IS NULL');
    expect(answer.local).toEqual({ users: Number(users) - 3, groups: 1 });
    expect(answer.scim).toEqual({ enabled: true, users: 1, groups: 1 });
    const ldap = answer.ldap as Record<string, unknown> & { recent: SyncRunAnswer[]; last: SyncRunAnswer };
    expect(ldap).toMatchObject({
      enabled: true,
      url: LDAP_URL,
      users: 2,
      groups: 1,
      last_ok_at: utc(T0 + 10 * 900_000 + 4_000),
      next_at: utc(T0 + 12 * 900_000),
    });
    expect(ldap.recent).toHaveLength(10);
    expect(ldap.recent[0]).toEqual(ldap.last);
    expect(ldap.last).toEqual({
      run_id: failed,
      trigger: 'schedule',
      started_at: utc(T0 + 11 * 900_000),
      finished_at: utc(T0 + 11 * 900_000 + 4_000),
      outcome: 'failed',
      reason: 'cannot bind as CN=door-agent,OU=Service Accounts,DC=example,DC=org: invalid credentials',
      counts: NO_COUNTS,
      would_suspend: null,
      sample: null,
    });
    expect(ldap.recent.map((r) => r.counts.updated)).toEqual([0, 10, 9, 8, 7, 6, 5, 4, 3, 2]);
    expect(ldap.recent[1]!.counts).toEqual(Object.assign({}, NO_COUNTS, { entries: 3, groups: 1, updated: 10 }));

    // A group gone from LDAP (emptied, kept) is no longer counted as LDAP's.
    await db.run("UPDATE groups SET source_gone_at = ? WHERE name = 'Engineering'", [Date.now()]);
    expect(((await ok('GET', '/identity-sources')).ldap as { groups: number }).groups).toBe(0);
    await db.run("UPDATE groups SET source_gone_at = NULL WHERE name = 'Engineering'");

    expect((await call('GET', '/identity-sources', undefined, keys.REGULAR)).status).toBe(403);
  });

  it('runs the sync with who asked and confirm_suspensions, answering its run whatever its outcome; 409 while another runs', async () => {
    const held: SyncRunAnswer = {
      run_id: 99,
      trigger: 'API key (ADMIN)',
      started_at: utc(T0),
      finished_at: utc(T0 + 2_000),
      outcome: 'held',
      reason: HELD_REASON,
      counts: Object.assign({}, NO_COUNTS, { entries: 0 }),
      would_suspend: 3,
      sample: ['lena@example.org', 'liam@example.org', 'olga@example.org'],
    };
    sync.next = async () => held;
    expect(await ok('POST', '/identity-sources/ldap/sync')).toEqual(held);
    const applied = Object.assign({}, held, { outcome: 'ok', reason: null, would_suspend: null, sample: null });
    sync.next = async () => applied;
    expect(await ok('POST', '/identity-sources/ldap/sync', { confirm_suspensions: 3 })).toEqual(applied);
    expect(sync.asked.slice(-2)).toEqual([{ trigger: 'API key (ADMIN)' }, { trigger: 'API key (ADMIN)', confirmSuspensions: 3 }]);

    const asked = sync.asked.length;
    for (const bad of [-1, 1.5, 'three']) {
      const res = await call('POST', '/identity-sources/ldap/sync', { confirm_suspensions: bad });
      expect(res.status, String(bad)).toBe(400);
      expect(res.json.error).toMatch(/^confirm_suspensions: /);
    }
    expect((await call('POST', '/identity-sources/ldap/sync', {}, keys.REGULAR)).status).toBe(403);
    expect(sync.asked).toHaveLength(asked);

    sync.next = async () => {
      throw new BadRequest('an LDAP sync is running (started by console: admin@example.org): wait for it', 409);
    };
    expect(await call('POST', '/identity-sources/ldap/sync')).toMatchObject({
      status: 409,
      json: { error: 'an LDAP sync is running (started by console: admin@example.org): wait for it' },
    });
  });

  it('without server.identity.ldap: POST is 404 saying so, and GET says LDAP is not enabled', async () => {
    expect(await call('POST', '/identity-sources/ldap/sync', undefined, keys.ADMIN, bare)).toMatchObject({
      status: 404,
      json: { error: 'no LDAP source: server.identity.ldap is not configured' },
    });
    const answer = await call('GET', '/identity-sources', undefined, keys.ADMIN, bare);
    expect(answer.status).toBe(200);
    expect(answer.json.scim).toMatchObject({ enabled: false, users: 1 });
    expect(answer.json.ldap).toMatchObject({ enabled: false, url: null, users: 2, next_at: null });
  });
});

describe('the console', () => {
  const cookies: Record<'ADMIN' | 'REGULAR', string> = { ADMIN: '', REGULAR: '' };
  /** A request as the browser on the console's public address sends it (a form, from this origin). */
  async function browser(as: 'ADMIN' | 'REGULAR', method: 'GET' | 'POST', url: string, form?: Record<string, string>) {
    const headers: Record<string, string> = { host: 'doors.example.org' };
    if (cookies[as]) headers.cookie = `door_console=${cookies[as]}`;
    if (method === 'POST') Object.assign(headers, { origin: PUBLIC_URL, 'content-type': 'application/x-www-form-urlencoded' });
    const res = await app.inject({ method, url, headers, ...(form ? { payload: new URLSearchParams(form).toString() } : {}) });
    return { status: res.statusCode, location: res.headers.location, cookie: res.headers['set-cookie'], body: res.body };
  }
  const csrfOf = (body: string) => /name="csrf" value="([^"]+)"/.exec(body)![1]!;
  /** The page after an action: where it went back to, with its message. */
  const pageAfter = async (as: 'ADMIN' | 'REGULAR', res: { status: number; location?: string | string[] | undefined }) => {
    expect(res.status).toBe(303);
    return (await browser(as, 'GET', String(res.location))).body;
  };
  beforeAll(async () => {
    for (const rank of ['ADMIN', 'REGULAR'] as const) {
      const signedIn = await browser(rank, 'POST', '/console/signin', { api_key: keys[rank] });
      cookies[rank] = /door_console=([^;]+)/.exec(String(signedIn.cookie))![1]!;
    }
  });

  it('People shows who manages each person, and leaves out what a source owns, saying where to change it', async () => {
    const found = await browser('ADMIN', 'GET', '/console/people?q=example.org');
    expect(found.status).toBe(200);
    const rowOf = (name: string) => found.body.split('<tr>').find((r) => r.includes(`>${name}</a>`))!;
    expect(rowOf('Lena')).toContain('<span class="badge" title="managed by LDAP">LDAP</span>');
    expect(rowOf('sam')).toContain('<span class="badge" title="managed by SCIM">SCIM</span>');
    expect(rowOf('alice')).not.toMatch(/>(LDAP|SCIM)</);
    // A source's group takes no invitation.
    expect(found.body).toContain(`<option value="${groupIds.Staff}">Staff</option>`);
    expect(found.body).not.toContain('>Engineering</option>');

    const lena = (await browser('ADMIN', 'GET', `/console/people/${ids.lena}`)).body;
    expect(lena).toContain(`<dd id="person-source">LDAP (${LDAP_URL}) · <code>CN=Lena Lund,OU=Staff,DC=example,DC=org</code></dd>`);
    expect(lena).toContain(`lena@example.org is managed by LDAP (${LDAP_URL}): suspend or enable the account there; the next sync brings it here`);
    expect(lena).not.toContain('value="suspend"');
    // LDAP maps no cards here: they stay at the service.
    expect(lena).toContain('value="add_card"');
    expect(lena).toContain('value="remove_card"');

    const sam = (await browser('ADMIN', 'GET', `/console/people/${ids.sam}`)).body;
    expect(sam).toContain('<dd id="person-source">the identity provider (SCIM)</dd>');
    expect(sam).not.toContain('value="suspend"');
    expect(sam).not.toContain('value="add_card"');
    expect(sam).not.toContain('value="remove_card"');
    expect(sam).toContain('sam@example.org is managed by the identity provider (SCIM): change the card in the person&#39;s entry there');

    const alice = (await browser('ADMIN', 'GET', `/console/people/${ids.alice}`)).body;
    expect(alice).toContain('<dd id="person-source">the service (API and console)</dd>');
    expect(alice).toContain('value="suspend"');
    expect(alice).not.toContain('owned-note');

    // A form drawn before the claim still meets the API's refusal, shown as the page's message; nothing changed.
    const csrf = csrfOf(alice);
    const refused = await pageAfter('ADMIN', await browser('ADMIN', 'POST', `/console/people/${ids.lena}`, { csrf, action: 'suspend' }));
    expect(refused).toContain(`<p class="flash error" role="alert">lena@example.org is managed by LDAP (${LDAP_URL}): suspend or enable the account`);
    expect(await userRow('lena@example.org')).toMatchObject({ suspended: 0 });
  });

  it('Identity lists the sources and the syncs; Sync now and, for a held sync, Apply with the people it would suspend', async () => {
    const first = await browser('ADMIN', 'GET', '/console/identity');
    expect(first.status).toBe(200);
    expect(first.body).toContain('<a href="/console/identity" aria-current="page">Identity</a>');
    expect(first.body).toContain(`<code>${LDAP_URL}</code>`);
    expect(first.body).toContain('cannot bind as CN=door-agent,OU=Service Accounts,DC=example,DC=org: invalid credentials');
    expect(first.body).toMatch(/<tr id="sync-run-\d+">/);
    expect(first.body).not.toContain('Apply:');
    const csrf = csrfOf(first.body);

    // Sync now: the stand-in holds it, as a sync that would suspend too many does, and stores its run.
    sync.next = async (request) => {
      const runId = await storeRun({
        started: Date.now(),
        outcome: 'held',
        reason: HELD_REASON,
        wouldSuspend: 3,
        sample: ['lena@example.org', 'liam@example.org'],
      });
      return {
        run_id: runId,
        trigger: request.trigger,
        started_at: utc(Date.now()),
        finished_at: utc(Date.now()),
        outcome: 'held',
        reason: HELD_REASON,
        counts: NO_COUNTS,
        would_suspend: 3,
        sample: ['lena@example.org', 'liam@example.org'],
      };
    };
    const heldPage = await pageAfter('ADMIN', await browser('ADMIN', 'POST', '/console/identity/sync', { csrf }));
    expect(sync.asked.at(-1)).toEqual({ trigger: expect.stringMatching(/^console: /) });
    expect(heldPage).toContain(`<p class="flash error" role="alert">LDAP sync held, nothing applied: ${HELD_REASON}</p>`);
    expect(heldPage).toContain('<ul id="ldap-held-sample"><li>lena@example.org</li><li>liam@example.org</li></ul>');
    expect(heldPage).toContain('<input type="hidden" name="confirm_suspensions" value="3">');
    expect(heldPage).toContain('Apply: 3 suspension(s) and emptied group(s)</button>');

    sync.next = async (request) => ({
      run_id: await storeRun({ started: Date.now(), outcome: 'ok', counts: { entries: 1, groups: 1, suspended: 2 } }),
      trigger: request.trigger,
      started_at: utc(Date.now()),
      finished_at: utc(Date.now()),
      outcome: 'ok',
      reason: null,
      counts: Object.assign({}, NO_COUNTS, { entries: 1, groups: 1, suspended: 2 }),
      would_suspend: null,
      sample: null,
    });
    const applied = await pageAfter('ADMIN', await browser('ADMIN', 'POST', '/console/identity/sync', { csrf, confirm_suspensions: '3' }));
    expect(sync.asked.at(-1)).toMatchObject({ confirmSuspensions: 3 });
    expect(applied).toContain('<p class="flash ok" role="status">LDAP sync done: 2 suspended (1 entry and 1 group read).</p>');
    expect(applied).not.toContain('Apply:');

    // Without the form's token: refused before the sync is asked.
    const asked = sync.asked.length;
    expect((await browser('ADMIN', 'POST', '/console/identity/sync', { csrf: 'forged' })).status).toBe(403);
    expect(sync.asked).toHaveLength(asked);
  });

  it('a REGULAR session is not offered the Identity page, and is refused it', async () => {
    const people = await browser('REGULAR', 'GET', '/console/people');
    expect(people.status).toBe(200);
    expect(people.body).not.toContain('href="/console/identity"');
    const page = await browser('REGULAR', 'GET', '/console/identity');
    expect(page.status).toBe(403);
    expect(page.body).toContain('This needs rank ADMIN: you are signed in as REGULAR.');
  });
});

describe('door-agent service identity release', () => {
  it('gives an LDAP user back to the service, fields kept; a local or unknown user is an error saying so', () => {
    const config = join(tmp.path, 'config.yaml');
    writeFileSync(
      config,
      `server:
  listen: 127.0.0.1:0
  dataDir: ${tmp.path}
${location.engine === 'postgres' ? `  database: { url: "${location.url}", passwordFile: ${location.passwordFile} }\n` : ''}  resources:
    - { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door }
`,
    );
    const released = runCli(['service', 'identity', 'release', '--email', 'Liam@Example.org', '--config', config]);
    expect(released.stderr).toBe('');
    expect(released).toMatchObject({ status: 0, stdout: 'liam@example.org is now managed at the service (was LDAP)\n' });

    const again = runCli(['service', 'identity', 'release', '--email', 'liam@example.org', '--config', config]);
    expect(again).toMatchObject({ status: 1, stdout: '', stderr: 'door-agent: liam@example.org is already managed at the service: nothing to release\n' });
    const unknown = runCli(['service', 'identity', 'release', '--email', 'nobody@example.org', '--config', config]);
    expect(unknown).toMatchObject({
      status: 1,
      stderr: 'door-agent: no user with the e-mail address nobody@example.org (a removed user has nothing to release)\n',
    });
    const missing = runCli(['service', 'identity', 'release', '--config', config]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('--email is required');
  });

  it('the released user is the service’s: their name as LDAP left it, suspended at the service, still in the LDAP group', async () => {
    expect(await userRow('liam@example.org')).toMatchObject({ source: 'local', external_id: null, source_dn: null, first_name: 'Liam', removed_at: null });
    expect((await ok('GET', `/user?email_id=${ids.liam}`)).source).toBe('local');
    expect((await ok('PUT', '/togglesuspension', { email_id: ids.liam })).success).toBe('liam@example.org is now SUSPENDED');
    expect(await membersOf('Engineering')).toContain('liam@example.org');
  });
});
