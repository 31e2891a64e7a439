import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { buildService } from '../../src/service/server.js';
import { tempDir } from '../support/cli.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { inProcessService } from '../support/serviceApp.js';

// Integrity of the reference service's cards, invitations and guest links (issue 15, items 1, 2, 4 and 7): the
// service in this process (fastify inject), its database read directly to see what is really stored.

const tmp = tempDir('door-agent-service-integrity-');
let db: SqlDb;
let app: ReturnType<typeof buildService>;
let headers: Record<string, string>;

beforeAll(async () => {
  mkdirSync(join(tmp.path, 'data'), { recursive: true });
  ({ db, app, headers } = await inProcessService(join(tmp.path, 'data', 'service.db')));
});
afterAll(async () => {
  await app.close();
  await db.close();
  tmp.cleanup();
});

type Body = Record<string, unknown> & { error?: string; success?: string };

async function call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: Record<string, unknown>): Promise<{ status: number; body: Body }> {
  const res = await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
  return { status: res.statusCode, body: res.json<Body>() };
}

async function invite(email: string, cards: Array<{ number: string; label?: string }> = []): Promise<number> {
  const r = await call('POST', '/invites', { emails: [email], smartcards: [cards], no_email: true });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.added).toEqual([email]);
  return (r.body.add_ids as number[])[0]!;
}

const setCards = (emailId: number, cards: Array<{ number: string; label?: string }>, allowDuplicates?: boolean) =>
  call('PUT', '/modifysmartcard', {
    email_id: emailId,
    smartcards: JSON.stringify(cards),
    ...(allowDuplicates === undefined ? {} : { allow_duplicates: allowDuplicates }),
  });

const cardsOf = async (emailId: number) => (await call('GET', `/modifysmartcard?email_id=${emailId}`)).body.smartcards;

/** How many active users hold `number` (what a door would find for the card). */
const activeHolders = async (number: string) =>
  db.value<number>('SELECT count(DISTINCT s.email_id) FROM smartcards s JOIN users u USING (email_id) WHERE s.number = ? AND u.removed_at IS NULL', [number]);

const userCount = () => db.value<number>('SELECT count(*) FROM users');

const guestLink = (over: Record<string, unknown>) => ({
  resource_id_list: [12],
  name: 'Visit',
  end_time: '2099-01-01 00:00:00',
  send_email: false,
  ...over,
});

describe('a removed user never brings a card back beside its new holder (item 1)', () => {
  it('removal releases the cards; re-invited, the user is a new member without them; the new holder can re-save', async () => {
    const ann = await invite('ann@example.org', [{ number: '5500001', label: 'badge' }]);
    expect((await call('PUT', '/modifyallusernames', { email_id: ann, computer_usernames: '[{"computer_username":"ann"}]' })).status).toBe(200);
    expect((await call('DELETE', `/user?email_id=${ann}`)).status).toBe(200);
    // Released at removal: nothing of the card (or the computer username) is left on the record.
    expect(await db.value('SELECT count(*) FROM smartcards WHERE email_id = ?', [ann])).toBe(0);
    expect(await db.value('SELECT count(*) FROM computer_usernames WHERE email_id = ?', [ann])).toBe(0);

    const ben = await invite('ben@example.org');
    expect((await setCards(ben, [{ number: '5500001', label: 'was ann' }])).status).toBe(200);

    // Ann invited again: the same record (email_id), a new member: no cards, no usernames, tag USER.
    expect(await invite('ann@example.org')).toBe(ann);
    expect((await call('GET', `/user?email_id=${ann}`)).body).toEqual({ policies: [], computer_usernames: [], smartcards: [], source: 'local' });
    expect(await activeHolders('5500001')).toBe(1);
    // Ben re-saves his unchanged list: it always works.
    expect((await setCards(ben, [{ number: '5500001', label: 'was ann' }])).status).toBe(200);
    // Ann cannot take the card back without allow_duplicates, on either path.
    expect((await setCards(ann, [{ number: '5500001' }])).body.error).toContain('already in use: …0001');
    expect((await call('DELETE', `/user?email_id=${ann}`)).status).toBe(200);
    const again = await call('POST', '/invites', { emails: ['ann@example.org'], smartcards: [[{ number: '5500001' }]], no_email: true });
    expect(again.status).toBe(400);
    expect(again.body.error).toContain('already in use');
    expect(await activeHolders('5500001')).toBe(1);
  });

  it('a removed ADMIN re-invited is a REGULAR member again, not suspended, dated by the new invitation', async () => {
    const cid = await invite('cid@example.org');
    const userId = (await db.value<number>('SELECT user_id FROM users WHERE email_id = ?', [cid]))!;
    expect((await call('PUT', '/modifyrank', { admin_user_id: userId, rank: 'ADMIN' })).status).toBe(200);
    expect((await call('PUT', '/togglesuspension', { email_id: cid })).status).toBe(200);
    await db.run("UPDATE users SET created = '2020-01-01 00:00:00' WHERE email_id = ?", [cid]);
    expect((await call('DELETE', `/user?email_id=${cid}`)).status).toBe(200);
    expect(await invite('cid@example.org')).toBe(cid);
    const row = (await db.get('SELECT rank, tag, suspended, created FROM users WHERE email_id = ?', [cid]))!;
    expect(row).toMatchObject({ rank: 'REGULAR', tag: 'USER', suspended: 0 });
    expect(row.created).not.toBe('2020-01-01 00:00:00');
  });

  it('a removed USER named in a guest link comes back as a GUEST with only the card the link gives', async () => {
    const dan = await invite('dan@example.org', [{ number: '5500002' }, { number: '5500003' }]);
    expect((await call('DELETE', `/user?email_id=${dan}`)).status).toBe(200);
    const eve = await invite('eve@example.org');
    expect((await setCards(eve, [{ number: '5500002' }])).status).toBe(200);

    const r = await call('POST', '/magiclinkadmin', guestLink({ email_list: ['dan@example.org'], smartcards: [{ number: '5500004', label: 'visitor' }] }));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((r.body.email_ids as Record<string, number>)['dan@example.org']).toBe(dan);
    expect((await call('GET', '/multipleusers?user_tag=GUEST')).body).toEqual(expect.arrayContaining([expect.objectContaining({ email_id: dan })]));
    expect(await cardsOf(dan)).toEqual([{ number: '5500004', label: 'visitor' }]);
    expect(await activeHolders('5500002')).toBe(1);
    expect((await setCards(eve, [{ number: '5500002' }])).status).toBe(200);
  });

  it("a guest link gives one card to one holder: the same number twice in a link is refused, a guest's own card is not a duplicate", async () => {
    const before = await userCount();
    const twice = await call(
      'POST',
      '/magiclinkadmin',
      guestLink({ email_list: ['g-a@example.org', 'g-b@example.org'], smartcards: [{ number: '5500010' }, { number: '5500010' }] }),
    );
    expect(twice.status).toBe(400);
    expect(twice.body.error).toContain('listed twice in this request: …0010');
    expect(await userCount()).toBe(before);
    expect(await activeHolders('5500010')).toBe(0);
    // Allowed when asked for.
    const allowed = await call(
      'POST',
      '/magiclinkadmin',
      guestLink({ email_list: ['g-a@example.org', 'g-b@example.org'], smartcards: [{ number: '5500010' }, { number: '5500010' }], allow_duplicates: true }),
    );
    expect(allowed.status).toBe(200);
    expect(await activeHolders('5500010')).toBe(2);

    // A user named in a link with the card they already hold: nobody else gets it, so it is no duplicate.
    const fay = await invite('fay@example.org', [{ number: '5500011', label: 'own' }]);
    const own = await call('POST', '/magiclinkadmin', guestLink({ email_list: ['fay@example.org'], smartcards: [{ number: '5500011', label: 'own' }] }));
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(await cardsOf(fay)).toEqual([{ number: '5500011', label: 'own' }]);
  });

  it('holders who share a card by allow_duplicates can each re-save their own list; nobody new gets it without the flag', async () => {
    const gus = await invite('gus@example.org', [{ number: '5500020' }]);
    const hal = await invite('hal@example.org');
    expect((await setCards(hal, [{ number: '5500020' }])).status).toBe(400);
    expect((await setCards(hal, [{ number: '5500020' }], true)).status).toBe(200);
    expect((await setCards(gus, [{ number: '5500020', label: 'relabelled' }])).status).toBe(200);
    expect((await setCards(hal, [{ number: '5500020' }, { number: '5500021' }])).status).toBe(200);
    const ida = await invite('ida@example.org');
    expect((await setCards(ida, [{ number: '5500020' }])).body.error).toContain('already in use: …0020');
    // One user listing a number twice is still refused unless allowed.
    expect((await setCards(ida, [{ number: '5500022' }, { number: '5500022' }])).body.error).toContain('listed twice in this request: …0022');
  });
});

describe('concurrent requests never share a card or make a user twice (issue 52: a check and its change are one transaction)', () => {
  it('the same card given to two users at once: one call wins, the other is refused, one holder', async () => {
    const ted = await invite('ted@example.org');
    const una = await invite('una@example.org');
    // A few rounds: on PostgreSQL, without the transaction, both calls passed the check in most rounds.
    for (const number of ['5500060', '5500061', '5500062']) {
      const answers = await Promise.all([setCards(ted, [{ number }]), setCards(una, [{ number }])]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
      expect(answers.find((a) => a.status === 400)!.body.error).toContain(`already in use: …${number.slice(-4)}`);
      expect(await activeHolders(number)).toBe(1);
    }
  });

  it('the same address invited by several calls at once: one user, one call adds it, the others find it', async () => {
    const before = await userCount();
    const answers = await Promise.all(Array.from({ length: 4 }, () => call('POST', '/invites', { emails: ['vic@example.org'], no_email: true })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers.filter((a) => (a.body.added as string[]).length === 1)).toHaveLength(1);
    expect(answers.filter((a) => (a.body.exists as string[]).length === 1)).toHaveLength(3);
    expect(await userCount()).toBe(before! + 1);
  });
});

describe('POST /invites maps card lists one to one (item 2)', () => {
  it('more card lists than e-mail addresses: 400, and nobody is created', async () => {
    const before = await userCount();
    const r = await call('POST', '/invites', { emails: ['jo@example.org'], smartcards: [[{ number: '5500030' }], [{ number: '5500031' }]], no_email: true });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain('smartcards: more card lists than e-mail addresses');
    expect(await userCount()).toBe(before);
  });
});

describe('a guest link lists each guest once (item 4)', () => {
  it('an e-mail given twice (in any case) makes one guest, and the answer says so', async () => {
    const r = await call(
      'POST',
      '/magiclinkadmin',
      guestLink({ email_list: ['Kim@Example.org', 'kim@example.org', 'lou@example.org'], smartcards: [{ number: '5500040' }] }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.success).toBe(`guest link ${String(r.body.magic_link_id)} created for 2 guest(s); duplicate e-mail addresses ignored: kim@example.org`);
    expect(Object.keys(r.body.email_ids as object).sort()).toEqual(['kim@example.org', 'lou@example.org']);
    const stored = JSON.parse((await db.value<string>('SELECT link FROM guest_links WHERE magic_link_id = ?', [Number(r.body.magic_link_id)]))!) as {
      email_list: string[];
      smartcards: Array<{ number: string }>;
    };
    expect(stored.email_list).toEqual(['kim@example.org', 'lou@example.org']);
    expect(stored.smartcards).toEqual([{ number: '5500040' }]);
  });

  it('a repeated e-mail given a card of its own is refused (one card per guest), and nothing is created', async () => {
    const before = await userCount();
    const r = await call(
      'POST',
      '/magiclinkadmin',
      guestLink({ email_list: ['max@example.org', 'MAX@example.org'], smartcards: [{ number: '5500041' }, { number: '5500042' }] }),
    );
    expect(r.status).toBe(400);
    expect(r.body.error).toContain('max@example.org');
    expect(await userCount()).toBe(before);
  });
});

describe('card numbers and labels (item 7)', () => {
  it('a number longer than 40 digits is refused for its length, on every path that takes cards', async () => {
    const ned = await invite('ned@example.org');
    const long = '1'.repeat(64);
    const put = await setCards(ned, [{ number: long }]);
    expect(put.status).toBe(400);
    expect(put.body.error).toContain('at most 40 digits');
    expect(put.body.error).not.toContain('holding an integer');
    const inv = await call('POST', '/invites', { emails: ['ned2@example.org'], smartcards: [[{ number: long }]], no_email: true });
    expect(inv.body.error).toContain('at most 40 digits');
    const link = await call('POST', '/magiclinkadmin', guestLink({ email_list: ['ned3@example.org'], smartcards: [{ number: long }] }));
    expect(link.body.error).toContain('at most 40 digits');
    // 40 digits are fine; letters are still "not an integer".
    expect((await setCards(ned, [{ number: '9'.repeat(40) }])).status).toBe(200);
    expect((await setCards(ned, [{ number: '12ab' }])).body.error).toContain('a string holding an integer');
  });

  it('a card stored without a label comes back with label null, in GET /modifysmartcard, GET /user and GET /directory', async () => {
    const oda = await invite('oda@example.org', [{ number: '5500050' }, { number: '5500051', label: 'PIN' }]);
    const expected = [
      { number: '5500050', label: null },
      { number: '5500051', label: 'PIN' },
    ];
    expect(await cardsOf(oda)).toEqual(expected);
    expect((await call('GET', `/user?email_id=${oda}`)).body.smartcards).toEqual(expected);
    const directory = (await call('GET', '/directory')).body as { details: Record<string, { smartcards: unknown }> };
    expect(directory.details[String(oda)]!.smartcards).toEqual(expected);
  });
});
