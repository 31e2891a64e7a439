import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { openServiceSqlite } from '../../src/service/database.js';
import { Mailer } from '../../src/service/mailer.js';
import type { buildService } from '../../src/service/server.js';
import { openPostgres } from '../../src/service/sql/openPostgres.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { tempDir } from '../support/cli.js';
import { testService } from '../support/serviceApp.js';
import { newServiceDb } from '../support/serviceDb.js';
import { rawRequest } from '../support/net.js';
import { SmtpSink, signInLinkIn } from '../support/smtpSink.js';
import { waitUntil } from '../support/wait.js';

// Two service processes on one database behind a round-robin balancer, as the operator's browser meets them: each
// request may reach either. Two services in this process, each with its own connection to the same database (a
// second SQLite connection to the same file, or a second PostgreSQL pool), each on its own loopback port; the
// mail goes to a real SMTP server. A session opened on one holds on the other, a sign-out on one holds on both, and
// a mailed link works once, wherever it is opened.
const tmp = tempDir('door-agent-console-shared-');
const PUBLIC_URL = 'https://doors.example.org';
const ADMIN = 'admin@example.org';
const smtp = new SmtpSink();
const silent = pino({ level: 'silent' });
const consoleOn = { enabled: true, sessionMinutes: 30, maxSessionHours: 12 };
let dbA: SqlDb;
let dbB: SqlDb;
let apps: Array<ReturnType<typeof buildService>> = [];
let portA: number;
let portB: number;
let adminKey: string;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** An HTTP request as the browser behind the TLS proxy sends it: the public Host (and Origin on a POST). */
async function send(port: number, method: string, path: string, cookie?: string, body?: string): Promise<Answer> {
  const headers: Record<string, string> = { host: 'doors.example.org' };
  if (cookie !== undefined) headers.cookie = `door_console=${cookie}`;
  if (method === 'POST') Object.assign(headers, { origin: PUBLIC_URL, 'content-type': 'application/x-www-form-urlencoded' });
  const answer = await rawRequest(port, method, path, headers, body);
  return { status: answer.status, headers: answer.headers, body: answer.body.toString() };
}

const cookieOf = (answer: Answer) => /door_console=([^;]+)/.exec(String(answer.headers['set-cookie']))![1]!;
const csrfOf = (page: Answer) => /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
const outbox = () => dbA.all<{ sent_at: number | null }>('SELECT sent_at FROM mail_outbox');
/** The sign-in links mailed so far, in order, once every mail of the outbox has reached the SMTP server. */
async function mailedLinks(): Promise<string[]> {
  await waitUntil(
    async () => {
      const mails = await outbox();
      return mails.every((m) => m.sent_at !== null) && smtp.mail.length === mails.length;
    },
    15_000,
    'the mail is delivered',
  );
  return smtp.mail.map((m) => {
    const link = new URL(signInLinkIn(m.text)!);
    return link.pathname + link.search;
  });
}

/** One service process on `db`, listening on a loopback port of its own. */
async function serviceOn(db: SqlDb, smtpUrl: string): Promise<number> {
  const app = testService(db, {
    mailer: new Mailer(db, { url: smtpUrl, from: 'doors@example.org' }, silent),
    console: { options: consoleOn, feed: null, mailConfigured: true, publicUrl: PUBLIC_URL },
  });
  apps.push(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as AddressInfo).port;
}

beforeAll(async () => {
  const smtpUrl = await smtp.start();
  const first = await newServiceDb(tmp.path, 'shared');
  dbA = first.db;
  const where = first.location;
  dbB =
    where.engine === 'sqlite'
      ? openServiceSqlite(where.file)
      : await openPostgres({ url: where.url, passwordFile: where.passwordFile, maxConnections: 5 }, {}, silent);
  portA = await serviceOn(dbA, smtpUrl);
  portB = await serviceOn(dbB, smtpUrl);
  const keys = new ApiKeys(dbA);
  const superKey = await keys.create('SUPER', 0, Date.now());
  const invited = await fetch(`http://127.0.0.1:${portA}/invites`, {
    method: 'POST',
    headers: { authorization: `Bearer ${superKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ emails: [ADMIN], no_email: true }),
  });
  expect(invited.status).toBe(200);
  await dbA.run("UPDATE users SET rank = 'ADMIN' WHERE email = ?", [ADMIN]);
  adminKey = await keys.create('ADMIN', 0, Date.now());
});

afterAll(async () => {
  for (const app of apps) await app.close();
  apps = [];
  await dbB?.close();
  await dbA?.close();
  await smtp.stop();
  tmp.cleanup();
});

describe('console sessions shared by two service processes on one database', () => {
  it('a session opened on A works on B, a message set on A shows on B once, and signing out on B ends it on A', async () => {
    const signedIn = await send(portA, 'POST', '/console/signin', undefined, `api_key=${adminKey}`);
    expect(signedIn.status).toBe(303);
    const cookie = cookieOf(signedIn);

    const onB = await send(portB, 'GET', '/console/people', cookie);
    expect(onB.status).toBe(200);
    expect(onB.body).toContain('Signed in: API key (ADMIN)');

    // An action posted to A (with the form of B's page), its answer shown by the page B serves after the redirect.
    const acted = await send(portA, 'POST', '/console/people/999999', cookie, `csrf=${csrfOf(onB)}&action=suspend`);
    expect(acted.status).toBe(303);
    expect(acted.headers.location).toBe('/console/people');
    const after = await send(portB, 'GET', '/console/people', cookie);
    expect(after.body).toContain('No person with email_id 999999: removed meanwhile?');
    expect((await send(portA, 'GET', '/console/people', cookie)).body).not.toContain('removed meanwhile');

    const out = await send(portB, 'POST', '/console/logout', cookie, `csrf=${csrfOf(after)}`);
    expect(out.status).toBe(303);
    expect(out.headers.location).toBe('/console/signin?m=out');
    const refused = await send(portA, 'GET', '/console/people', cookie);
    expect(refused.status).toBe(303);
    expect(refused.headers.location).toBe('/console/signin?m=expired');
    expect((await send(portB, 'GET', '/console/people', cookie)).headers.location).toBe('/console/signin?m=expired');
  });

  it('a link mailed by A signs in on B once; opened again on A it is refused; a newer link replaces it wherever asked', async () => {
    expect((await send(portA, 'POST', '/console/signin/email', undefined, `email=${encodeURIComponent(ADMIN)}`)).status).toBe(200);
    const [link] = await mailedLinks();

    const opened = await send(portB, 'GET', link!);
    expect(opened.status).toBe(303);
    expect(opened.headers.location).toBe('/console/people');
    const cookie = cookieOf(opened);
    expect((await send(portA, 'GET', '/console/people', cookie)).body).toContain('Signed in: admin@example.org (ADMIN)');

    const again = await send(portA, 'GET', link!);
    expect(again.status).toBe(303);
    expect(again.headers.location).toBe('/console/signin?m=link');

    // Two links asked for, one on each process: only the later one signs in, on either.
    expect((await send(portA, 'POST', '/console/signin/email', undefined, `email=${encodeURIComponent(ADMIN)}`)).status).toBe(200);
    await mailedLinks();
    expect((await send(portB, 'POST', '/console/signin/email', undefined, `email=${encodeURIComponent(ADMIN)}`)).status).toBe(200);
    const [, older, newer] = await mailedLinks();
    expect((await send(portB, 'GET', older!)).headers.location).toBe('/console/signin?m=link');
    expect((await send(portA, 'GET', newer!)).headers.location).toBe('/console/people');

    // One link opened on both processes at the same moment (a double click through the balancer): one session.
    expect((await send(portB, 'POST', '/console/signin/email', undefined, `email=${encodeURIComponent(ADMIN)}`)).status).toBe(200);
    const last = (await mailedLinks()).at(-1)!;
    const both = await Promise.all([send(portA, 'GET', last), send(portB, 'GET', last)]);
    expect(both.map((a) => a.headers.location).sort()).toEqual(['/console/people', '/console/signin?m=link']);
  });

  it('keeps only digests: no cookie or link token is in the database', async () => {
    const signedIn = await send(portB, 'POST', '/console/signin', undefined, `api_key=${adminKey}`);
    const cookie = cookieOf(signedIn);
    expect(await dbA.value('SELECT count(*) FROM console_sessions WHERE id_hash = ?', [cookie])).toBe(0);
    const hashes = await dbA.column<string>('SELECT id_hash FROM console_sessions');
    expect(hashes.length).toBeGreaterThan(0);
    for (const hash of hashes) expect(hash).toMatch(/^[0-9a-f]{64}$/);
  });
});
