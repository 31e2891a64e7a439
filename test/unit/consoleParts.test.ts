import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServiceConfig } from '../../src/config/load.js';
import { DENY_REASONS } from '../../src/core/decision.js';
import { grantWords, refusalWords } from '../../src/service/console/eventWords.js';
import { html, trusted } from '../../src/service/console/html.js';
import { SessionStore } from '../../src/service/console/sessions.js';
import { SignInThrottle } from '../../src/service/console/signInThrottle.js';
import { SiteFeed } from '../../src/service/console/siteFeed.js';
import { SiteTime } from '../../src/service/console/siteTime.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { tempDir } from '../support/cli.js';
import { newServiceDb } from '../support/serviceDb.js';

describe('the console html tag', () => {
  it('shows markup in a value as text, in text and in attributes', () => {
    const name = `<img src=x onerror="alert('x')">&`;
    expect(html`<td title="${name}">${name}</td>`.text).toBe(
      '<td title="&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;">&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;</td>',
    );
  });

  it('passes its own fragments and trusted markup through, and drops null, undefined and false', () => {
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`<p>${inner}${trusted('<svg></svg>')}${null}${undefined}${false}${[html`<br>`, '<']}</p>`.text).toBe(
      '<p><b>&lt;i&gt;</b><svg></svg><br>&lt;</p>',
    );
  });
});

describe('console sessions', () => {
  const clock = { now: 1_000_000, wallNow: () => clock.now, monoNow: () => clock.now };
  const tmp = tempDir('door-agent-console-sessions-');
  let db: SqlDb;
  let store: SessionStore;
  beforeAll(async () => {
    ({ db } = await newServiceDb(tmp.path));
    store = new SessionStore(db, clock, { idleMs: 30 * 60_000, maxMs: 12 * 3_600_000 });
  });
  afterAll(async () => {
    await db?.close();
    tmp.cleanup();
  });

  it('end after the idle time, and each request restarts it', async () => {
    const { id } = await store.open('ADMIN', 'API key (ADMIN)');
    clock.now += 29 * 60_000;
    expect('session' in (await store.use(id))).toBe(true);
    clock.now += 29 * 60_000;
    expect('session' in (await store.use(id))).toBe(true);
    // The live stream's checks do not count as use.
    clock.now += 29 * 60_000;
    expect('session' in (await store.use(id, false))).toBe(true);
    clock.now += 2 * 60_000;
    expect(await store.use(id)).toEqual({ problem: 'expired' });
  });

  it('end at their maximum age however busy, and at logout; an unknown id is an ended session', async () => {
    const { id } = await store.open('REGULAR', 'API key (REGULAR)');
    for (let i = 0; i <= 12 * 4; i++) {
      clock.now += 15 * 60_000;
      await store.use(id);
    }
    expect(await store.use(id)).toEqual({ problem: 'expired' });
    const second = (await store.open('ADMIN', 'a@example.org')).id;
    await store.close(second);
    expect(await store.use(second)).toEqual({ problem: 'expired' });
    expect(await store.use(undefined)).toEqual({ problem: 'none' });
  });

  it('write a use to the database only once it is 30 s past the stored one, and keep only digests', async () => {
    const { id } = await store.open('ADMIN', 'API key (ADMIN)');
    const opened = clock.now;
    const stored = () => db.value<number>('SELECT last_seen_at FROM console_sessions WHERE who = ? AND created_at = ?', ['API key (ADMIN)', opened]);
    clock.now += 20_000;
    expect('session' in (await store.use(id))).toBe(true);
    expect(await stored()).toBe(opened);
    clock.now += 20_000;
    expect('session' in (await store.use(id))).toBe(true);
    expect(await stored()).toBe(opened + 40_000);
    expect(await db.value('SELECT count(*) FROM console_sessions WHERE id_hash = ?', [id])).toBe(0);
  });
});

describe('the console site feed', () => {
  const door = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
  const health = {
    at: '2026-11-24T09:00:00.000Z',
    uptime_s: 5,
    version: '0.1.0',
    outbox_depth: 0,
    cache: { revision: 3, age_s: 10 },
    readers: { online: 1, total: 1, per_door: { [door]: true } },
    clock_trusted: true,
    doors: [
      { uuid: door, name: 'Front door', lock: 'LOCKED', relock_at: null, open: false, lockdown: false, tamper: null, schedule: null, reader_online: true },
    ],
    memory: { rss: 1, heap_used: 1 },
    event_loop_lag_p99_ms: null,
  };

  it('follows door state, availability, health and events, and drops what does not parse', () => {
    const feed = new SiteFeed('site');
    const changes: string[] = [];
    feed.subscribe((c) => changes.push(c.kind));
    feed.onMessage('site/agents/front/health', Buffer.from(JSON.stringify(health)));
    feed.onMessage('site/agents/front/status', Buffer.from('offline'));
    expect(feed.agentOf(door)).toMatchObject({ id: 'front', online: false });
    feed.onMessage(`site/doors/${door}/state`, Buffer.from('{"state":"UNLOCKED","relock_at":"2026-11-24T09:00:05.000Z","door":"CLOSED"}'));
    expect(feed.door(door).state?.state).toBe('UNLOCKED');
    feed.onMessage(`site/doors/${door}/events`, Buffer.from(`{"type":"door_held_open","at":"2026-11-24T09:00:00.000Z","door":"${door}"}`));
    expect(feed.door(door).held).toBe(true);
    feed.onMessage(`site/doors/${door}/events`, Buffer.from(`{"type":"door_closed","at":"2026-11-24T09:00:01.000Z","door":"${door}"}`));
    expect(feed.door(door).held).toBe(false);
    feed.onMessage(`site/doors/${door}/state`, Buffer.from('{"state":"AJAR"}'));
    feed.onMessage('site/agents/front/status', Buffer.from('maybe'));
    expect(feed.dropped).toBe(2);
    expect(feed.door(door).state?.state).toBe('UNLOCKED');
    expect(changes).toContain('door');
  });
});

describe('server.console in the configuration', () => {
  it('is off unless enabled, has the documented defaults, and names a session longer than its maximum', () => {
    expect(parseServiceConfig('server: {}\n', 'service.yaml').server.console).toBeUndefined();
    expect(parseServiceConfig('server: { console: { enabled: true } }\n', 'service.yaml').server.console).toEqual({
      enabled: true,
      sessionMinutes: 30,
      maxSessionHours: 12,
    });
    expect(() => parseServiceConfig('server: { console: { enabled: true, sessionMinutes: 200, maxSessionHours: 2 } }\n', 'service.yaml')).toThrow(
      expect.objectContaining({
        problems: [{ path: 'server.console.sessionMinutes', message: 'must not be longer than maxSessionHours (2 h = 120 min)' }],
      }),
    );
  });
});

describe('the sign-in throttle', () => {
  it('counts at most maxTracked addresses and clients at once: past that every request waits, until the window passes', () => {
    const throttle = new SignInThrottle({ perAddress: 3, perClient: 10, windowMs: 1000, maxTracked: 3 });
    expect(throttle.take('a@example.org', '10.0.0.1', 0)).toBeNull();
    expect(throttle.take('b@example.org', '10.0.0.1', 0)).toBeNull(); // three counted: two addresses, one client
    expect(throttle.take('c@example.org', '10.0.0.2', 10)).toEqual({ limit: 'busy', retryMs: 990, first: true });
    expect(throttle.take('d@example.org', '10.0.0.3', 20)).toEqual({ limit: 'busy', retryMs: 980, first: false });
    expect(throttle.take('c@example.org', '10.0.0.2', 1000)).toBeNull(); // the first two left the window
  });
});

describe("the console's times (SiteTime)", () => {
  const now = Date.UTC(2026, 10, 29, 8, 0);
  const berlin = new SiteTime('Europe/Berlin', () => now);

  it("shows an instant in the site's zone, 24-hour, the zone named by its short name or else its offset", () => {
    expect(berlin.format(Date.UTC(2026, 10, 29, 13, 5, 9))).toBe('2026-11-29 14:05:09 CET');
    expect(berlin.format('2026-07-01T13:05:09.120Z')).toBe('2026-07-01 15:05:09 CEST');
    expect(berlin.format('2026-07-01 13:05:09')).toBe('2026-07-01 15:05:09 CEST'); // the service's UTC format
    expect(new SiteTime('America/New_York', () => now).format(Date.UTC(2026, 10, 29, 23, 0))).toBe('2026-11-29 18:00:00 EST');
    expect(new SiteTime('Asia/Kolkata', () => now).format(Date.UTC(2026, 10, 29, 23, 0))).toBe('2026-11-30 04:30:00 GMT+5:30');
    expect(new SiteTime('UTC', () => now).format(Date.UTC(2026, 10, 29, 0, 0))).toBe('2026-11-29 00:00:00 UTC');
    // A text that is no time, or a local time that names no zone, is shown as it is, never as a blank.
    expect(berlin.format('soon-ish')).toBe('soon-ish');
    expect(berlin.format('2026-07-01T13:05:09')).toBe('2026-07-01T13:05:09');
  });

  it("shows a relock today by its time alone, another day's in full", () => {
    expect(berlin.soon('2026-11-29T13:06:30Z')).toBe('14:06:30 CET');
    expect(berlin.soon('2026-11-30T13:06:30Z')).toBe('2026-11-30 14:06:30 CET');
  });

  it("reads a form's local time in the site's zone; a time the clocks skip is refused, saying so", () => {
    expect(berlin.readLocal('2030-06-30T09:00')).toEqual({ at: Date.UTC(2030, 5, 30, 7, 0) });
    expect(berlin.readLocal('2030-12-01T09:00')).toEqual({ at: Date.UTC(2030, 11, 1, 8, 0) });
    expect(berlin.readLocal('2030-03-31T02:30')).toEqual({
      problem: '2030-03-31 02:30 does not exist in Europe/Berlin (the clocks go forward then): choose a time before or after it',
    });
    expect(berlin.readLocal('2030-02-30T09:00')).toEqual({ problem: '2030-02-30 is not a date that exists' });
    expect(berlin.readLocal('tomorrow')).toEqual({ problem: '"tomorrow" is not a date and time (YYYY-MM-DDTHH:MM)' });
  });
});

describe("the Events page's words", () => {
  it('words every refusal reason the agent gives; an unknown code shows as itself', () => {
    for (const reason of DENY_REASONS) expect(refusalWords(reason)).not.toBe(reason);
    expect(refusalWords('outside_schedule')).toBe('outside its schedule');
    expect(refusalWords('flux_capacitor')).toBe('flux_capacitor');
    expect(refusalWords('toString')).toBe('toString');
    expect(refusalWords(null)).toBe('no reason given');
    expect(grantWords('card', false)).toBe('card');
    expect(grantWords('card', true)).toBe('guest link');
    expect(grantWords('token', false)).toBe('guest link');
    expect(grantWords('retina', false)).toBe('retina');
  });
});
