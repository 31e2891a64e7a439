import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { DOOR_UUID, SECOND_DOOR_UUID, runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { freePort } from '../support/net.js';
import { inProcessService } from '../support/serviceApp.js';

// Access levels (extension: /policies) on the reference service in this process, on a real database of the run's engine.
const tmp = tempDir('door-agent-policies-');
const RESOURCES = [
  { resourceId: 3, uuid: '11111111-1111-4111-8111-111111111103', type: 'DOOR' as const, name: 'Lobby' },
  { resourceId: 4, uuid: '11111111-1111-4111-8111-111111111104', type: 'DOOR' as const, name: 'Back door' },
  { resourceId: 5, uuid: SECOND_DOOR_UUID, type: 'DOOR' as const, name: 'Garage' },
  { resourceId: 12, uuid: DOOR_UUID, type: 'DOOR' as const, name: 'Front door' },
  { resourceId: 40, uuid: '11111111-1111-4111-8111-111111111140', type: 'COMPUTER' as const, name: 'Kiosk' },
];
let db: SqlDb;
let app: Awaited<ReturnType<typeof inProcessService>>['app'];
const keys = { ADMIN: '', REGULAR: '', DOOR: '' };
let alice: number;
let bob: number;
let carol: number;
let guest: number;
let guestPolicy: number;
let groundFloor: number;
let kioskGroup: number;
let staffGroup: number;

type Answer = { status: number; body: Record<string, unknown> & { error?: string } };

async function call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown, key = keys.ADMIN, form = false): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  let body: string | undefined;
  if (payload !== undefined) {
    headers['content-type'] = form ? 'application/x-www-form-urlencoded' : 'application/json';
    body = form ? new URLSearchParams(payload as Record<string, string>).toString() : JSON.stringify(payload);
  }
  const res = await app.inject({ method, url, headers, payload: body });
  return { status: res.statusCode, body: res.json() };
}

const ok = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) => {
  const r = await call(method, url, payload);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};

type Directory = {
  revision: number;
  full: boolean;
  users: Array<{ email_id: number }>;
  details: Record<string, { policies: string[][] }>;
  levels: Array<Record<string, unknown>>;
  resource_groups: Array<{ name: string; resource_ids: number[] }>;
};
/** Minutes of a day as HH:MM. */
const clock = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
const directory = async (since?: number) => (await ok('GET', since === undefined ? '/directory' : `/directory?since=${since}`)) as unknown as Directory;

/** Everything /policies could have changed, straight from the database. */
const stored = async () => ({
  policies: await db.all('SELECT * FROM policies ORDER BY policy_id'),
  levels: await db.all('SELECT * FROM policy_levels ORDER BY policy_id'),
  members: await db.all('SELECT * FROM policy_members ORDER BY policy_id, email_id'),
});

beforeAll(async () => {
  const service = await inProcessService(join(tmp.path, 'service.db'), RESOURCES);
  db = service.db;
  app = service.app;
  keys.ADMIN = await new ApiKeys(db).create('ADMIN', 0, Date.now());
  keys.REGULAR = await new ApiKeys(db).create('REGULAR', 0, Date.now());
  keys.DOOR = await new ApiKeys(db).create('DOOR', 0, Date.now());
  const invited = await ok('POST', '/invites', { emails: ['alice@example.org', 'bob@example.org', 'carol@example.org'], no_email: true });
  [alice, bob, carol] = invited.add_ids as [number, number, number];
  await ok('POST', '/magiclinkadmin', { email_list: ['visitor@example.org'], resource_id_list: [12], name: 'Visitor', send_email: false });
  const link = await ok('POST', '/magiclinkadmin', { email_list: ['visitor@example.org'], resource_id_list: [12], name: 'Visitor Tuesday', send_email: false });
  guest = (link.email_ids as Record<string, number>)['visitor@example.org']!;
  guestPolicy = (await db.value<number>("SELECT policy_id FROM policies WHERE name = 'Visitor Tuesday'"))!;
  groundFloor = (await ok('POST', '/groups', { type: 'resources', resource_type: 'DOOR', name: 'Ground floor', add_ids: [5, 12] })).group_id as number;
  kioskGroup = (await ok('POST', '/groups', { type: 'resources', resource_type: 'COMPUTER', name: 'Kiosks', add_ids: [40] })).group_id as number;
  staffGroup = (await ok('POST', '/groups', { type: 'users', name: 'Staff', add_ids: [alice] })).group_id as number;
});
afterAll(async () => {
  await app.close();
  await db.close();
  tmp.cleanup();
});

describe('/policies (extension: access levels)', () => {
  it('a round trip: create, list, read one, change, delete', async () => {
    const created = await ok('POST', '/policies', {
      name: 'Night shift',
      email_ids: [alice, alice],
      resource_ids: [4, 3],
      resource_group_id: groundFloor,
      schedule: { mon: ['22:00-06:00'], tue: [' 22:00-06:00 '] },
      start_time: '2026-01-01 00:00:00',
    });
    expect(created.success).toBe('access level Night shift created with 1 member(s)');
    const id = created.policy_id as number;
    const defined = {
      policy_id: id,
      name: 'Night shift',
      resource_ids: [3, 4],
      resource_group: { group_id: groundFloor, name: 'Ground floor' },
      schedule: { mon: ['22:00-06:00'], tue: ['22:00-06:00'], holidays: 'closed' },
      start_time: '2026-01-01 00:00:00',
      end_time: null,
    };
    expect((await ok('GET', '/policies')).policies).toContainEqual({ ...defined, member_count: 1 });
    expect(await ok('GET', `/policies?policy_id=${id}`)).toEqual({ ...defined, member_count: 1, email_ids: [alice] });
    expect((await ok('GET', `/user?email_id=${alice}`)).policies).toEqual([['Night shift']]);

    expect(
      await ok('PUT', '/policies', {
        policy_id: id,
        name: 'Late shift',
        add_ids: [bob, carol],
        del_ids: [alice],
        resource_group_id: null,
        schedule: null,
        start_time: null,
        end_time: '2027-01-01 00:00:00',
      }),
    ).toEqual({ success: 'access level Late shift updated' });
    expect(await ok('GET', `/policies?policy_id=${id}`)).toEqual({
      ...defined,
      name: 'Late shift',
      resource_group: null,
      schedule: null,
      start_time: null,
      end_time: '2027-01-01 00:00:00',
      member_count: 2,
      email_ids: [bob, carol],
    });
    // Only the fields given change.
    await ok('PUT', '/policies', { policy_id: id, resource_ids: [12] });
    expect(await ok('GET', `/policies?policy_id=${id}`)).toMatchObject({
      name: 'Late shift',
      resource_ids: [12],
      end_time: '2027-01-01 00:00:00',
      email_ids: [bob, carol],
    });
    expect((await ok('GET', `/user?email_id=${alice}`)).policies).toEqual([]);
    expect((await ok('GET', `/user?email_id=${bob}`)).policies).toEqual([['Late shift']]);

    expect(await ok('DELETE', `/policies?policy_id=${id}`)).toEqual({ success: 'access level Late shift deleted' });
    expect(await call('GET', `/policies?policy_id=${id}`)).toMatchObject({ status: 404 });
    expect(((await ok('GET', '/policies')).policies as Array<{ policy_id: number }>).map((p) => p.policy_id)).not.toContain(id);
    expect((await ok('GET', `/user?email_id=${bob}`)).policies).toEqual([]);
    expect(await db.value('SELECT count(*) FROM policy_members WHERE policy_id = ?', [id])).toBe(0);
  });

  it('takes its parameters from a form or the query string too (lists and schedules as JSON text, "null" clears)', async () => {
    const created = await call(
      'POST',
      '/policies',
      { name: 'Form level', email_ids: `[${bob}]`, resource_ids: '[3]', schedule: '{"sat":["09:00-13:00"],"holidays":"open"}' },
      keys.ADMIN,
      true,
    );
    expect(created.status, created.body.error).toBe(200);
    const id = created.body.policy_id as number;
    expect(await ok('GET', `/policies?policy_id=${id}`)).toMatchObject({
      resource_ids: [3],
      schedule: { sat: ['09:00-13:00'], holidays: 'open' },
      email_ids: [bob],
    });
    await ok('PUT', `/policies?policy_id=${id}&schedule=null&resource_group_id=${groundFloor}&add_ids=[${carol}]`);
    expect(await ok('GET', `/policies?policy_id=${id}`)).toMatchObject({ schedule: null, resource_group: { group_id: groundFloor }, email_ids: [bob, carol] });
    await ok('DELETE', `/policies?policy_id=${id}`);
  });

  it("converts a time_mapping (the guest links' shape) to the schedule format", async () => {
    const mapping = [
      [],
      [
        [8, 12],
        [12, 18],
      ],
      [[0, 24]],
      [
        [10, 12],
        [8, 11],
      ],
      [],
      [],
      [[22, 24]],
    ];
    const id = (await ok('POST', '/policies', { name: 'Mapped', resource_ids: [3], time_mapping: mapping })).policy_id as number;
    const converted = { mon: ['08:00-18:00'], tue: ['00:00-24:00'], wed: ['08:00-12:00'], sat: ['22:00-24:00'], holidays: 'closed' };
    expect((await ok('GET', `/policies?policy_id=${id}`)).schedule).toEqual(converted);
    // As JSON text from a form; null: always.
    const form = await call('PUT', '/policies', { policy_id: String(id), time_mapping: JSON.stringify([[[0, 24]], [], [], [], [], [], []]) }, keys.ADMIN, true);
    expect(form.status, form.body.error).toBe(200);
    expect((await ok('GET', `/policies?policy_id=${id}`)).schedule).toEqual({ sun: ['00:00-24:00'], holidays: 'closed' });
    await ok('PUT', '/policies', { policy_id: id, time_mapping: null });
    expect((await ok('GET', `/policies?policy_id=${id}`)).schedule).toBeNull();
    await ok('DELETE', `/policies?policy_id=${id}`);
  });

  it('needs an ADMIN key: REGULAR and DOOR keys get 403 on every route', async () => {
    const id = (await ok('POST', '/policies', { name: 'Ranked', resource_ids: [3] })).policy_id as number;
    const before = await stored();
    for (const key of [keys.REGULAR, keys.DOOR]) {
      for (const [method, url, payload] of [
        ['POST', '/policies', { name: 'Sneaky', resource_ids: [3] }],
        ['PUT', '/policies', { policy_id: id, add_ids: [alice] }],
        ['GET', '/policies', undefined],
        ['GET', `/policies?policy_id=${id}`, undefined],
        ['DELETE', `/policies?policy_id=${id}`, undefined],
      ] as const) {
        const r = await call(method, url, payload, key);
        expect(r.status, `${method} ${url}`).toBe(403);
        expect(r.body.error).toMatch(
          key === keys.REGULAR ? /needs an API key of rank ADMIN or higher \(this key: REGULAR\)/ : /a DOOR key only reads \(GET\)|rank ADMIN/,
        );
      }
    }
    expect(await stored()).toEqual(before);
    await ok('DELETE', `/policies?policy_id=${id}`);
  });

  it('refuses every bad input with a message naming the field, and changes nothing', async () => {
    const taken = (await ok('POST', '/policies', { name: 'Day staff', email_ids: [alice], resource_ids: [3], start_time: '2026-03-01 00:00:00' }))
      .policy_id as number;
    const other = (await ok('POST', '/policies', { name: 'Cleaners', resource_ids: [4] })).policy_id as number;
    const where = { resource_ids: [3] };
    const cases: Array<[method: 'POST' | 'PUT' | 'DELETE', payload: Record<string, unknown>, status: number, error: string | RegExp]> = [
      ['POST', { ...where }, 400, 'name: required (expected string)'],
      ['POST', { name: '  ', ...where }, 400, 'name: a name of 1 to 100 characters'],
      ['POST', { name: 'x'.repeat(101), ...where }, 400, 'name: a name of 1 to 100 characters'],
      ['POST', { name: 'day STAFF', ...where }, 409, `name: an access level named "Day staff" already exists (policy_id ${taken})`],
      ['POST', { name: 'N', ...where, email_ids: [alice, 99999, 99998] }, 400, 'email_ids: no user with email_id 99999, 99998'],
      [
        'POST',
        { name: 'N', ...where, email_ids: [bob, guest] },
        400,
        `email_ids: GUEST users cannot hold policies (promote them with PUT /promoteguest first): email_id ${guest}`,
      ],
      ['POST', { name: 'N', ...where, email_ids: 'alice' }, 400, 'email_ids: not valid JSON (expected a serialized JSON array)'],
      ['POST', { name: 'N', resource_ids: [3, 77] }, 400, 'resource_ids: not doors of this organization (server.resources): 77'],
      ['POST', { name: 'N', resource_ids: [40] }, 400, 'resource_ids: not doors of this organization (server.resources): 40'],
      ['POST', { name: 'N', resource_group_id: 999 }, 400, 'resource_group_id: no resource group with group_id 999'],
      ['POST', { name: 'N', resource_group_id: staffGroup }, 400, `resource_group_id: no resource group with group_id ${staffGroup}`],
      ['POST', { name: 'N', resource_group_id: kioskGroup }, 400, `resource_group_id: group ${kioskGroup} (Kiosks) is a group of computers, not doors`],
      ['POST', { name: 'N' }, 400, 'resource_ids, resource_group_id: a level needs doors: give resource_ids, resource_group_id or both'],
      ['POST', { name: 'N', resource_ids: [] }, 400, /^resource_ids, resource_group_id: a level needs doors/],
      ['POST', { name: 'N', ...where, schedule: { mon: ['08:00-12:00', '18:00-25:00'] } }, 400, 'schedule.mon[1]: "18:00-25:00" is past 24:00'],
      ['POST', { name: 'N', ...where, schedule: { fri: ['22:00-24:30'] } }, 400, 'schedule.fri[0]: "22:00-24:30" is past 24:00'],
      ['POST', { name: 'N', ...where, schedule: { fri: ['24:00-02:00'] } }, 400, 'schedule.fri[0]: "24:00-02:00" starts at 24:00: write 00:00 on the next day'],
      ['POST', { name: 'N', ...where, schedule: { wed: ['10:00-10:00'] } }, 400, 'schedule.wed[0]: "10:00-10:00" is empty (start and end are the same)'],
      ['POST', { name: 'N', ...where, schedule: { wed: ['10:60-11:00'] } }, 400, 'schedule.wed[0]: "10:60-11:00": minutes run from 00 to 59'],
      ['POST', { name: 'N', ...where, schedule: { wed: ['9-17'] } }, 400, 'schedule.wed[0]: "9-17": expected a range "HH:MM-HH:MM" (e.g. "07:30-18:00")'],
      ['POST', { name: 'N', ...where, schedule: { wed: [900] } }, 400, 'schedule.wed[0]: expected a range "HH:MM-HH:MM"'],
      [
        'POST',
        { name: 'N', ...where, schedule: { thu: ['08:00-12:00', '11:00-14:00'] } },
        400,
        'schedule.thu[1]: "11:00-14:00" overlaps "08:00-12:00" (thu[0]): merge them into one range',
      ],
      [
        'POST',
        { name: 'N', ...where, schedule: { mon: ['22:00-06:00'], tue: ['05:00-09:00'] } },
        400,
        'schedule.tue[0]: "05:00-09:00" overlaps "22:00-06:00" (mon[0]): merge them into one range',
      ],
      [
        'POST',
        { name: 'N', ...where, schedule: { sun: ['01:00-03:00'], sat: ['23:00-02:00'] } },
        400,
        'schedule.sat[0]: "23:00-02:00" overlaps "01:00-03:00" (sun[0]): merge them into one range',
      ],
      ['POST', { name: 'N', ...where, schedule: {} }, 400, 'schedule: no weekday has a range: list at least one day'],
      ['POST', { name: 'N', ...where, schedule: { holidays: 'open' } }, 400, 'schedule: no weekday has a range: list at least one day'],
      ['POST', { name: 'N', ...where, schedule: { mon: [] } }, 400, 'schedule.mon: an empty list: leave the day out for no access that day'],
      [
        'POST',
        { name: 'N', ...where, schedule: { mon: ['08:00-09:00'], monday: ['08:00-09:00'] } },
        400,
        'schedule.monday: unknown key: use sun, mon, tue, wed, thu, fri, sat and holidays',
      ],
      [
        'POST',
        { name: 'N', ...where, schedule: { sun: Array.from({ length: 49 }, (_, i) => `${clock(i * 25)}-${clock(i * 25 + 10)}`) } },
        400,
        'schedule.sun: 49 ranges; at most 48 a day',
      ],
      ['POST', { name: 'N', ...where, schedule: { mon: ['08:00-09:00'], holidays: 'maybe' } }, 400, 'schedule.holidays: expected "closed" or "open"'],
      [
        'POST',
        { name: 'N', ...where, schedule: ['08:00-09:00'] },
        400,
        'schedule: expected an object with weekdays (sun, mon, ..., sat) and optional holidays',
      ],
      ['POST', { name: 'N', ...where, schedule: 'always' }, 400, 'schedule: expected an object with weekdays (sun, mon, ..., sat) and optional holidays'],
      [
        'POST',
        { name: 'N', ...where, schedule: { mon: ['08:00-09:00'] }, time_mapping: [[], [], [], [], [], [], []] },
        400,
        'schedule, time_mapping: give one of them, not both (time_mapping is converted to a schedule)',
      ],
      ['POST', { name: 'N', ...where, time_mapping: [[[0, 24]]] }, 400, 'time_mapping: expected exactly 7 elements, one per weekday starting on Sunday'],
      ['POST', { name: 'N', ...where, time_mapping: [[], [[8, 25]], [], [], [], [], []] }, 400, 'time_mapping[1][0][1]: hours run from 0 to 24'],
      ['POST', { name: 'N', ...where, time_mapping: [[], [[12, 8]], [], [], [], [], []] }, 400, 'time_mapping[1][0]: a range [start, end] needs start < end'],
      [
        'POST',
        { name: 'N', ...where, time_mapping: [[], [], [], [], [], [], []] },
        400,
        'time_mapping: no weekday has a range (that would never open): give at least one range, or leave time_mapping out for always',
      ],
      ['POST', { name: 'N', ...where, start_time: '2026-02-30 00:00:00' }, 400, 'start_time: expected a UTC date "YYYY-MM-DD hh:mm:ss"'],
      ['POST', { name: 'N', ...where, end_time: '2026-01-01T00:00:00Z' }, 400, 'end_time: expected a UTC date "YYYY-MM-DD hh:mm:ss"'],
      [
        'POST',
        { name: 'N', ...where, start_time: '2026-06-01 00:00:00', end_time: '2026-06-01 00:00:00' },
        400,
        'end_time: 2026-06-01 00:00:00 is not after start_time 2026-06-01 00:00:00',
      ],
      ['PUT', { add_ids: [bob] }, 400, /^policy_id: required/],
      ['PUT', { policy_id: 99999, add_ids: [bob] }, 404, 'no access level with policy_id 99999 (only policies made by POST /policies are levels)'],
      [
        'PUT',
        { policy_id: guestPolicy, add_ids: [bob] },
        404,
        `no access level with policy_id ${guestPolicy} (only policies made by POST /policies are levels)`,
      ],
      // All or nothing: a good rename and a bad member in one call change neither.
      [
        'PUT',
        { policy_id: taken, name: 'Renamed', add_ids: [bob, guest] },
        400,
        `add_ids: GUEST users cannot hold policies (promote them with PUT /promoteguest first): email_id ${guest}`,
      ],
      ['PUT', { policy_id: taken, name: 'Renamed', add_ids: [4242] }, 400, 'add_ids: no user with email_id 4242'],
      ['PUT', { policy_id: taken, add_ids: [bob], del_ids: [bob] }, 400, `add_ids, del_ids: email_id ${bob} is in both`],
      ['PUT', { policy_id: taken, name: 'cleaners' }, 409, `name: an access level named "Cleaners" already exists (policy_id ${other})`],
      ['PUT', { policy_id: taken, resource_ids: [] }, 400, /^resource_ids, resource_group_id: a level needs doors/],
      ['PUT', { policy_id: taken, resource_ids: [3], schedule: { mon: ['18:00-25:00'] } }, 400, 'schedule.mon[0]: "18:00-25:00" is past 24:00'],
      ['PUT', { policy_id: taken, end_time: '2026-02-01 00:00:00' }, 400, 'end_time: 2026-02-01 00:00:00 is not after start_time 2026-03-01 00:00:00'],
      ['PUT', { policy_id: taken, resource_group_id: 'ground' }, 400, 'resource_group_id: expected number, received string'],
      ['DELETE', {}, 400, /^policy_id: required/],
      ['DELETE', { policy_id: 99999 }, 404, /^no access level with policy_id 99999/],
      ['DELETE', { policy_id: guestPolicy }, 404, /^no access level with policy_id/],
    ];
    const before = await stored();
    const revision = (await directory()).revision;
    for (const [method, payload, status, error] of cases) {
      const r =
        method === 'DELETE'
          ? await call('DELETE', `/policies?${new URLSearchParams(payload as Record<string, string>)}`)
          : await call(method, '/policies', payload);
      const what = `${method} ${JSON.stringify(payload)}`;
      expect(r.status, `${what}: ${r.body.error}`).toBe(status);
      if (typeof error === 'string') expect(r.body.error, what).toBe(error);
      else expect(r.body.error, what).toMatch(error);
    }
    expect(await stored()).toEqual(before);
    expect((await directory()).revision).toBe(revision);
    // A list over the request limit: 413 naming it, before any id is looked at.
    const many = await call('POST', '/policies', { name: 'N', resource_ids: [3], email_ids: Array.from({ length: 10_001 }, (_, i) => i) });
    expect(many.status).toBe(413);
    expect(many.body.error).toMatch(/^email_ids: at most 10000 items in one request/);
    expect(await stored()).toEqual(before);
    await ok('DELETE', `/policies?policy_id=${taken}`);
    await ok('DELETE', `/policies?policy_id=${other}`);
  });

  it("guest links' policies are no levels: never listed, never changed here", async () => {
    const listed = (await ok('GET', '/policies')).policies as Array<{ name: string }>;
    expect(listed.map((p) => p.name)).not.toContain('Visitor Tuesday');
    expect((await ok('GET', `/user?email_id=${guest}`)).policies).toEqual([['Visitor'], ['Visitor Tuesday']]);
    // Doors match a level by policy name: a level named like a guest link's policy (any case) would be its guests'
    // too (a guest promoted later would hold it), and a guest link named like a level likewise. Both are refused.
    const clash = await call('POST', '/policies', { name: 'visitor', resource_ids: [3] });
    expect(clash).toMatchObject({ status: 409, body: { error: `name: a guest link's policy is named "visitor": choose another name for the level` } });
    expect((await directory()).levels.map((l) => l.name)).not.toContain('visitor');
    const id = (await ok('POST', '/policies', { name: 'Visitor level', resource_ids: [3] })).policy_id as number;
    const link = await call('POST', '/magiclinkadmin', {
      email_list: ['visitor2@example.org'],
      resource_id_list: [12],
      name: 'Visitor level',
      send_email: false,
    });
    expect(link.status).toBe(409);
    expect(link.body.error).toBe(`name: an access level is named "Visitor level" (policy_id ${id}): choose another name for the guest link`);
    await ok('DELETE', `/policies?policy_id=${id}`);
    expect((await ok('GET', `/user?email_id=${guest}`)).policies).toEqual([['Visitor'], ['Visitor Tuesday']]);
  });

  it('a level outlives its last member: DELETE /user drops the membership, not the level', async () => {
    const dave = ((await ok('POST', '/invites', { emails: ['dave@example.org'], no_email: true })).add_ids as number[])[0]!;
    const id = (await ok('POST', '/policies', { name: 'Dave only', resource_ids: [3], email_ids: [dave] })).policy_id as number;
    await ok('DELETE', `/user?email_id=${dave}`);
    expect(await ok('GET', `/policies?policy_id=${id}`)).toMatchObject({ name: 'Dave only', member_count: 0, email_ids: [] });
    await ok('DELETE', `/policies?policy_id=${id}`);
  });

  it('requests at once cannot both take a name: each check and its write are one transaction', async () => {
    const twins = await Promise.all([
      call('POST', '/policies', { name: 'Twin', resource_ids: [3] }),
      call('POST', '/policies', { name: 'twin', resource_ids: [4] }),
      call('POST', '/magiclinkadmin', { email_list: ['twin-guest@example.org'], resource_id_list: [12], name: 'TWIN', send_email: false }),
    ]);
    expect(
      twins.filter((r) => r.status === 200),
      JSON.stringify(twins),
    ).toHaveLength(1);
    expect(twins.filter((r) => r.status === 409)).toHaveLength(2);
    const named = await db.all<{ policy_id: number }>("SELECT policy_id FROM policies WHERE lower(name) = 'twin'");
    expect(named).toHaveLength(1);
    // Two guest links at once: each its own policy and its own magic_link_id.
    const links = await Promise.all(
      ['a', 'b', 'c'].map((n) =>
        ok('POST', '/magiclinkadmin', { email_list: [`twin-${n}@example.org`], resource_id_list: [12], name: `Twin link ${n}`, send_email: false }),
      ),
    );
    expect(new Set(links.map((l) => l.magic_link_id)).size).toBe(3);
    const level = (await ok('GET', '/policies')).policies as Array<{ policy_id: number; name: string }>;
    for (const l of level.filter((p) => p.name.toLowerCase() === 'twin')) await ok('DELETE', `/policies?policy_id=${l.policy_id}`);
  });
});

describe('GET /directory carries the levels and resource groups', () => {
  it('in full and delta answers; a level change, a resource group change and a delete each advance the revision', async () => {
    const start = await directory();
    expect(start.levels).toEqual([]);
    expect(start.resource_groups).toEqual([
      { name: 'Ground floor', resource_ids: [5, 12] },
      { name: 'Kiosks', resource_ids: [40] },
    ]);

    const night = (
      await ok('POST', '/policies', {
        name: 'Night shift',
        resource_ids: [4, 3],
        resource_group_id: groundFloor,
        schedule: { mon: ['22:00-06:00'] },
        start_time: '2026-01-01 00:00:00',
      })
    ).policy_id as number;
    await ok('POST', '/policies', { name: 'Always lobby', resource_ids: [3] });
    const created = await directory(start.revision);
    expect(created.revision).toBeGreaterThan(start.revision);
    expect(created.full).toBe(false);
    expect(created.users).toEqual([]); // no user changed: the delta reads none
    const levels = [
      { name: 'Always lobby', resource_ids: [3], resource_group: null, schedule: null, start_time: null, end_time: null },
      {
        name: 'Night shift',
        resource_ids: [3, 4, 5, 12],
        resource_group: 'Ground floor',
        schedule: { mon: ['22:00-06:00'], holidays: 'closed' },
        start_time: '2026-01-01 00:00:00',
        end_time: null,
      },
    ];
    expect(created.levels).toEqual(levels);
    expect(created.resource_groups).toEqual(start.resource_groups);
    const full = await directory();
    expect(full).toMatchObject({ full: true, revision: created.revision, levels, resource_groups: start.resource_groups });

    // Nothing changed: the same revision, and 304 for the ETag.
    const etag = (await app.inject({ method: 'GET', url: `/directory?since=${created.revision}`, headers: { authorization: `Bearer ${keys.ADMIN}` } })).headers
      .etag as string;
    const same = await app.inject({
      method: 'GET',
      url: `/directory?since=${created.revision}`,
      headers: { authorization: `Bearer ${keys.ADMIN}`, 'if-none-match': etag },
    });
    expect(same.statusCode).toBe(304);

    // A member of the level's resource group added: the next revision resolves it.
    await ok('PUT', '/groups', { type: 'resources', group_id: groundFloor, add_ids: [4], del_ids: [12] });
    const regrouped = await directory(created.revision);
    expect(regrouped.revision).toBeGreaterThan(created.revision);
    expect(regrouped.levels.find((l) => l.name === 'Night shift')?.resource_ids).toEqual([3, 4, 5]);
    expect(regrouped.resource_groups).toContainEqual({ name: 'Ground floor', resource_ids: [4, 5] });
    const refetched = await app.inject({
      method: 'GET',
      url: `/directory?since=${created.revision}`,
      headers: { authorization: `Bearer ${keys.ADMIN}`, 'if-none-match': etag },
    });
    expect(refetched.statusCode).toBe(200);

    // A definition change alone.
    await ok('PUT', '/policies', { policy_id: night, schedule: { mon: ['22:00-06:00'], holidays: 'open' } });
    const redefined = await directory(regrouped.revision);
    expect(redefined.revision).toBeGreaterThan(regrouped.revision);
    expect(redefined.levels.find((l) => l.name === 'Night shift')?.schedule).toEqual({ mon: ['22:00-06:00'], holidays: 'open' });

    // A member added: the user's details name the level's policy.
    await ok('PUT', '/policies', { policy_id: night, add_ids: [carol] });
    const joined = await directory(redefined.revision);
    expect(joined.revision).toBeGreaterThan(redefined.revision);
    expect(joined.users.map((u) => u.email_id)).toEqual([carol]);
    expect(joined.details[String(carol)]!.policies).toEqual([['Night shift']]);

    // Deleted: gone from the levels, and from the member's policies.
    await ok('DELETE', `/policies?policy_id=${night}`);
    const deleted = await directory(joined.revision);
    expect(deleted.revision).toBeGreaterThan(joined.revision);
    expect(deleted.levels.map((l) => l.name)).toEqual(['Always lobby']);
    expect(deleted.users.map((u) => u.email_id)).toEqual([carol]);
    expect(deleted.details[String(carol)]!.policies).toEqual([]);
  });

  it('holds at most 10,000 levels, what every door takes in one answer', async () => {
    const full = await inProcessService(join(tmp.path, 'full.db'), RESOURCES);
    try {
      await full.db.transaction(async () => {
        await full.db.run(
          "WITH RECURSIVE n (i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999) INSERT INTO policies (name) SELECT 'Level ' || i FROM n",
        );
        await full.db.run("INSERT INTO policy_levels (policy_id, resource_ids) SELECT policy_id, '[3]' FROM policies");
      });
      const r = await full.app.inject({ method: 'POST', url: '/policies', headers: full.headers, payload: { name: 'One more', resource_ids: [3] } });
      expect(r.statusCode).toBe(409);
      expect(r.json()).toEqual({ error: 'there are already 10,000 access levels, the most the doors take: delete one first' });
      expect(await full.db.value('SELECT count(*) FROM policies')).toBe(10_000);
    } finally {
      await full.app.close();
      await full.db.close();
    }
  });

  it('a service with no levels and no resource groups issues no revision for them', async () => {
    const fresh = await inProcessService(join(tmp.path, 'fresh.db'), RESOURCES);
    try {
      const answer = (await fresh.app.inject({ method: 'GET', url: '/directory', headers: fresh.headers })).json<Directory>();
      expect(answer).toMatchObject({ revision: 0, full: true, users: [], levels: [], resource_groups: [] });
    } finally {
      await fresh.app.close();
      await fresh.db.close();
    }
  });
});

describe('a door synced from the service applies its levels', () => {
  it('door-agent sync takes the level; check grants inside its schedule and refuses outside it', async () => {
    const id = (await ok('POST', '/policies', { name: 'Late crew', email_ids: [carol], resource_ids: [12], schedule: { mon: ['22:00-06:00'] } }))
      .policy_id as number;
    await ok('PUT', '/modifysmartcard', { email_id: carol, smartcards: JSON.stringify([{ number: '4213578' }]) });
    const port = await freePort();
    await app.listen({ port, host: '127.0.0.1' });
    const dir = join(tmp.path, 'agent');
    mkdirSync(dir);
    writeFileSync(join(dir, 'api-key'), `${keys.DOOR}\n`);
    const config = writeConfig(dir, {
      access: '{ groups: [Nobody], policies: [] }',
      extra: `service: { baseUrl: "http://127.0.0.1:${port}", apiKeyFile: ${dir}/api-key, startDelaySeconds: 0 }`,
    });
    const synced = await runCliAsync(['sync', '--config', config]);
    expect(synced.status, synced.stderr).toBe(0);
    const status = JSON.parse(runCli(['status', '--json', '--config', config]).stdout) as { levels: { serviceLevels: number | null } };
    expect(status.levels.serviceLevels).toBe(((await ok('GET', '/policies')).policies as unknown[]).length);
    // Monday 23:00 and Tuesday 05:30 in the agent's zone (Europe/Berlin) are inside; Monday noon is not.
    const at = (when: string) =>
      JSON.parse(runCli(['check', '4213578', '--at', when, '--config', config]).stdout) as { granted: boolean; reason: string | null };
    expect(at('2026-11-23T23:00:00+01:00')).toMatchObject({ granted: true, reason: null });
    expect(at('2026-11-24T05:30:00+01:00')).toMatchObject({ granted: true });
    expect(at('2026-11-23T12:00:00+01:00')).toMatchObject({ granted: false, reason: 'outside_schedule' });
    await ok('DELETE', `/policies?policy_id=${id}`);
  }, 60_000);
});
