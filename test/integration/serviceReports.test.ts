import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstLastReportSchema, passagesReportSchema, refusalsReportSchema } from '../../src/api/reports.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import type { ServiceResource } from '../../src/service/options.js';
import type { buildService } from '../../src/service/server.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { DOOR_UUID, SECOND_DOOR_UUID, tempDir } from '../support/cli.js';
import { testService } from '../support/serviceApp.js';
import { newServiceDb } from '../support/serviceDb.js';

// The reports (docs/audit.md, "Reports") on a real service listening on loopback, over a small known set of events
// written into audit_events as the ingest stores them. The site is in Europe/Berlin: its clocks went forward on
// 2026-03-29 (a day of 23 hours), and a person comes through the door on both sides of a local midnight that UTC
// puts on one day.
const tmp = tempDir('door-agent-reports-');
const ZONE = 'Europe/Berlin';
const UNLISTED_DOOR = '9d2f7c1a-0000-4c3b-8e5d-aa11bb22cc33';
const RESOURCES: ServiceResource[] = [
  { resourceId: 12, uuid: DOOR_UUID, type: 'DOOR', name: 'Front door' },
  { resourceId: 13, uuid: SECOND_DOOR_UUID, type: 'DOOR', name: 'Back, east' },
];
const ADA = { id: 1, name: 'Ada Lovelace' };
const BOB = { id: 2, name: 'Bob, "the builder"' };
const FORMULA = { id: 3, name: '=HYPERLINK("http://x.example")' };

let db: SqlDb;
let app: ReturnType<typeof buildService>;
let base: string;
let admin: string;
let regular: string;
let cookie: string;
let seq = 0;

/** One event as the ingest stores it: its columns, and the wire event as the body. */
async function event(
  type: string,
  iso: string,
  door: string | null,
  extra: { person?: { id: number; name: string }; reason?: string; area?: string; kind?: string; level?: string },
) {
  seq += 1;
  const at = Date.parse(iso);
  const body: Record<string, unknown> = { id: `agent-1-${seq}`, seq, at: new Date(at).toISOString(), door, type };
  if (extra.kind) body.kind = extra.kind;
  if (extra.level) body.level = extra.level;
  if (extra.reason) body.reason = extra.reason;
  if (extra.person) {
    body.who = extra.person.name;
    body.holders = [{ email_id: extra.person.id }];
  }
  if (extra.area) body.passages = [{ area: extra.area, holder: { email_id: extra.person?.id }, direction: 'in' }];
  await db.run(
    `INSERT INTO audit_events (agent_id, chain_id, seq, at, door_uuid, type, person_id, person, reason, area, body, received_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      'agent-1',
      'chain-1',
      seq,
      at,
      door,
      type,
      extra.person?.id ?? null,
      extra.person?.name ?? null,
      extra.reason ?? null,
      extra.area ?? null,
      JSON.stringify(body),
      at,
    ],
  );
}
const grant = (iso: string, door: string | null, person: { id: number; name: string } | undefined, area?: string) =>
  event('access_granted', iso, door, { ...(person ? { person } : {}), kind: 'card', level: 'Staff', ...(area ? { area } : {}) });
const refuse = (iso: string, door: string, reason: string) => event('access_denied', iso, door, { reason, kind: 'card' });

beforeAll(async () => {
  ({ db } = await newServiceDb(tmp.path, 'reports'));
  // Ada: Saturday 23:30 (+01:00), then 00:30 on the DST Sunday (UTC: still Saturday), 08:00 and 23:30 (+02:00), and
  // 00:30 on Monday (UTC: still Sunday).
  await grant('2026-03-28T22:30:00Z', DOOR_UUID, ADA, 'hq');
  await grant('2026-03-28T23:30:00Z', SECOND_DOOR_UUID, ADA, 'hq');
  await grant('2026-03-29T06:00:00Z', DOOR_UUID, ADA, 'hq');
  await grant('2026-03-29T21:30:00Z', SECOND_DOOR_UUID, ADA, 'hq');
  await grant('2026-03-29T22:30:00Z', DOOR_UUID, ADA, 'hq');
  await grant('2026-03-29T07:00:00Z', SECOND_DOOR_UUID, BOB);
  await grant('2026-03-29T08:00:00Z', UNLISTED_DOOR, FORMULA, 'lab');
  await grant('2026-03-29T09:00:00Z', DOOR_UUID, undefined); // a guest link: no user
  await refuse('2026-03-29T10:00:00Z', DOOR_UUID, 'not_authorized');
  await refuse('2026-03-29T10:05:00Z', DOOR_UUID, 'outside_schedule');
  await refuse('2026-03-29T10:10:00Z', SECOND_DOOR_UUID, 'not_authorized');
  await refuse('2026-04-05T10:00:00Z', SECOND_DOOR_UUID, 'not_authorized');
  await event('door_opened', '2026-03-29T06:00:05Z', DOOR_UUID, {});
  const keys = new ApiKeys(db);
  admin = await keys.create('ADMIN', 0, Date.now());
  regular = await keys.create('REGULAR', 0, Date.now());
  app = testService(db, {
    resources: RESOURCES,
    timezone: ZONE,
    audit: { gapSeconds: 300, maxReportDays: 40 },
    console: { options: { enabled: true, sessionMinutes: 30, maxSessionHours: 12, timezone: ZONE }, feed: null, mailConfigured: false },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;
  const signIn = await fetch(`${base}/console/signin`, {
    method: 'POST',
    headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    body: `api_key=${admin}`,
    redirect: 'manual',
  });
  cookie = String(signIn.headers.get('set-cookie')).split(';')[0]!;
});

afterAll(async () => {
  await app?.close();
  await db?.close();
  tmp.cleanup();
});

const get = (path: string, headers: Record<string, string> = {}, key = admin) =>
  fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}`, ...headers } });
async function json(path: string) {
  const res = await get(path);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as unknown;
}

describe('GET /reports/passages', () => {
  it("lists a person's grants of a local day in the site's time, with each offset across the DST change", async () => {
    const report = passagesReportSchema.parse(await json('/reports/passages?from=2026-03-29&to=2026-03-29&person=1'));
    expect(report.from).toBe('2026-03-29T00:00:00+01:00');
    expect(report.to).toBe('2026-03-30T00:00:00+02:00');
    expect(report.rows.map((r) => [r.at, r.door])).toEqual([
      ['2026-03-29T00:30:00+01:00', 'Back, east'],
      ['2026-03-29T08:00:00+02:00', 'Front door'],
      ['2026-03-29T23:30:00+02:00', 'Back, east'],
    ]);
    expect(report.rows[0]).toEqual({
      at: '2026-03-29T00:30:00+01:00',
      person_id: 1,
      person: 'Ada Lovelace',
      door: 'Back, east',
      door_uuid: SECOND_DOOR_UUID,
      kind: 'card',
      level: 'Staff',
      area: 'hq',
      agent: 'agent-1',
    });
    expect(report.next_after).toBeNull();
  });

  it('filters by door and by area, names a door not in server.resources by its uuid, and keeps a grant of no user', async () => {
    const front = passagesReportSchema.parse(await json(`/reports/passages?from=2026-03-29&to=2026-03-29&door=${DOOR_UUID.toUpperCase()}`));
    expect(front.rows.map((r) => [r.at, r.person])).toEqual([
      ['2026-03-29T08:00:00+02:00', 'Ada Lovelace'],
      ['2026-03-29T11:00:00+02:00', null],
    ]);
    const lab = passagesReportSchema.parse(await json('/reports/passages?from=2026-03-29&to=2026-03-29&area=lab'));
    expect(lab.rows.map((r) => [r.person_id, r.door])).toEqual([[3, UNLISTED_DOOR]]);
  });

  it("reads a time without an offset as the site's wall time, and pages with limit and next_after", async () => {
    const first = passagesReportSchema.parse(await json('/reports/passages?from=2026-03-29T00:00&to=2026-03-29T09:00&limit=2'));
    expect(first.rows.map((r) => r.at)).toEqual(['2026-03-29T00:30:00+01:00', '2026-03-29T08:00:00+02:00']);
    expect(first.next_after).not.toBeNull();
    const second = passagesReportSchema.parse(await json(`/reports/passages?from=2026-03-29T00:00&to=2026-03-29T09:00&limit=2&after=${first.next_after}`));
    // 09:00 is not included: Bob at 09:00 is the end's own instant.
    expect(second.rows.map((r) => r.at)).toEqual([]);
    expect(second.next_after).toBeNull();
    const offset = passagesReportSchema.parse(await json('/reports/passages?from=2026-03-29T05:00:00Z&to=2026-03-29T07:00:01Z'));
    expect(offset.rows.map((r) => r.person)).toEqual(['Ada Lovelace', BOB.name]);
  });
});

describe('GET /reports/first-last', () => {
  it("gives each person's first and last grant per local day, a day of 23 hours and both sides of a midnight included", async () => {
    const report = firstLastReportSchema.parse(await json('/reports/first-last?from=2026-03-28&to=2026-03-30'));
    expect(report.rows).toEqual([
      {
        date: '2026-03-28',
        person_id: 1,
        person: 'Ada Lovelace',
        first_in: '2026-03-28T23:30:00+01:00',
        first_door: 'Front door',
        last_out: '2026-03-28T23:30:00+01:00',
        last_door: 'Front door',
        grants: 1,
      },
      {
        date: '2026-03-29',
        person_id: 1,
        person: 'Ada Lovelace',
        first_in: '2026-03-29T00:30:00+01:00',
        first_door: 'Back, east',
        last_out: '2026-03-29T23:30:00+02:00',
        last_door: 'Back, east',
        grants: 3,
      },
      {
        date: '2026-03-29',
        person_id: 2,
        person: BOB.name,
        first_in: '2026-03-29T09:00:00+02:00',
        first_door: 'Back, east',
        last_out: '2026-03-29T09:00:00+02:00',
        last_door: 'Back, east',
        grants: 1,
      },
      {
        date: '2026-03-29',
        person_id: 3,
        person: FORMULA.name,
        first_in: '2026-03-29T10:00:00+02:00',
        first_door: UNLISTED_DOOR,
        last_out: '2026-03-29T10:00:00+02:00',
        last_door: UNLISTED_DOOR,
        grants: 1,
      },
      {
        date: '2026-03-30',
        person_id: 1,
        person: 'Ada Lovelace',
        first_in: '2026-03-30T00:30:00+02:00',
        first_door: 'Front door',
        last_out: '2026-03-30T00:30:00+02:00',
        last_door: 'Front door',
        grants: 1,
      },
    ]);
  });

  it('pages within a day and on to the next', async () => {
    const dates: string[] = [];
    let after: string | null = null;
    do {
      const page = firstLastReportSchema.parse(await json(`/reports/first-last?from=2026-03-28&to=2026-03-30&limit=2${after ? `&after=${after}` : ''}`));
      expect(page.rows.length).toBeLessThanOrEqual(2);
      dates.push(...page.rows.map((r) => `${r.date}/${r.person_id}`));
      after = page.next_after;
    } while (after !== null);
    expect(dates).toEqual(['2026-03-28/1', '2026-03-29/1', '2026-03-29/2', '2026-03-29/3', '2026-03-30/1']);
  });
});

describe('GET /reports/refusals', () => {
  it('counts the refusals of the range by reason and by door, most first', async () => {
    const byReason = refusalsReportSchema.parse(await json('/reports/refusals?from=2026-03-29&to=2026-03-29'));
    expect(byReason.rows).toEqual([
      { reason: 'not_authorized', count: 2 },
      { reason: 'outside_schedule', count: 1 },
    ]);
    expect(byReason.total).toBe(3);
    const byDoor = refusalsReportSchema.parse(await json('/reports/refusals?from=2026-03-01&to=2026-04-05&by=door'));
    expect(byDoor.rows).toEqual([
      { door: 'Back, east', door_uuid: SECOND_DOOR_UUID, count: 2 },
      { door: 'Front door', door_uuid: DOOR_UUID, count: 2 },
    ]);
  });
});

describe('the reports as CSV', () => {
  it('writes RFC 4180 with a header row, quotes a comma and a quote, and defuses a leading =', async () => {
    const res = await get('/reports/first-last?from=2026-03-29&to=2026-03-29', { accept: 'text/csv' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv; charset=utf-8/);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="first-last-2026-03-29-to-2026-03-29.csv"');
    const lines = (await res.text()).split('\r\n');
    expect(lines).toEqual([
      'date,person_id,person,first_in,first_door,last_out,last_door,grants',
      '2026-03-29,1,Ada Lovelace,2026-03-29T00:30:00+01:00,"Back, east",2026-03-29T23:30:00+02:00,"Back, east",3',
      '2026-03-29,2,"Bob, ""the builder""",2026-03-29T09:00:00+02:00,"Back, east",2026-03-29T09:00:00+02:00,"Back, east",1',
      `2026-03-29,3,"'=HYPERLINK(""http://x.example"")",2026-03-29T10:00:00+02:00,${UNLISTED_DOOR},2026-03-29T10:00:00+02:00,${UNLISTED_DOOR},1`,
      '',
    ]);
  });

  it('answers format=csv whatever Accept says, refusals by door too', async () => {
    const res = await get('/reports/refusals?from=2026-03-29&to=2026-03-29&by=door&format=csv', { accept: 'application/json' });
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="refusals-2026-03-29-to-2026-03-29.csv"');
    expect(await res.text()).toBe(`door,door_uuid,count\r\nFront door,${DOOR_UUID},2\r\n"Back, east",${SECOND_DOOR_UUID},1\r\n`);
  });
});

describe('bad requests', () => {
  const refused = async (path: string, status = 400) => {
    const res = await get(path);
    expect(res.status).toBe(status);
    return ((await res.json()) as { error: string }).error;
  };
  it('names the parameter: from after to, a range too long, a date that is none, an unknown by', async () => {
    expect(await refused('/reports/passages?from=2026-03-30&to=2026-03-29')).toMatch(/^from: 2026-03-30 is not before to/);
    expect(await refused('/reports/passages?from=2026-01-01&to=2026-03-01')).toMatch(
      /^to: the range is 60 days; a report covers at most 40 \(server\.audit\.maxReportDays\)/,
    );
    expect(await refused('/reports/passages?from=2026-02-30&to=2026-03-01')).toMatch(/^from: "2026-02-30" is not a date/);
    expect(await refused('/reports/first-last?from=2026-03-01&to=yesterday')).toMatch(/^to: "yesterday" is not a date/);
    expect(await refused('/reports/refusals?from=2026-03-01&to=2026-03-02&by=weekday')).toMatch(/^by: /);
    expect(await refused('/reports/passages?from=2026-03-01&to=2026-03-02&door=front')).toMatch(/^door: expected a door uuid/);
    expect(await refused('/reports/passages?from=2026-03-01&to=2026-03-02&after=nonsense')).toMatch(/^after: not a cursor/);
    expect(await refused('/reports/passages?to=2026-03-02')).toMatch(/^from: /);
    expect(await refused('/reports/refusals?from=2026-03-01&to=2026-03-02&area=hq')).toMatch(/^area: a refusal has no area/);
  });
  it('refuses a key below ADMIN', async () => {
    const res = await get('/reports/passages?from=2026-03-29&to=2026-03-29', {}, regular);
    expect(res.status).toBe(403);
  });
});

describe('the console Reports page', () => {
  it('shows the first rows of the chosen report and links its CSV download', async () => {
    const res = await fetch(`${base}/console/reports?report=passages&from=2026-03-29&to=2026-03-29&person=1`, { headers: { cookie } });
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('<a href="/console/reports" aria-current="page">Reports</a>');
    expect(page).toContain('3 rows.');
    expect(page).toContain('2026-03-29 23:30:00 CEST');
    expect(page).toContain('2026-03-29 00:30:00 CET');
    const link = /<a href="(\/console\/reports\/download\?[^"]+)" download>Download CSV<\/a>/.exec(page)?.[1]?.replaceAll('&amp;', '&');
    expect(link).toBeDefined();
    const csv = await fetch(`${base}${link}`, { headers: { cookie } });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-disposition')).toBe('attachment; filename="passages-2026-03-29-to-2026-03-29.csv"');
    const lines = (await csv.text()).split('\r\n');
    expect(lines[0]).toBe('at,person_id,person,door,door_uuid,kind,level,area,agent');
    expect(lines.slice(1, -1)).toHaveLength(3);
  });

  it("says the API's refusal in words", async () => {
    const page = await (await fetch(`${base}/console/reports?report=refusals&from=2026-03-30&to=2026-03-01`, { headers: { cookie } })).text();
    expect(page).toMatch(/class="flash error" role="alert">from: 2026-03-30 is not before to/);
    const download = await fetch(`${base}/console/reports/download?report=passages&from=2026-01-01&to=2026-12-31`, { headers: { cookie } });
    expect(download.status).toBe(400);
    expect(await download.text()).toContain('a report covers at most 40');
  });
});

describe('a CSV longer than one batch', () => {
  it('has every row once, in order, ties at one instant included', async () => {
    const { db: big } = await newServiceDb(tmp.path, 'reports-big');
    try {
      // 12,001 grants, three at each second, in one statement of generated rows.
      await big.run(
        `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 12000)
         INSERT INTO audit_events (agent_id, chain_id, seq, at, door_uuid, type, person_id, person, body, received_at)
         SELECT 'agent-2', 'c', i + 1, CAST(? AS BIGINT) + (i / 3) * 1000, ?, 'access_granted', 7, 'Grace', '{"kind":"card"}', 0 FROM n`,
        [Date.parse('2026-06-01T08:00:00Z'), DOOR_UUID],
      );
      const service = testService(big, { resources: RESOURCES, timezone: ZONE });
      await service.listen({ host: '127.0.0.1', port: 0 });
      try {
        const { port } = service.server.address() as AddressInfo;
        const res = await fetch(`http://127.0.0.1:${port}/reports/passages?from=2026-06-01&to=2026-06-01&format=csv`, {
          headers: { authorization: `Bearer ${await new ApiKeys(big).create('ADMIN', 0, Date.now())}` },
        });
        const rows = (await res.text()).split('\r\n').slice(1, -1);
        expect(rows).toHaveLength(12_001);
        expect(rows[0]).toBe(`2026-06-01T10:00:00+02:00,7,Grace,Front door,${DOOR_UUID},card,,,agent-2`);
        expect(rows.at(-1)).toMatch(/^2026-06-01T11:06:40\+02:00,/);
      } finally {
        await service.close();
      }
    } finally {
      await big.close();
    }
  });
});
