import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServiceConfig } from '../../src/config/load.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import type { ServerOptions } from '../../src/service/options.js';
import { startService, type RunningService } from '../../src/service/root.js';
import { InputError } from '../../src/util/errors.js';
import { DOOR_UUID, runCli, tempDir } from '../support/cli.js';
import { ManualTime } from '../support/manualTime.js';
import { rawRequest } from '../support/net.js';
import { SmtpSink, signInLinkIn as linkIn } from '../support/smtpSink.js';
import { waitUntil } from '../support/wait.js';

// The console's e-mail sign-in and its origin rule as an attacker and an operator meet them: the service's own
// composition root in this process, listening on loopback, its mail going to a real SMTP server, its clock a manual
// one (the throttle's 15 minutes pass without a wait). Every request is raw HTTP with the headers the attacker
// chooses: a forged Host and an Origin to match it.
const tmp = tempDir('door-agent-console-mail-');
const PUBLIC_URL = 'https://doors.example.org';
const ADMIN = 'admin@example.org';
const smtp = new SmtpSink();
const received = smtp.mail;
const logLines: Array<Record<string, unknown>> = [];
const time = new ManualTime();
let mailing: RunningService; // server.publicUrl and server.smtp: mail sign-in on
let loopback: RunningService; // no public URL, on 127.0.0.1
let wildcard: RunningService; // no public URL, on 0.0.0.0
let adminKey: string;

const portOf = (service: RunningService) => Number(new URL(service.url).port);
const resources = [{ resourceId: 12, uuid: DOOR_UUID, type: 'DOOR' as const, name: 'Front door' }];
const consoleOn = { enabled: true, sessionMinutes: 30, maxSessionHours: 12 };

function server(name: string, listen: string, more: Partial<ServerOptions> = {}): ServerOptions {
  return Object.assign({ listen, dataDir: join(tmp.path, name), lockReplyTimeoutSeconds: 5, resources, console: consoleOn }, more);
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** An HTTP request as curl would send it: exactly the headers given (Host included) and nothing else. */
async function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  const answer = await rawRequest(port, method, path, headers, body);
  return { status: answer.status, headers: answer.headers, body: answer.body.toString() };
}

const form = (headers: Record<string, string>) => Object.assign({ 'content-type': 'application/x-www-form-urlencoded' }, headers);
/** POST /console/signin/email for `email`, with the Host and Origin given. */
const askLink = (email: string, headers: Record<string, string> = { host: 'doors.example.org', origin: PUBLIC_URL }) =>
  send(portOf(mailing), 'POST', '/console/signin/email', form(headers), `email=${encodeURIComponent(email)}`);

const outbox = () =>
  mailing.db.all<{ recipient: string; body: string; sent_at: number | null }>('SELECT recipient, body, sent_at FROM mail_outbox ORDER BY mail_id');
/** Waits until the outbox is sent (the SMTP server has every mail), and answers what it received. */
async function delivered(): Promise<Array<{ to: string; text: string }>> {
  await waitUntil(
    async () => {
      const mails = await outbox();
      return mails.every((m) => m.sent_at !== null) && received.length === mails.length;
    },
    15_000,
    'the mail is delivered',
  );
  return received;
}

beforeAll(async () => {
  const smtpUrl = await smtp.start();
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n')) if (line) logLines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    }),
  );
  const deps = { clock: time, logger, env: {} };
  mailing = await startService(
    { server: server('mailing', '127.0.0.1:0', { smtp: { url: smtpUrl, from: 'doors@example.org' }, publicUrl: PUBLIC_URL }) },
    deps,
  );
  loopback = await startService({ server: server('loopback', '127.0.0.1:0') }, deps);
  wildcard = await startService({ server: server('wildcard', '0.0.0.0:0') }, deps);
  const keys = new ApiKeys(mailing.db);
  const superKey = await keys.create('SUPER', 0, time.wallNow());
  await fetch(`${mailing.url}/invites`, {
    method: 'POST',
    headers: { authorization: `Bearer ${superKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ emails: [ADMIN, 'plain@example.org'], no_email: true }),
  });
  await mailing.db.run("UPDATE users SET rank = 'ADMIN' WHERE email = ?", [ADMIN]);
  adminKey = await new ApiKeys(loopback.db).create('ADMIN', 0, time.wallNow());
  await new ApiKeys(wildcard.db).create('ADMIN', 0, time.wallNow());
});

afterAll(async () => {
  await mailing?.stop();
  await loopback?.stop();
  await wildcard?.stop();
  await smtp.stop();
  tmp.cleanup();
});

describe('the mailed sign-in link and the origin of console forms', () => {
  it('refuses a forged Host with a matching Origin; the link mailed is built from server.publicUrl, never from Host', async () => {
    const forged = await askLink(ADMIN, { host: 'evil.example', origin: 'http://evil.example' });
    expect(forged.status).toBe(403);
    const byReferer = await askLink(ADMIN, { host: 'evil.example', referer: 'http://evil.example/console/signin' });
    expect(byReferer.status).toBe(403);
    expect(await outbox()).toEqual([]);

    // The page served at the public URL (through its TLS proxy), whatever Host the request carries.
    const asked = await askLink(ADMIN, { host: 'evil.example', origin: PUBLIC_URL });
    expect(asked.status).toBe(200);
    expect(asked.body).toContain('If this address may sign in, a link is on its way');
    const [mail] = await delivered();
    expect(mail!.to).toBe(ADMIN);
    expect(mail!.text).not.toContain('evil.example');
    const link = linkIn(mail!.text);
    expect(link).toMatch(new RegExp(`^${PUBLIC_URL}/console/signin/link\\?token=`));

    const opened = await send(portOf(mailing), 'GET', new URL(link!).pathname + new URL(link!).search, { host: 'evil.example' });
    expect(opened.status).toBe(303);
    expect(opened.headers.location).toBe('/console/people');
    // Served over https (the public URL says so): the cookie is Secure, whatever the request said.
    expect(String(opened.headers['set-cookie'])).toMatch(/^door_console=[^;]+; Path=\/console; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/);
  });

  it('without server.publicUrl, compares the origin with the address the service listens on, never with Host', async () => {
    const port = portOf(loopback);
    const signIn = (headers: Record<string, string>) => send(port, 'POST', '/console/signin', form(headers), `api_key=${adminKey}`);
    const forged = await signIn({ host: 'evil.example', origin: 'http://evil.example' });
    expect(forged.status).toBe(403);
    expect(forged.body).toContain(`not sent from a console page of this site (http://127.0.0.1:${port}`);
    expect(forged.body).toContain('server.publicUrl');
    // The same port by another scheme or port is another origin.
    expect((await signIn({ host: `127.0.0.1:${port}`, origin: `https://127.0.0.1:${port}` })).status).toBe(403);
    expect((await signIn({ host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port + 1}` })).status).toBe(403);
    // Its own address, in either spelling of loopback, whatever Host says.
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
      const ok = await signIn({ host: 'evil.example', origin });
      expect(ok.status, origin).toBe(303);
      expect(ok.headers.location).toBe('/console/people');
      expect(String(ok.headers['set-cookie'])).not.toContain('Secure');
    }
  });

  it('on a wildcard listen without server.publicUrl, refuses every console form and says to set it', async () => {
    const port = portOf(wildcard);
    const key = await new ApiKeys(wildcard.db).create('ADMIN', 0, time.wallNow());
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://0.0.0.0:${port}`]) {
      const answer = await send(port, 'POST', '/console/signin', form({ host: `127.0.0.1:${port}`, origin }), `api_key=${key}`);
      expect(answer.status, origin).toBe(403);
      expect(answer.body).toContain('listens on every address');
      expect(answer.body).toContain('set server.publicUrl');
    }
    // Pages still load (a GET changes nothing): the sign-in page says the same.
    const page = await send(port, 'GET', '/console/signin', { host: `127.0.0.1:${port}` });
    expect(page.status).toBe(200);
    expect(logLines.some((l) => l.level === 40 && String(l.msg).includes('server.publicUrl'))).toBe(true);
  });

  it('does not start mail sign-in without server.publicUrl; config check and the schema name the key', async () => {
    const withMail = server('nourl', '127.0.0.1:0', { smtp: { url: 'smtp://127.0.0.1:25', from: 'doors@example.org' } });
    const refused = await startService({ server: withMail }, { clock: time, logger: pino({ level: 'silent' }), env: {} }).then(
      (s) => s.stop().then(() => null),
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(InputError);
    expect((refused as InputError).exitCode).toBe(78);
    expect((refused as InputError).problems.map((p) => p.path)).toEqual(['server.publicUrl']);

    const yaml = (server: string) => `server:\n${server}  resources: [ { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door } ]\n`;
    const mailOn = '  console: { enabled: true }\n  smtp: { url: "smtp://127.0.0.1:25", from: doors@example.org }\n';
    const problem = (text: string) => {
      try {
        parseServiceConfig(text, 'service.yaml');
        return 'accepted';
      } catch (err) {
        return (err as InputError).problems.map((p) => `${p.path}: ${p.message}`).join('; ');
      }
    };
    expect(problem(yaml(mailOn))).toMatch(/^server\.publicUrl: required when the console mails sign-in links/);
    expect(problem(yaml(`${mailOn}  publicUrl: https://doors.example.org/console\n`))).toMatch(/^server\.publicUrl: .*no path/);
    expect(problem(yaml(`${mailOn}  publicUrl: "https://doors.example.org/?a=1"\n`))).toMatch(/^server\.publicUrl: .*no query/);
    expect(problem(yaml(`${mailOn}  publicUrl: ftp://doors.example.org\n`))).toMatch(/^server\.publicUrl: .*http:\/\/ or https:\/\//);
    expect(problem(yaml(`${mailOn}  publicUrl: doors.example.org\n`))).toMatch(/^server\.publicUrl: /);
    expect(problem(yaml(`${mailOn}  publicUrl: https://doors.example.org/\n`))).toBe('accepted');
    expect(problem(yaml('  console: { enabled: true }\n'))).toBe('accepted'); // no mail: no link to build

    // As the operator runs it: the built CLI.
    const file = join(tmp.path, 'service.yaml');
    writeFileSync(file, yaml(`  dataDir: ${join(tmp.path, 'cli')}\n${mailOn}`));
    const check = runCli(['config', 'check', '--config', file]);
    expect(check.status).toBe(78);
    expect(check.stderr).toContain('server.publicUrl: required when the console mails sign-in links');
    const start = runCli(['service', '--config', file]);
    expect(start.status).toBe(78);
    expect(start.stderr).toContain('server.publicUrl');
    writeFileSync(file, yaml(`  listen: 0.0.0.0:8080\n  console: { enabled: true }\n`));
    const warned = runCli(['config', 'check', '--config', file]);
    expect(warned.status).toBe(0);
    expect(warned.stdout).toContain('WARNING: server.listen 0.0.0.0:8080 is every address and server.publicUrl is not set');
  });
});

describe('the throttle on mailed sign-in links', () => {
  const quarter = 15 * 60_000;
  const refusals = () => logLines.filter((l) => l.level === 40 && String(l.msg).startsWith('console sign-in link refused'));

  it('thirty requests for one address send three mails, one link live at a time; the rest are refused with 429, logged once', async () => {
    time.advance(quarter + 60_000); // a fresh window, whatever the tests before asked
    received.length = 0;
    await mailing.db.run('DELETE FROM mail_outbox');
    const answers = [];
    for (let i = 0; i < 30; i++) answers.push(await askLink(ADMIN));
    expect(answers.map((a) => a.status)).toEqual([...Array(3).fill(200), ...Array(27).fill(429)]);
    expect(answers[3]!.body).toContain('Too many sign-in links asked for; try again in 15 minutes.');
    expect(answers[3]!.headers['retry-after']).toBe('900');
    const mails = await delivered();
    expect(mails.map((m) => m.to)).toEqual([ADMIN, ADMIN, ADMIN]);
    expect(refusals()).toHaveLength(1);
    expect(refusals()[0]).toMatchObject({ email: ADMIN, client: '127.0.0.1', limit: 'address' });

    // Each new link replaced the one before: only the last one signs in.
    const links = mails.map((m) => new URL(linkIn(m.text)!));
    const open = (link: URL) => send(portOf(mailing), 'GET', link.pathname + link.search, { host: 'doors.example.org' });
    expect((await open(links[0]!)).headers.location).toBe('/console/signin?m=link');
    expect((await open(links[1]!)).headers.location).toBe('/console/signin?m=link');
    expect((await open(links[2]!)).headers.location).toBe('/console/people');
    // No token in the log.
    const tokens = links.map((l) => l.searchParams.get('token')!);
    expect(logLines.filter((l) => tokens.some((t) => JSON.stringify(l).includes(t)))).toEqual([]);

    // Five minutes on: ten to wait.
    time.advance(5 * 60_000);
    expect((await askLink(ADMIN)).body).toContain('try again in 10 minutes');
    time.advance(10 * 60_000 + 1000);
    expect((await askLink(ADMIN)).status).toBe(200);
  });

  it('ten requests from one client, for any addresses, known or not; the eleventh is refused the same way', async () => {
    time.advance(quarter + 60_000);
    const before = (await outbox()).length;
    for (let i = 1; i <= 10; i++) expect((await askLink(`nobody${i}@example.org`)).status).toBe(200);
    const refused = await askLink(ADMIN);
    expect(refused.status).toBe(429);
    expect(refused.body).toContain('Too many sign-in links asked for; try again in 15 minutes.');
    expect((await outbox()).length).toBe(before); // none of those addresses may sign in, and the ADMIN's was refused
    expect(refusals().at(-1)).toMatchObject({ email: ADMIN, client: '127.0.0.1', limit: 'client' });
    time.advance(quarter);
    expect((await askLink(ADMIN)).status).toBe(200);
    expect((await outbox()).length).toBe(before + 1);
  });
});

describe('a console session holds only while its holder still may sign in', () => {
  const quarter = 15 * 60_000;
  const cookieOf = (answer: Answer) => /door_console=([^;]+)/.exec(String(answer.headers['set-cookie']))![1]!;
  const page = (cookie: string) => send(portOf(mailing), 'GET', '/console/people', { host: 'doors.example.org', cookie: `door_console=${cookie}` });
  const api = (superKey: string, path: string, body: Record<string, unknown>) =>
    fetch(`${mailing.url}${path}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${superKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const admin = async () => (await mailing.db.get<{ email_id: number; user_id: number }>('SELECT email_id, user_id FROM users WHERE email = ?', [ADMIN]))!;
  /** Signs the ADMIN in by a mailed link, as they would: the session's cookie. */
  async function signedInByMail(): Promise<string> {
    await delivered(); // the mail the tests before asked for has arrived: the count starts afresh
    received.length = 0;
    await mailing.db.run('DELETE FROM mail_outbox');
    expect((await askLink(ADMIN)).status).toBe(200);
    const link = new URL(linkIn((await delivered())[0]!.text)!);
    const opened = await send(portOf(mailing), 'GET', link.pathname + link.search, { host: 'doors.example.org' });
    expect(opened.headers.location).toBe('/console/people');
    return cookieOf(opened);
  }

  it('an ADMIN suspended, or demoted to REGULAR, is signed out at their next request, live stream included', async () => {
    time.advance(quarter + 60_000);
    const superKey = await new ApiKeys(mailing.db).create('SUPER', 0, time.wallNow());
    const cookie = await signedInByMail();
    expect((await page(cookie)).body).toContain('Signed in: admin@example.org (ADMIN)');

    // Another ADMIN suspends them (they left the company): the console they have open stops at once.
    expect((await api(superKey, '/togglesuspension', { email_id: (await admin()).email_id })).status).toBe(200);
    const after = await page(cookie);
    expect(after.status).toBe(303);
    expect(after.headers.location).toBe('/console/signin?m=ended');
    const signIn = await send(portOf(mailing), 'GET', '/console/signin?m=ended', { host: 'doors.example.org' });
    expect(signIn.body).toContain('Your session was ended');
    const live = await send(portOf(mailing), 'GET', '/console/live?page=doors', { host: 'doors.example.org', cookie: `door_console=${cookie}` });
    expect(live.status).toBe(401);
    // Reinstated, the old session stays ended: they sign in again.
    expect((await api(superKey, '/togglesuspension', { email_id: (await admin()).email_id })).status).toBe(200);
    expect((await page(cookie)).status).toBe(303);

    // Promoted to SUPER, the session follows; demoted to REGULAR (who may not sign in by mail), it ends.
    const second = await signedInByMail();
    expect((await api(superKey, '/modifyrank', { admin_user_id: (await admin()).user_id, rank: 'SUPER' })).status).toBe(200);
    expect((await page(second)).body).toContain('Signed in: admin@example.org (SUPER)');
    expect((await api(superKey, '/modifyrank', { admin_user_id: (await admin()).user_id, rank: 'REGULAR' })).status).toBe(200);
    expect((await page(second)).headers.location).toBe('/console/signin?m=ended');
    await mailing.db.run("UPDATE users SET rank = 'ADMIN' WHERE email = ?", [ADMIN]);
    expect((await page(second)).status).toBe(303);
  });

  it('a session opened with an API key ends when the key expires', async () => {
    const keys = new ApiKeys(mailing.db);
    const key = await keys.create('ADMIN', 1, time.wallNow());
    time.advance(24 * 3_600_000 - 10 * 60_000); // ten minutes before the key expires
    const signedIn = await send(portOf(mailing), 'POST', '/console/signin', form({ host: 'doors.example.org', origin: PUBLIC_URL }), `api_key=${key}`);
    expect(signedIn.status).toBe(303);
    const cookie = cookieOf(signedIn);
    expect((await page(cookie)).status).toBe(200);
    time.advance(11 * 60_000); // the key has expired; the session is 11 minutes old and was used a minute in
    const after = await page(cookie);
    expect(after.status).toBe(303);
    expect(after.headers.location).toBe('/console/signin?m=ended');
  });
});
