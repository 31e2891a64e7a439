import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { openServiceDatabase, type ServiceDb } from '../../src/service/database.js';
import { tempDir } from '../support/cli.js';
import { testService } from '../support/serviceApp.js';

// The console's e-mail sign-in, in process (fastify's inject) on a real database: the link is read from the outbox.
const tmp = tempDir('door-agent-console-mail-');
let db: ServiceDb;
let app: ReturnType<typeof testService>;
const origin = { origin: 'http://localhost:80', host: 'localhost:80' };

beforeAll(async () => {
  db = openServiceDatabase(join(tmp.path, 'service.db'));
  app = testService(db, { console: { options: { enabled: true, sessionMinutes: 30, maxSessionHours: 12 }, feed: null, mailConfigured: true } });
  await app.ready();
  const key = new ApiKeys(db).create('SUPER', 0, Date.now());
  await app.inject({
    method: 'POST',
    url: '/invites',
    headers: { authorization: `Bearer ${key}` },
    payload: { emails: ['admin@example.org', 'plain@example.org'], no_email: true },
  });
  db.prepare("UPDATE users SET rank = 'ADMIN' WHERE email = 'admin@example.org'").run();
});

afterAll(async () => {
  await app.close();
  db.close();
  tmp.cleanup();
});

const mails = () => db.prepare('SELECT recipient, body FROM mail_outbox ORDER BY rowid').all() as Array<{ recipient: string; body: string }>;
const ask = (email: string) =>
  app.inject({
    method: 'POST',
    url: '/console/signin/email',
    headers: { ...origin, 'content-type': 'application/x-www-form-urlencoded' },
    payload: `email=${encodeURIComponent(email)}`,
  });

describe('console sign-in by e-mail', () => {
  it('mails a one-time link to an ADMIN user only, with the same answer for every address', async () => {
    const answers = await Promise.all(['admin@example.org', 'plain@example.org', 'nobody@example.org'].map(ask));
    for (const a of answers) expect(a.body).toContain('If this address may sign in, a link is on its way');
    expect(mails().map((m) => m.recipient)).toEqual(['admin@example.org']);
    const link = /\/console\/signin\/link\?token=[A-Za-z0-9_-]{43}/.exec(mails()[0]!.body)![0];

    const opened = await app.inject({ method: 'GET', url: link });
    expect(opened.statusCode).toBe(303);
    expect(opened.headers.location).toBe('/console/people');
    const cookie = String(opened.headers['set-cookie']).split(';')[0]!;
    const people = await app.inject({ method: 'GET', url: '/console/people', headers: { cookie } });
    expect(people.body).toContain('Signed in: admin@example.org (ADMIN)');

    // Once only.
    const again = await app.inject({ method: 'GET', url: link });
    expect(again.headers.location).toBe('/console/signin?m=link');
  });

  it('refuses a POST from another origin or without the session CSRF token', async () => {
    const evil = await app.inject({
      method: 'POST',
      url: '/console/signin/email',
      headers: { origin: 'http://evil.example', host: 'localhost:80', 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'email=admin@example.org',
    });
    expect(evil.statusCode).toBe(403);
    const key = new ApiKeys(db).create('ADMIN', 0, Date.now());
    const signIn = await app.inject({
      method: 'POST',
      url: '/console/signin',
      headers: { ...origin, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `api_key=${key}`,
    });
    const cookie = String(signIn.headers['set-cookie']).split(';')[0]!;
    const noToken = await app.inject({
      method: 'POST',
      url: '/console/people/1',
      headers: { ...origin, cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'action=suspend',
    });
    expect(noToken.statusCode).toBe(403);
    expect(noToken.body).toContain('CSRF token does not match');
    expect(db.prepare("SELECT suspended FROM users WHERE email = 'admin@example.org'").pluck().get()).toBe(0);
  });
});
