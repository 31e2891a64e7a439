import { join } from 'node:path';
import { connectAsync, type MqttClient } from 'mqtt';
import { pino } from 'pino';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServiceConfig } from '../../src/config/load.js';
import { parseServiceTime } from '../../src/core/schedule.js';
import { parseGuestLinkMessage } from '../../src/protocol/guestLinks.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { startService, type RunningService } from '../../src/service/root.js';
import { systemClock } from '../../src/util/clock.js';
import { launchChromium } from '../support/browser.js';
import { DOOR_UUID, SECOND_DOOR_UUID, tempDir } from '../support/cli.js';
import { Mosquitto } from '../support/mosquitto.js';
import { rawRequest } from '../support/net.js';
import { sleep, waitUntil } from '../support/wait.js';

// The console as an operator reads it, on a site whose zone is Europe/Berlin: the service's own composition root
// started from a configuration text (server.timezone), a real mosquitto carrying the agents' events as an agent
// publishes them, and Chromium at a desk's width. One broker, service and browser for the file.
const tmp = tempDir('door-agent-console-readable-');
const LONG_DOOR = 'North-east loading dock roller door beside the goods lift, building C, level minus two';
let broker: Mosquitto;
let service: RunningService;
let agent: MqttClient;
let browser: Browser;
let admin: BrowserContext;
let base: string;
let port: number;
let cookie: string;
let adminKey: string;

/** The text a person reads: tags dropped (a cell's end a space), the five escapes undone, white space as one space. */
const textOf = (html: string) =>
  html
    .replace(/<\/(td|th|p|dd|dt|li|h1|h2|label|option)>|<br>/g, ' ')
    .replace(/<[^>]*>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');

/** An agent's audit event on P/doors/<uuid>/events, as the agent's outbox publishes it (QoS 1, not retained; its seq ends its id). */
const publishEvent = (door: string, event: Record<string, unknown>) =>
  agent.publishAsync(`site/doors/${door}/events`, JSON.stringify(Object.assign({ door, seq: Number(String(event.id).split('-').pop()) }, event)), { qos: 1 });

async function get(path: string, headers: Record<string, string> = { cookie }) {
  const answer = await rawRequest(port, 'GET', path, Object.assign({ host: `127.0.0.1:${port}` }, headers));
  return { status: answer.status, location: answer.headers.location, body: answer.body.toString() };
}

/** The rows of the Events page's list. */
const eventRows = (page: string) => (page.split('<tbody id="events"')[1] ?? '').match(/<tr>/g)?.length ?? 0;

// The second door (the long name) and the front door's events: refusals with a known, a suspended's and an unknown
// reason, a grant by card (in summer) and one by a guest link's QR code.
const EVENTS: Array<[string, Record<string, unknown>]> = [
  [
    SECOND_DOOR_UUID,
    {
      type: 'access_denied',
      id: 'front-1',
      at: '2026-11-29T13:05:09.120Z',
      kind: 'card',
      hint: '…78',
      reason: 'outside_schedule',
      holders: [{ email_id: 1, reason: 'outside_schedule' }],
    },
  ],
  [
    DOOR_UUID,
    {
      type: 'access_denied',
      id: 'front-2',
      at: '2026-11-29T13:06:00.000Z',
      kind: 'card',
      hint: '…90',
      reason: 'user_suspended',
      holders: [{ email_id: 1, reason: 'user_suspended' }],
    },
  ],
  [
    DOOR_UUID,
    { type: 'access_denied', id: 'front-3', at: '2026-11-29T13:07:00.000Z', kind: 'card', hint: '…11', reason: 'flux_capacitor_misaligned', holders: [] },
  ],
  [
    SECOND_DOOR_UUID,
    {
      type: 'access_granted',
      id: 'front-4',
      at: '2026-07-01T13:05:09.000Z',
      kind: 'card',
      hint: '…78',
      reason: null,
      holders: [{ email_id: 1, reason: null }],
      level: 'Staff front door',
    },
  ],
  [
    DOOR_UUID,
    {
      type: 'access_granted',
      id: 'front-5',
      at: '2026-11-29T13:08:00.000Z',
      kind: 'token',
      hint: 'token',
      reason: null,
      holders: [{ magic_link_id: '7', reason: null }],
    },
  ],
];

/**
 * Each row of the Events list, measured in the page: how many lines its tallest cell holds (its height less its
 * padding, over the line height), whether its date is shown whole (its text no wider than the cell: not cut by an
 * ellipsis), its door cell's title.
 */
const ROWS = `const textWidth = (el) => { const r = document.createRange(); r.selectNodeContents(el); return r.getBoundingClientRect().width; };
[...document.querySelectorAll('#events tr')].map((tr) => {
  const cells = [...tr.querySelectorAll('td')];
  const style = getComputedStyle(cells[0]);
  const lineHeight = parseFloat(style.lineHeight);
  const padding = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
  return {
    text: tr.textContent,
    lines: Math.max(...cells.map((td) => (td.clientHeight - padding) / lineHeight)),
    dateWhole: textWidth(cells[0]) <= cells[0].getBoundingClientRect().width - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - parseFloat(style.borderLeftWidth) - parseFloat(style.borderRightWidth) + 0.01,
    doorTitle: cells[1].getAttribute('title'),
  };
})`;

beforeAll(async () => {
  broker = new Mosquitto(join(tmp.path, 'broker'));
  await broker.start();
  const options = parseServiceConfig(
    `server:
  listen: 127.0.0.1:0
  dataDir: ${tmp.path}/svc
  timezone: Europe/Berlin
  resources:
    - { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door }
    - { resourceId: 13, uuid: ${SECOND_DOOR_UUID}, type: DOOR, name: "${LONG_DOOR}" }
  console: { enabled: true }
mqtt: { url: "${broker.url}", topicPrefix: site }
`,
    'service.yaml',
  );
  service = await startService(options, { clock: systemClock, logger: pino({ level: 'silent' }), env: {} });
  base = service.url;
  port = Number(new URL(base).port);
  adminKey = await new ApiKeys(service.db).create('ADMIN', 0, Date.now());
  // A person with a long name, the holder of the events' cards.
  await fetch(`${base}/invites`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ emails: ['alexandra@example.org'], no_email: true }),
  });
  await service.db.run('UPDATE users SET first_name = ?, last_name = ? WHERE email = ?', [
    'Alexandra Maria Theresia',
    'von Hohenzollern-Sigmaringen',
    'alexandra@example.org',
  ]);
  const emailId = await service.db.value<number>('SELECT email_id FROM users WHERE email = ?', ['alexandra@example.org']);
  for (const [, event] of EVENTS) for (const h of event.holders as Array<Record<string, unknown>>) if ('email_id' in h) h.email_id = emailId;

  const signIn = await rawRequest(
    port,
    'POST',
    '/console/signin',
    { host: `127.0.0.1:${port}`, origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    `api_key=${adminKey}`,
  );
  cookie = String(signIn.headers['set-cookie']).split(';')[0]!;

  // The service's subscription is up once a probe event reaches its page; then the agent's events, in order.
  agent = await connectAsync(broker.url, { clientId: 'agent-front' });
  await waitUntil(
    async () => {
      await publishEvent(DOOR_UUID, { type: 'door_closed', id: 'probe-1', at: '2026-11-29T13:00:00.000Z' });
      await sleep(200);
      return eventRows((await get('/console/events')).body) > 0;
    },
    20_000,
    'the service hears the agents',
  );
  const probes = eventRows((await get('/console/events')).body);
  for (const [door, event] of EVENTS) await publishEvent(door, event);
  await waitUntil(async () => eventRows((await get('/console/events')).body) === probes + EVENTS.length, 20_000, 'the events reach the console');
  // A door unlocked until a day to come (its retained state).
  await agent.publishAsync(`site/doors/${DOOR_UUID}/state`, JSON.stringify({ state: 'UNLOCKED', relock_at: '2030-01-15T13:06:30.000Z', door: 'CLOSED' }), {
    qos: 1,
    retain: true,
  });

  browser = await launchChromium();
  // The session signed in above, in a browser at a desk's width.
  admin = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const [name, value] = cookie.split('=') as [string, string];
  await admin.addCookies([{ name, value, url: `${base}/console`, httpOnly: true, sameSite: 'Strict' }]);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await agent?.endAsync();
  await service?.stop();
  await broker?.stop();
  tmp.cleanup();
});

describe('the console reads like a console', () => {
  it('shows each refusal and grant in words, an unknown reason as its code', async () => {
    const text = textOf((await get('/console/events')).body);
    expect(text).toContain('refused: outside its schedule');
    expect(text).toContain('refused: card suspended');
    expect(text).toContain('refused: flux_capacitor_misaligned');
    expect(text).toContain('granted: card');
    expect(text).toContain('granted: guest link');
    // The filter by result still finds the refusals and only them.
    const refused = textOf((await get('/console/events?result=denied')).body);
    expect(refused).toContain('refused: outside its schedule');
    expect(refused).not.toContain('granted: card');
  });

  it("shows every time in the site's zone with the zone named, 24-hour: events, a door's relock, a guest link", async () => {
    const events = textOf((await get('/console/events')).body);
    expect(events).toContain('2026-11-29 14:05:09 CET'); // 13:05:09 UTC, in winter
    expect(events).toContain('2026-07-01 15:05:09 CEST'); // 13:05:09 UTC, in summer
    expect(events).not.toContain('UTC');
    expect(events).not.toMatch(/\b(AM|PM)\b/);
    await waitUntil(async () => textOf((await get('/console/doors')).body).includes('unlocked until'), 15_000, 'the door state reaches the console');
    expect(textOf((await get('/console/doors')).body)).toContain('unlocked until 2030-01-15 14:06:30 CET');
  });

  it('keeps each event on one line at 1100 px: long door names and people end in an ellipsis, dates whole', async () => {
    const page: Page = await admin.newPage();
    await page.goto(`${base}/console/events`);
    const rows = page.locator('#events tr');
    expect(await rows.count()).toBeGreaterThanOrEqual(EVENTS.length);
    const measured = (await page.evaluate(ROWS)) as Array<{ text: string; lines: number; dateWhole: boolean; doorTitle: string | null }>;
    for (const row of measured) {
      expect(row.lines, `one line: ${row.text}`).toBeLessThan(1.5);
      expect(row.dateWhole, `the date whole: ${row.text}`).toBe(true);
    }
    // The long name is all there for whoever points at it, and the page does not scroll sideways.
    expect(measured.map((r) => r.doorTitle)).toContain(LONG_DOOR);
    expect(await page.evaluate('document.documentElement.scrollWidth <= innerWidth')).toBe(true);
    await page.close();
  });

  it('shows a first visit the sign-in form plainly; an ended session and a wrong key still say so', async () => {
    const first = await get('/console/people', {});
    expect(first.status).toBe(303);
    const plain = await get(first.location as string, {});
    expect(plain.status).toBe(200);
    expect(plain.body).toContain('<label for="api-key">API key</label>');
    expect(plain.body).not.toContain('role="alert"');
    expect(plain.body).not.toContain('flash error');

    const ended = await get('/console/people', { cookie: 'door_console=ended-long-ago' });
    const endedPage = await get(ended.location as string, {});
    expect(endedPage.body).toMatch(/<p class="flash error" role="alert">Your session has ended/);

    const wrong = await rawRequest(
      port,
      'POST',
      '/console/signin',
      { host: `127.0.0.1:${port}`, origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      'api_key=dak_wrong',
    );
    expect(wrong.status).toBe(401);
    expect(wrong.body.toString()).toMatch(/role="alert">This API key is not valid or has expired\./);
  });

  it("reads a guest link's start and end in the site's zone, named beside the fields; its QR page names its doors", async () => {
    const page = await admin.newPage();
    await page.goto(`${base}/console/links`);
    await page.getByLabel('Name').fill('Plumbers');
    await page.getByLabel("Guests' e-mail addresses").fill('plumber@example.org');
    // 09:00 in Berlin: 07:00 UTC in summer (CEST), 08:00 UTC in winter (CET).
    await page.getByLabel('Starts (Europe/Berlin)').fill('2030-06-30T09:00');
    await page.getByLabel('Ends (Europe/Berlin)').fill('2030-12-01T09:00');
    await page.getByRole('button', { name: 'Create guest link' }).click();
    await page.waitForURL(/\/console\/links\/\d+$/);
    const qr = textOf(await page.content());
    expect(qr).toContain(`Front door, ${LONG_DOOR}`);
    expect(qr).not.toContain(DOOR_UUID);
    expect(qr).toContain('from 2030-06-30 09:00:00 CEST until 2030-12-01 09:00:00 CET');

    // What the doors are told: the retained link on the broker starts and ends at those instants.
    const id = /\/console\/links\/(\d+)$/.exec(page.url())![1]!;
    const door = await connectAsync(broker.url, { clientId: 'door-reads-links' });
    const message = new Promise<Buffer>((resolve) => door.on('message', (topic, payload) => topic === `site/guest-links/${id}` && resolve(payload)));
    await door.subscribeAsync(`site/guest-links/${id}`, { qos: 1 });
    const parsed = parseGuestLinkMessage(id, await message, null);
    await door.endAsync();
    if (!('link' in parsed)) throw new Error(`the retained guest link was refused: ${JSON.stringify(parsed)}`);
    expect(parseServiceTime(parsed.link.start_time!)).toBe(Date.UTC(2030, 5, 30, 7, 0));
    expect(parseServiceTime(parsed.link.end_time!)).toBe(Date.UTC(2030, 11, 1, 8, 0));

    // A time the zone skips (clocks go forward at 02:00 on 2030-03-31) is refused, saying why.
    await page.goto(`${base}/console/links`);
    await page.getByLabel('Name').fill('Night shift');
    await page.getByLabel("Guests' e-mail addresses").fill('night@example.org');
    await page.getByLabel('Starts (Europe/Berlin)').fill('2030-03-31T02:30');
    await page.getByRole('button', { name: 'Create guest link' }).click();
    await expect
      .poll(() => page.getByRole('alert').first().textContent(), { timeout: 10_000 })
      .toContain('Starts: 2030-03-31 02:30 does not exist in Europe/Berlin');
    await page.close();
  });
});
