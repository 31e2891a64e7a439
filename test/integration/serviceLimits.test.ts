import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUEST_LIMITS } from '../../src/service/requestLimits.js';
import type { SqlDb, SqlValue } from '../../src/service/sql/sqlDb.js';
import { tempDir } from '../support/cli.js';
import { inProcessService } from '../support/serviceApp.js';

// Issue 32 item 17: hostile sizes. Lists past their limit are refused with 413, JSON nested too deep with 400, each
// with a message naming the parameter and the limit, before any work: nothing in the database changes. The largest
// allowed request still works, with a few SQL texts whatever its size (each prepared once, not one per id).

const tmp = tempDir('door-agent-limits-');
let db: SqlDb;
let app: Awaited<ReturnType<typeof inProcessService>>['app'];
let headers: Record<string, string>;
const USERS = 10_000;

beforeAll(async () => {
  ({ db, app, headers } = await inProcessService(join(tmp.path, 'service.db')));
  // email_id 1 to USERS, given by the engine (an id written in would leave PostgreSQL's sequence behind), 1,000
  // users a statement (4,000 parameters: within both engines' limits).
  await db.transaction(async () => {
    for (let first = 1; first <= USERS; first += 1000) {
      const batch = Array.from({ length: Math.min(1000, USERS - first + 1) }, (_, k) => first + k);
      await db.run(
        `INSERT INTO users (user_id, email, username, unique_id, created) VALUES ${batch.map(() => "(?, ?, ?, ?, '2026-01-01 00:00:00')").join(', ')}`,
        batch.flatMap((i) => [i, `u${i}@example.org`, `u${i}`, `uid-${i}`]),
      );
    }
  });
  expect(await db.value('SELECT max(email_id) FROM users')).toBe(USERS);
});
afterAll(async () => {
  await app.close();
  await db.close();
  tmp.cleanup();
});

/** Every table's row count: what a refused request must leave as it was. */
async function state(): Promise<string> {
  const tables = await db.column<string>(
    db.engine === 'sqlite'
      ? "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
      : "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
  );
  const counts: Array<[string, unknown]> = [];
  for (const t of tables) counts.push([t, await db.value(`SELECT count(*) FROM "${t}"`)]);
  return JSON.stringify(counts);
}

const ids = (n: number) => Array.from({ length: n }, (_, i) => (i % USERS) + 1);
const emails = (n: number) => Array.from({ length: n }, (_, i) => `new${i}@example.org`);
const cards = (n: number) => Array.from({ length: n }, (_, i) => ({ number: String(9_000_000 + i), label: 'badge' }));

describe('lists over their limit: 413 naming the parameter and the limit, nothing changed', () => {
  const L = REQUEST_LIMITS;
  it.each([
    ['POST', '/groups', 'add_ids', L.ids, { type: 'users', name: 'Big', add_ids: ids(L.ids + 1) }],
    ['POST', '/groups', 'add_ids', L.ids, { type: 'users', name: 'Huge', add_ids: ids(120_000) }],
    ['PUT', '/groups', 'del_ids', L.ids, { type: 'users', group_id: 1, del_ids: ids(L.ids + 1) }],
    ['POST', '/invites', 'emails', L.emails, { emails: emails(L.emails + 1), no_email: true }],
    ['POST', '/invites', 'smartcards (of one user)', L.perUser, { emails: ['a@example.org'], smartcards: [cards(L.perUser + 1)], no_email: true }],
    ['PUT', '/modifysmartcard', 'smartcards', L.perUser, { email_id: 1, smartcards: cards(L.perUser + 1) }],
    [
      'PUT',
      '/modifyallusernames',
      'computer_usernames',
      L.usernames,
      { email_id: 1, computer_usernames: ids(L.usernames + 1).map((i) => ({ computer_username: `c${i}` })) },
    ],
    ['POST', '/magiclinkadmin', 'email_list', L.emails, { email_list: emails(L.emails + 1), resource_id_list: [12], name: 'Crowd' }],
    ['POST', '/magiclinkadmin', 'resource_id_list', L.resources, { email_list: ['v@example.org'], resource_id_list: ids(L.resources + 1), name: 'Everywhere' }],
  ] as const)('%s %s: %s over %s', async (method, url, field, max, body) => {
    const before = await state();
    for (const form of [false, true]) {
      // As JSON, and as a form whose parameter is a string holding the list.
      const payload = form
        ? new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)])).toString()
        : JSON.stringify(body);
      if (payload.length > 1024 * 1024) continue; // a form of 120,000 ids is over the body limit (its own 400)
      const started = performance.now();
      const answer = await app.inject({
        method,
        url,
        headers: { ...headers, 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json' },
        payload,
      });
      expect(answer.statusCode, answer.body).toBe(413);
      expect(answer.json()).toEqual({ error: expect.stringContaining(`${field}: at most ${max} items in one request`) });
      expect(performance.now() - started).toBeLessThan(2000);
    }
    expect(await state()).toBe(before);
  });
});

describe('JSON nested too deep: 400 naming the limit, never a crash', () => {
  it.each([
    ['the body', (d: number) => `{"type":"users","name":"Deep","add_ids":[1],"extra":${'['.repeat(d)}${']'.repeat(d)}}`, 'application/json', 'request body'],
    [
      'a form parameter holding JSON',
      (d: number) => `type=users&name=Deep&add_ids=${encodeURIComponent('['.repeat(d) + ']'.repeat(d))}`,
      'application/x-www-form-urlencoded',
      'add_ids',
    ],
  ])('%s', async (_what, make, type, field) => {
    const before = await state();
    for (const depth of [REQUEST_LIMITS.depth + 1, 7000, 150_000]) {
      const answer = await app.inject({ method: 'POST', url: '/groups', headers: { ...headers, 'content-type': type }, payload: make(depth) });
      expect(answer.statusCode, answer.body).toBe(400);
      expect(answer.json().error).toMatch(new RegExp(`^${field}: JSON nested deeper than ${REQUEST_LIMITS.depth} levels`));
    }
    expect(await state()).toBe(before);
    // At the limit it is parsed (and refused for what it is, not for its depth).
    const atLimit = await app.inject({
      method: 'POST',
      url: '/groups',
      headers: { ...headers, 'content-type': type },
      payload: make(REQUEST_LIMITS.depth - 2),
    });
    expect(atLimit.json().error ?? '').not.toMatch(/nested deeper/);
    // Brackets inside strings do not count.
    const inString = await app.inject({
      method: 'POST',
      url: '/groups',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ type: 'users', name: '['.repeat(150), add_ids: [] }),
    });
    expect(inString.json().error ?? '').not.toMatch(/nested deeper/);
  });
});

describe('the largest allowed requests work, with statements prepared once', () => {
  it(`POST /groups and PUT /groups with ${REQUEST_LIMITS.ids} ids; POST /invites with ${REQUEST_LIMITS.emails} addresses`, async () => {
    // Each SQL text the service runs is prepared once (SQLite) or numbered once (PostgreSQL) and kept: the texts new
    // to a call are what it prepares. A text per id would be a statement per id (one once held 800 MB).
    const texts = new Set<string>();
    const methods = ['all', 'get', 'column', 'value', 'run'] as const;
    const real = methods.map((m) => db[m]);
    methods.forEach((m, i) => {
      const call = real[i]!.bind(db) as (text: string, params?: readonly SqlValue[]) => Promise<unknown>;
      const counted = (text: string, params?: readonly SqlValue[]) => {
        texts.add(text);
        return call(text, params);
      };
      Object.assign(db, { [m]: counted });
    });
    try {
      const prepares = async (method: 'POST' | 'PUT', url: string, body: unknown) => {
        const before = texts.size;
        const answer = await app.inject({ method, url, headers, payload: body as object });
        expect(answer.statusCode, answer.body).toBe(200);
        return { prepares: texts.size - before, body: answer.json() };
      };
      const small = await prepares('POST', '/groups', { type: 'users', name: 'Small', add_ids: ids(10) });
      const large = await prepares('POST', '/groups', { type: 'users', name: 'Large', add_ids: ids(REQUEST_LIMITS.ids) });
      expect(large.body.success).toContain(`with ${REQUEST_LIMITS.ids} member(s)`);
      // A few statements per call whatever its size (the directory's refresh after a change may fall in the count).
      expect(small.prepares).toBeLessThan(50);
      expect(large.prepares).toBeLessThan(50);
      const update = await prepares('PUT', '/groups', {
        type: 'users',
        group_id: large.body.group_id,
        add_ids: ids(REQUEST_LIMITS.ids),
        del_ids: ids(REQUEST_LIMITS.ids),
      });
      expect(update.prepares).toBeLessThan(50);
      const invited = await prepares('POST', '/invites', { emails: emails(REQUEST_LIMITS.emails), groups: [{ id: large.body.group_id }], no_email: false });
      expect(invited.body.added).toHaveLength(REQUEST_LIMITS.emails);
      // A few statements for the whole call (the user store's are prepared once for the service), not a few per address.
      expect(invited.prepares).toBeLessThan(50);
      expect(await db.value('SELECT count(*) FROM mail_outbox')).toBe(REQUEST_LIMITS.emails);
    } finally {
      for (const m of methods) delete (db as unknown as Record<string, unknown>)[m];
    }
  }, 180_000);
});

describe('the body of PUT /modifysmartcard(s)', () => {
  it(`at most ${REQUEST_LIMITS.smartcardBody} bytes; without a key, a body over it is not read (401)`, async () => {
    const before = await state();
    for (const url of ['/modifysmartcard', '/modifysmartcards']) {
      const big = JSON.stringify({ email_id: 1, smartcards: [{ number: '1', label: 'x'.repeat(REQUEST_LIMITS.smartcardBody) }] });
      const answer = await app.inject({ method: 'PUT', url, headers: { ...headers, 'content-type': 'application/json' }, payload: big });
      expect(answer.statusCode).toBe(400);
      expect(answer.json()).toEqual({ error: `request body over ${REQUEST_LIMITS.smartcardBody} bytes` });
      const keyless = await app.inject({ method: 'PUT', url, headers: { 'content-type': 'application/json' }, payload: big });
      expect(keyless.statusCode).toBe(401);
      expect(keyless.json()).toEqual({
        error: `an API key is required (none in a header or the query string; a body over ${REQUEST_LIMITS.smartcardBody} bytes is not read)`,
      });
    }
    expect(await state()).toBe(before);
    // The largest list it takes fits well within it.
    const fits = await app.inject({
      method: 'PUT',
      url: '/modifysmartcard',
      headers,
      payload: { email_id: 1, smartcards: cards(REQUEST_LIMITS.perUser).map((c) => ({ ...c, label: 'a card label of forty characters, about' })) },
    });
    expect(fits.statusCode, fits.body).toBe(200);
  });
});
