import { readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import type { buildService } from '../../src/service/server.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { tempDir } from '../support/cli.js';
import { testService } from '../support/serviceApp.js';
import { newServiceDb } from '../support/serviceDb.js';

// A restore of the service's database awaits acceptance (docs/reference-service.md "Backup and restore"): the
// reference service on a real loopback port, on this run's engine, its history mark a real file. A restore is
// simulated as directoryHistory.test.ts does: a mark naming more than the database holds (seen at start), or a
// door asking with a revision the database never issued (seen at request time).
const tmp = tempDir('door-agent-restore-accept-');
const consoleOn = { options: { enabled: true, sessionMinutes: 30, maxSessionHours: 12, timezone: 'UTC' }, feed: null, mailConfigured: false };
let db: SqlDb;
let app: ReturnType<typeof buildService> | null = null;
let base = '';
const keys = { ADMIN: '', REGULAR: '' };
const markFile = join(tmp.path, 'service-history.json');
const logs: Array<{ level: number; msg: string }> = [];

/** The service on `db` as a start brings it up (its mark checked), listening, with the console. */
async function start(): Promise<void> {
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as { level: number; msg: string }) });
  app = testService(db, { historyMarkFile: markFile, logger, console: consoleOn });
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

async function call(method: string, path: string, key = keys.ADMIN, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const directory = async (query = '') => (await call('GET', `/directory${query}`)).body;
const statusRestore = async () => ((await call('GET', '/status')).body.directory as { restore: unknown }).restore;

/** A console session of `key`'s rank: its cookie. */
async function signIn(key: string): Promise<string> {
  const res = await fetch(`${base}/console/signin`, {
    method: 'POST',
    headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    body: `api_key=${key}`,
    redirect: 'manual',
  });
  return String(res.headers.get('set-cookie')).split(';')[0]!;
}

async function consolePage(cookie: string, path = '/console/people'): Promise<string> {
  const res = await fetch(`${base}${path}`, { headers: { cookie }, redirect: 'manual' });
  expect(res.status).toBe(200);
  return res.text();
}

beforeAll(async () => {
  ({ db } = await newServiceDb(tmp.path, 'restore_accept'));
  const apiKeys = new ApiKeys(db);
  keys.ADMIN = await apiKeys.create('ADMIN', 0, Date.now());
  keys.REGULAR = await apiKeys.create('REGULAR', 0, Date.now());
  await start();
  expect((await call('POST', '/invites', keys.ADMIN, { emails: ['ann@example.org', 'bob@example.org'], no_email: true })).status).toBe(200);
});

afterAll(async () => {
  await app?.close();
  await db.close();
  tmp.cleanup();
});

describe('a restored service database awaits acceptance', () => {
  it('none is pending on a database that never went back', async () => {
    expect(await directory()).not.toHaveProperty('restore');
    expect(await statusRestore()).toBeNull();
    expect(await call('POST', '/directory/restore/accept')).toEqual({ status: 409, body: { error: 'no restore awaits acceptance' } });
  });

  it('seen at start: every answer carries it, GET /status shows it, the log says how to accept it; ADMIN accepts it with a new revision', async () => {
    const before = await directory();
    await app!.close();
    // The service had issued more than this database holds: it was restored from a backup.
    const mark = JSON.parse(readFileSync(markFile, 'utf8')) as { revision: number };
    writeFileSync(markFile, JSON.stringify({ ...mark, revision: mark.revision + 3, tag: 'f'.repeat(16) }));
    await start();
    const warned = logs.find((l) => l.level === 40 && /restored or replaced/.test(l.msg));
    expect(warned?.msg).toMatch(/every door syncs in full\. .*accept it with POST \/directory\/restore\/accept or on the console$/);

    const full = await directory();
    expect(full.history).not.toBe(before.history);
    expect(full.restore).toEqual({ detected_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/), reason: 'restored: the database holds less than its mark' });
    const delta = await directory(`?since=${full.revision as number}&history=${full.history as string}&tag=${full.tag as string}`);
    expect(delta).toMatchObject({ full: false, restore: full.restore });
    expect(await statusRestore()).toEqual(full.restore);

    expect(await call('POST', '/directory/restore/accept', keys.REGULAR)).toMatchObject({ status: 403 });
    expect(await statusRestore()).toEqual(full.restore);
    const accepted = await call('POST', '/directory/restore/accept');
    expect(accepted).toEqual({ status: 200, body: { accepted: true, revision: (full.revision as number) + 1 } });
    const after = await directory();
    expect(after).toMatchObject({ revision: (full.revision as number) + 1, history: full.history });
    expect(after).not.toHaveProperty('restore');
    expect(await statusRestore()).toBeNull();
    expect(await call('POST', '/directory/restore/accept')).toEqual({ status: 409, body: { error: 'no restore awaits acceptance' } });
  });

  it('seen at request time (a door holds a revision this database never issued): the same, until accepted', async () => {
    const current = await directory();
    const answer = await directory(`?since=${(current.revision as number) + 5}&history=${current.history as string}`);
    expect(answer).toMatchObject({ full: true, restore: { reason: expect.stringMatching(/^went back: a caller holds revision/) } });
    expect(answer.history).not.toBe(current.history);
    expect(logs.find((l) => /the directory went back/.test(l.msg))?.msg).toMatch(/POST \/directory\/restore\/accept/);
    expect(await call('POST', '/directory/restore/accept')).toMatchObject({ status: 200, body: { accepted: true } });
    expect(await directory()).not.toHaveProperty('restore');
  });

  it('the console shows the banner on its pages while it awaits acceptance; an ADMIN accepts it there, a REGULAR session cannot', async () => {
    const admin = await signIn(keys.ADMIN);
    const regular = await signIn(keys.REGULAR);
    expect(await consolePage(admin)).not.toContain('restore-banner');
    const current = await directory();
    await directory(`?since=${(current.revision as number) + 5}`); // a restore seen at request time
    const restore = (await directory()).restore as { detected_at: string };

    const page = await consolePage(admin, '/console/doors');
    expect(page).toContain(
      `<time datetime="${restore.detected_at}" title="UTC">${restore.detected_at.slice(0, 10)} ${restore.detected_at.slice(11, 19)} UTC</time>`,
    );
    expect(page.replace(/<time [^>]*>[^<]*<\/time>/, 'TIME')).toContain(
      "The service's database was restored (detected TIME). " +
        'The doors keep refusing what it would grant beyond what they hold until you accept the restore. First make again what was revoked after the backup ' +
        '(door-agent status at a door lists what it holds back), then accept.',
    );
    expect(page).toMatch(
      /<form method="post" action="\/console\/restore\/accept"[^>]*><input type="hidden" name="csrf" value="[^"]+">.*Accept the restore<\/button>/,
    );
    const regularPage = await consolePage(regular);
    expect(regularPage).toContain('restore-banner');
    expect(regularPage).not.toContain('Accept the restore');

    // A REGULAR session's post is the API's refusal, said on the page it came from; the restore still awaits.
    const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)![1]!;
    const post = (cookie: string, csrf: string) =>
      fetch(`${base}/console/restore/accept`, {
        method: 'POST',
        headers: { cookie, origin: base, referer: `${base}/console/doors`, 'content-type': 'application/x-www-form-urlencoded' },
        body: `csrf=${csrf}`,
        redirect: 'manual',
      });
    const refused = await post(regular, csrfOf(regularPage));
    expect([refused.status, refused.headers.get('location')]).toEqual([303, '/console/doors']);
    expect(await consolePage(regular, '/console/doors')).toContain('This needs rank ADMIN: you are signed in as REGULAR.');
    expect(await statusRestore()).not.toBeNull();

    const done = await post(admin, csrfOf(page));
    expect([done.status, done.headers.get('location')]).toEqual([303, '/console/doors']);
    const next = await consolePage(admin, '/console/doors');
    expect(next).toMatch(/Restore accepted: the doors take the restored directory \(revision \d+\) at their next sync\./);
    expect(next).not.toContain('restore-banner');
    expect(await statusRestore()).toBeNull();
  });
});
