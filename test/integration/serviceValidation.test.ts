import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { inProcessService } from '../support/serviceApp.js';

// What a client written from docs/reference-service.md found refused badly, or not refused: duplicate cards in
// another spelling, GET /directory's 304 without `since`, levels without doors, guests and names in user groups,
// and the words of a few refusals. One service for the file, listening on a loopback port, on a real database of
// the run's engine; every call is an HTTP request.
const tmp = tempDir('door-agent-service-validation-');
const RESOURCES = [
  { resourceId: 3, uuid: '11111111-1111-4111-8111-111111111103', type: 'DOOR' as const, name: 'Lobby' },
  { resourceId: 12, uuid: DOOR_UUID, type: 'DOOR' as const, name: 'Front door' },
  { resourceId: 40, uuid: '11111111-1111-4111-8111-111111111140', type: 'COMPUTER' as const, name: 'Kiosk' },
];
let db: SqlDb;
let app: Awaited<ReturnType<typeof inProcessService>>['app'];
let base: string;
let admin: string;
const ids: Record<string, number> = {};

type Answer = { status: number; body: Record<string, unknown> & { error?: string }; text: string; headers: Headers };

async function request(method: string, path: string, init: { json?: unknown; form?: Record<string, string>; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...init.headers };
  let body: string | undefined;
  if (init.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(init.json);
  } else if (init.form !== undefined) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(init.form).toString();
  }
  const res = await fetch(`${base}${path}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, text, headers: res.headers, body: text === '' ? {} : (JSON.parse(text) as Answer['body']) } satisfies Answer;
}

/** A call with the ADMIN key: `payload` as JSON, or as a form when `form`. */
const call = (method: string, path: string, payload?: Record<string, unknown>, form = false) =>
  request(method, path, {
    headers: { authorization: `Bearer ${admin}` },
    ...(payload === undefined ? {} : form ? { form: payload as Record<string, string> } : { json: payload }),
  });

const ok = async (method: string, path: string, payload?: Record<string, unknown>) => {
  const r = await call(method, path, payload);
  expect(r.status, r.text).toBe(200);
  return r.body;
};

const refused = async (method: string, path: string, payload: Record<string, unknown>, status: number, error: string) => {
  const r = await call(method, path, payload);
  expect({ status: r.status, error: r.body.error }, `${method} ${path} ${JSON.stringify(payload)}`).toEqual({ status, error });
};

const setCards = (emailId: number, smartcards: unknown[], extra: Record<string, unknown> = {}) =>
  call('PUT', '/modifysmartcard', { email_id: emailId, smartcards, ...extra });
const cardsOf = async (emailId: number) => (await ok('GET', `/modifysmartcard?email_id=${emailId}`)).smartcards;
const guestLink = (over: Record<string, unknown>) => ({
  email_list: ['visitor@example.org'],
  resource_id_list: [12],
  name: 'Visit',
  send_email: false,
  ...over,
});

beforeAll(async () => {
  const service = await inProcessService(join(tmp.path, 'service.db'), RESOURCES);
  db = service.db;
  app = service.app;
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  admin = await new ApiKeys(db).create('ADMIN', 0, Date.now());
  const people = ['alice', 'bob', 'carol', 'dan'];
  const invited = await ok('POST', '/invites', { emails: people.map((p) => `${p}@example.org`), no_email: true });
  for (const [i, p] of people.entries()) ids[p] = (invited.add_ids as number[])[i]!;
  const link = await ok('POST', '/magiclinkadmin', guestLink({ email_list: ['guest@example.org'], name: 'Guest pass' }));
  ids.guest = (link.email_ids as Record<string, number>)['guest@example.org']!;
  expect(
    (
      await setCards(ids.alice!, [
        { number: '4213578', label: 'badge' },
        { number: '12:345', label: 'printed' },
        { number: '0123', label: 'PIN' },
      ])
    ).status,
  ).toBe(200);
});
afterAll(async () => {
  await app.close();
  await db.close();
  tmp.cleanup();
});

describe('a card is one card in every spelling the doors read as it (leading zeros dropped)', () => {
  const IN_USE = 'smartcard number(s) already in use: …3578 (set allow_duplicates to allow)';

  it("refuses alice's card to bob with leading zeros, as it refuses it without, on PUT /modifysmartcard, POST /magiclinkadmin and POST /invites", async () => {
    await refused('PUT', '/modifysmartcard', { email_id: ids.bob, smartcards: [{ number: '4213578' }] }, 400, IN_USE);
    await refused('PUT', '/modifysmartcard', { email_id: ids.bob, smartcards: [{ number: '0004213578' }] }, 400, IN_USE);
    await refused(
      'PUT',
      '/modifysmartcard',
      { email_id: ids.bob, smartcards: [{ number: '0012:0345' }] },
      400,
      'smartcard number(s) already in use: …0345 (set allow_duplicates to allow)',
    );
    await refused('POST', '/magiclinkadmin', guestLink({ email_list: ['walk-in@example.org'], smartcards: [{ number: '04213578' }] }), 400, IN_USE);
    await refused(
      'POST',
      '/invites',
      { emails: ['newcomer@example.org'], smartcards: [[{ number: '0004213578' }]], no_email: true },
      400,
      'smartcard number(s) already in use: …3578',
    );
    // Nothing was given or created.
    expect(await cardsOf(ids.bob!)).toEqual([]);
    const users = (await ok('GET', '/multipleusers')) as unknown as Array<{ email: string }>;
    expect(users.map((u) => u.email)).not.toEqual(expect.arrayContaining(['newcomer@example.org']));
    expect(users.map((u) => u.email)).not.toEqual(expect.arrayContaining(['walk-in@example.org']));
  });

  it('with allow_duplicates the card is shared, stored as the operator typed it; alice re-saves her own list in another spelling', async () => {
    expect((await setCards(ids.carol!, [{ number: '0004213578', label: 'spare' }], { allow_duplicates: true })).status).toBe(200);
    expect(await cardsOf(ids.carol!)).toEqual([{ number: '0004213578', label: 'spare' }]);
    const again = await setCards(ids.alice!, [
      { number: '04213578', label: 'badge' },
      { number: '12:345', label: 'printed' },
      { number: '0123', label: 'PIN' },
    ]);
    expect(again.status, again.text).toBe(200);
    const back = await setCards(ids.alice!, [
      { number: '4213578', label: 'badge' },
      { number: '12:345', label: 'printed' },
      { number: '0123', label: 'PIN' },
    ]);
    expect(back.status, back.text).toBe(200);
    expect((await setCards(ids.carol!, [])).status).toBe(200);
  });

  it("a PIN keeps its leading zeros: alice's PIN 0123 is refused to bob, 123 is another PIN, and a card 0123 is no PIN", async () => {
    await refused(
      'PUT',
      '/modifysmartcard',
      { email_id: ids.bob, smartcards: [{ number: '0123', label: 'PIN' }] },
      400,
      'smartcard number(s) already in use: …0123 (set allow_duplicates to allow)',
    );
    expect((await setCards(ids.bob!, [{ number: '123', label: 'PIN' }])).status).toBe(200);
    expect((await setCards(ids.dan!, [{ number: '0123', label: 'locker' }])).status).toBe(200);
    expect((await setCards(ids.bob!, [])).status).toBe(200);
    expect((await setCards(ids.dan!, [])).status).toBe(200);
  });

  it('a number listed twice in one request says so, in any spelling, on each call that assigns cards', async () => {
    const TWICE = 'smartcard number(s) listed twice in this request: …0555';
    await refused(
      'PUT',
      '/modifysmartcard',
      { email_id: ids.bob, smartcards: [{ number: '7770555' }, { number: '0007770555', label: 'spare' }] },
      400,
      `${TWICE} (set allow_duplicates to allow)`,
    );
    await refused(
      'POST',
      '/magiclinkadmin',
      guestLink({ email_list: ['g1@example.org', 'g2@example.org'], smartcards: [{ number: '7770555' }, { number: '07770555' }] }),
      400,
      `${TWICE} (set allow_duplicates to allow)`,
    );
    await refused(
      'POST',
      '/invites',
      { emails: ['h1@example.org', 'h2@example.org'], smartcards: [[{ number: '7770555' }], [{ number: '7770555' }]], no_email: true },
      400,
      TWICE,
    );
    // Both problems in one request are both named.
    await refused(
      'PUT',
      '/modifysmartcard',
      { email_id: ids.bob, smartcards: [{ number: '7770555' }, { number: '7770555' }, { number: '4213578' }] },
      400,
      `${TWICE}; smartcard number(s) already in use: …3578 (set allow_duplicates to allow)`,
    );
  });
});

describe('GET /directory', () => {
  it('without since, If-None-Match naming the current version answers 304 without a body; another version gets everything', async () => {
    const first = await request('GET', '/directory', { headers: { authorization: `Bearer ${admin}` } });
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"dir-\d+-[0-9a-f]{32}-[0-9a-f]{16}"$/);
    const again = await request('GET', '/directory', { headers: { authorization: `Bearer ${admin}`, 'if-none-match': etag } });
    expect({ status: again.status, text: again.text, etag: again.headers.get('etag') }).toEqual({ status: 304, text: '', etag });
    // An old agent's "dir-N" names no history: without since it gets everything.
    const revision = etag.split('-')[1];
    const old = await request('GET', '/directory', { headers: { authorization: `Bearer ${admin}`, 'if-none-match': `"dir-${revision}"` } });
    expect({ status: old.status, full: old.body.full }).toEqual({ status: 200, full: true });
    const stale = await request('GET', '/directory', {
      headers: { authorization: `Bearer ${admin}`, 'if-none-match': etag.replace(/-[0-9a-f]{16}"$/, '-0000000000000000"') },
    });
    expect(stale.status).toBe(200);
  });
});

describe('an access level opens doors', () => {
  it('refuses a resource group without a door member, unless resource_ids gives doors; a level of a mixed group holds only its doors', async () => {
    const computersOnly = (await ok('POST', '/groups', { type: 'resources', name: 'Kiosk room', add_ids: [40] })).group_id as number;
    const empty = (await ok('POST', '/groups', { type: 'resources', resource_type: 'DOOR', name: 'New wing', add_ids: [] })).group_id as number;
    const mixed = (await ok('POST', '/groups', { type: 'resources', name: 'Lobby and kiosk', add_ids: [3, 40] })).group_id as number;
    const noDoor = (id: number, name: string) =>
      `resource_ids, resource_group_id: a level needs doors: group ${id} (${name}) holds no door: add doors to it, or give resource_ids`;
    await refused('POST', '/policies', { name: 'Kiosks only', resource_group_id: computersOnly }, 400, noDoor(computersOnly, 'Kiosk room'));
    await refused('POST', '/policies', { name: 'Nothing yet', resource_group_id: empty }, 400, noDoor(empty, 'New wing'));
    const withDoors = (await ok('POST', '/policies', { name: 'Wing and front', resource_group_id: empty, resource_ids: [12] })).policy_id as number;
    await refused('PUT', '/policies', { policy_id: withDoors, resource_ids: [] }, 400, noDoor(empty, 'New wing'));
    await refused('PUT', '/policies', { policy_id: withDoors, resource_ids: [], resource_group_id: computersOnly }, 400, noDoor(computersOnly, 'Kiosk room'));

    await ok('POST', '/policies', { name: 'Lobby by group', resource_group_id: mixed });
    const levels = (await ok('GET', '/directory')).levels as Array<{ name: string; resource_ids: number[] }>;
    expect(levels.find((l) => l.name === 'Lobby by group')?.resource_ids).toEqual([3]);
    const doors = new Set(RESOURCES.filter((r) => r.type === 'DOOR').map((r) => r.resourceId));
    for (const level of levels) for (const id of level.resource_ids) expect(doors.has(id), `${level.name}: ${id}`).toBe(true);
  });
});

describe('user groups', () => {
  it('GUEST users cannot join them, on POST or PUT /groups', async () => {
    const message = `add_ids: GUEST users cannot join groups (promote them with PUT /promoteguest first): email_id ${ids.guest}`;
    await refused('POST', '/groups', { type: 'users', name: 'Visitors', add_ids: [ids.bob, ids.guest] }, 400, message);
    const group = (await ok('POST', '/groups', { type: 'users', name: 'Cleaners', add_ids: [ids.bob] })).group_id as number;
    await refused('PUT', '/groups', { type: 'users', group_id: group, add_ids: [ids.guest] }, 400, message);
    expect((await ok('GET', `/user?email_id=${ids.guest}`)).policies).toEqual([['Guest pass']]);
    const guests = (await ok('GET', '/multipleusers?user_tag=GUEST')) as unknown as Array<{ email_id: number; groups: string[][] }>;
    expect(guests.find((u) => u.email_id === ids.guest)?.groups).toEqual([]);
  });

  it('two user groups may not share a name (trimmed, in any case); resource groups may', async () => {
    const staff = (await ok('POST', '/groups', { type: 'users', name: 'Staff', add_ids: [] })).group_id as number;
    await refused(
      'POST',
      '/groups',
      { type: 'users', name: '  STAFF ', add_ids: [ids.bob] },
      409,
      `name: a user group named "Staff" already exists (group_id ${staff})`,
    );
    await ok('POST', '/groups', { type: 'resources', name: 'Staff', add_ids: [3] });
    await ok('POST', '/groups', { type: 'resources', name: 'Staff', add_ids: [12] });
    expect(await db.value("SELECT count(*) FROM groups WHERE type = 'users' AND lower(name) = 'staff'")).toBe(1);
  });
});

describe('refusals in words an operator can act on', () => {
  it('an Authorization header that is not "Bearer <key>": 401 saying which form it must have', async () => {
    const expected = { status: 401, error: 'the Authorization header must be "Bearer <key>"' };
    for (const authorization of [`Basic ${Buffer.from(`x:${admin}`).toString('base64')}`, admin, 'Bearer']) {
      const r = await request('GET', '/multipleusers', { headers: { authorization } });
      expect({ status: r.status, error: r.body.error }, authorization.slice(0, 6)).toEqual(expected);
    }
    const none = await request('GET', '/multipleusers');
    expect({ status: none.status, error: none.body.error }).toEqual({ status: 401, error: 'an API key is required' });
  });

  it('a SCIM token outside /scim/v2: 403 saying what it is scoped to', async () => {
    const scim = await new ApiKeys(db).create('ADMIN', 0, Date.now(), 'scim');
    const r = await request('GET', '/multipleusers', { headers: { authorization: `Bearer ${scim}` } });
    expect({ status: r.status, error: r.body.error }).toEqual({
      status: 403,
      error: 'this key is scoped to /scim/v2 (SCIM provisioning) and opens nothing else',
    });
    const wrong = await request('GET', '/multipleusers', { headers: { authorization: `Bearer dak_${'x'.repeat(43)}` } });
    expect({ status: wrong.status, error: wrong.body.error }).toEqual({ status: 401, error: 'API key not valid or expired' });
  });

  it('a "serialized JSON array" that is not JSON says so', async () => {
    const cards = await call('PUT', '/modifysmartcards', { email_id: String(ids.bob), smartcards: 'notjson' }, true);
    expect({ status: cards.status, error: cards.body.error }).toEqual({ status: 400, error: 'smartcards: not valid JSON (expected a serialized JSON array)' });
    const names = await call('PUT', '/modifyallusernames', { email_id: String(ids.bob), computer_usernames: 'bad json' }, true);
    expect({ status: names.status, error: names.body.error }).toEqual({
      status: 400,
      error: 'computer_usernames: not valid JSON (expected a serialized JSON array)',
    });
    const mapping = await call(
      'POST',
      '/magiclinkadmin',
      { ...guestLink({}), email_list: '["walk-in@example.org"]', resource_id_list: '[12]', time_mapping: '[[' },
      true,
    );
    expect(mapping.body.error).toBe('time_mapping: not valid JSON (expected a serialized JSON array)');
  });

  it('a guest link that ends in the past, or never opens, is refused naming why', async () => {
    await refused('POST', '/magiclinkadmin', guestLink({ end_time: '2020-01-01 00:00:00' }), 400, 'end_time: 2020-01-01 00:00:00 is in the past');
    await refused(
      'POST',
      '/magiclinkadmin',
      guestLink({ start_time: '2030-01-02 00:00:00', end_time: '2030-01-01 00:00:00' }),
      400,
      'end_time: 2030-01-01 00:00:00 is not after start_time 2030-01-02 00:00:00',
    );
    const never = 'time_mapping: no weekday has a range (that would never open): give at least one range, or leave time_mapping out for always';
    await refused('POST', '/magiclinkadmin', guestLink({ time_mapping: [[], [], [], [], [], [], []] }), 400, never);
    // The same words as /policies.
    await refused('POST', '/policies', { name: 'Never', resource_ids: [12], time_mapping: [[], [], [], [], [], [], []] }, 400, never);
    expect(await db.value("SELECT count(*) FROM policies WHERE name = 'Visit'")).toBe(0);
  });
});
