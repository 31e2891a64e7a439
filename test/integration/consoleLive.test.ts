import { get } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { AuditEventStore } from '../../src/service/audit/eventStore.js';
import { StoredEvents } from '../../src/service/audit/storedEvents.js';
import { parseWireEvent } from '../../src/service/audit/wireEvent.js';
import { SiteFeed } from '../../src/service/console/siteFeed.js';
import type { buildService } from '../../src/service/server.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { listeningService } from '../support/serviceApp.js';

// The console's live stream (GET /console/live) on a real listening service: a page's stream starts with its rows
// as they are, so a change that came between the page's render and the stream (a page loaded after a POST while
// the door answers, a reconnect after a dropped connection) still reaches the page.
const tmp = tempDir('door-agent-console-live-');
const feed = new SiteFeed('site');
/** What the service's ingest hands the console: each event as it is committed. */
const storedEvents = new StoredEvents();
let db: SqlDb;
let app: ReturnType<typeof buildService>;
let base: string;
let cookie: string;

beforeAll(async () => {
  let port: number;
  ({ db, app, port } = await listeningService(join(tmp.path, 'service.db'), {
    console: { options: { enabled: true, sessionMinutes: 30, maxSessionHours: 12, timezone: 'UTC' }, feed, mailConfigured: false },
    storedEvents,
  }));
  base = `http://127.0.0.1:${port}`;
  const key = await new ApiKeys(db).create('ADMIN', 0, Date.now());
  const signIn = await app.inject({
    method: 'POST',
    url: '/console/signin',
    headers: { origin: base, host: `127.0.0.1:${port}`, 'content-type': 'application/x-www-form-urlencoded' },
    payload: `api_key=${key}`,
  });
  cookie = String(signIn.headers['set-cookie']).split(';')[0]!;
});

afterAll(async () => {
  await app.close();
  await db.close();
  tmp.cleanup();
});

interface LiveEvent {
  /** The SSE id line (an event row's mark), if any. */
  id?: string;
  event: string;
  data: { id: string; html: string };
}

/**
 * The first `count` server-sent events of a live stream that are not comments or the retry line. `query` and
 * `headers` are added to the request (after=, Last-Event-ID).
 */
function liveEvents(page: string, count: number, query = '', headers: Record<string, string> = {}): Promise<LiveEvent[]> {
  return new Promise((resolve, reject) => {
    const request = get(`${base}/console/live?page=${page}${query}`, { headers: { cookie, ...headers } }, (response) => {
      if (response.statusCode !== 200) reject(new Error(`GET /console/live answered ${response.statusCode}`));
      let text = '';
      response.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
        const found = [...text.matchAll(/(?:id: (\S+)\n)?event: (\w+)\ndata: (.*)\n\n/g)].map((m) => ({
          ...(m[1] ? { id: m[1] } : {}),
          event: m[2]!,
          data: JSON.parse(m[3]!) as LiveEvent['data'],
        }));
        if (found.length >= count) {
          clearTimeout(timer);
          resolve(found.slice(0, count));
          request.destroy();
        }
      });
    });
    request.on('error', (err) => {
      if (!('code' in err) || err.code !== 'ECONNRESET') reject(err);
    });
    const timer = setTimeout(() => {
      request.destroy();
      reject(new Error(`not ${count} events on the ${page} stream within 5 s`));
    }, 5000);
  });
}

async function firstEvent(page: string): Promise<LiveEvent> {
  return (await liveEvents(page, 1))[0]!;
}

let seq = 0;
/** An agent's audit event as the service's ingest takes it (audit/eventIngest.ts): stored, then handed on. */
async function publishEvent(type: string, hint: string): Promise<void> {
  seq += 1;
  const wire = { id: `front-${seq}`, seq, type, at: new Date().toISOString(), door: DOOR_UUID, hint };
  const event = parseWireEvent(Buffer.from(JSON.stringify(wire)));
  const { eventId } = await new AuditEventStore(db).store(event, Date.now());
  storedEvents.emit({ eventId: eventId!, event });
}

/** A row's text as the page shows it (the markup's attributes name actions such as lockdown_on). */
const visible = (html: string) => html.replace(/<[^>]*>/g, ' ');

describe('the console live stream', () => {
  it("starts with every door's row as it is: a lockdown that came before the stream opened is shown", async () => {
    feed.onMessage(`site/doors/${DOOR_UUID}/state`, Buffer.from(JSON.stringify({ state: 'LOCKED', lockdown: true, door: 'CLOSED' })));
    const first = await firstEvent('doors');
    expect(first.event).toBe('replace');
    expect(first.data.id).toBe(`door-${DOOR_UUID}`);
    expect(visible(first.data.html)).toContain('lockdown');
    expect(visible(first.data.html)).toContain('End lockdown');
    // And the next state, again before a new stream: the new stream shows that one.
    feed.onMessage(`site/doors/${DOOR_UUID}/state`, Buffer.from(JSON.stringify({ state: 'LOCKED', lockdown: false, door: 'CLOSED' })));
    const next = await firstEvent('doors');
    expect(visible(next.data.html)).not.toContain('lockdown');
    expect(visible(next.data.html)).not.toContain('End lockdown');
  });

  it("starts with every agent's row: an agent that went offline before the stream opened is shown offline", async () => {
    feed.onMessage('site/agents/front/status', Buffer.from('offline'));
    const first = await firstEvent('agents');
    expect(first.event).toBe('replace');
    expect(first.data.id).toBe('agent-front');
    expect(first.data.html).toContain('offline');
  });

  it('an events page misses no event: those after its render come first on its stream, and a reconnect resumes after the last one sent', async () => {
    await publishEvent('access_denied', 'before-render');
    const page = await app.inject({ method: 'GET', url: '/console/events', headers: { cookie } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('before-render');
    const mark = /<tbody id="events" data-after="([^"]+)">/.exec(page.body)?.[1];
    expect(mark).toMatch(/^\d+$/);
    // Between the page's render and its stream (the browser still loading the page's script):
    await publishEvent('access_granted', 'between-1');
    await publishEvent('access_denied', 'between-2');
    const [first, second] = await liveEvents('events', 2, `&after=${encodeURIComponent(mark!)}`);
    expect(first).toMatchObject({ event: 'prepend', data: { id: 'events' } });
    expect(first!.data.html).toContain('between-1');
    expect(second!.data.html).toContain('between-2');
    expect(`${first!.data.html}${second!.data.html}`).not.toContain('before-render'); // already on the page
    // The connection drops; one more event comes; the browser reconnects with the last id it got.
    await publishEvent('access_denied', 'while-down');
    const [resumed] = await liveEvents('events', 1, `&after=${encodeURIComponent(mark!)}`, { 'last-event-id': second!.id! });
    expect(resumed!.data.html).toContain('while-down');
    // A page rendered by an earlier run of the service: the marks are the database's, so it gets what it missed.
    const fromBefore = await liveEvents('events', 4, '&after=0');
    expect(fromBefore.map((e) => /(before-render|between-1|between-2|while-down)/.exec(e.data.html)?.[1])).toEqual([
      'before-render',
      'between-1',
      'between-2',
      'while-down',
    ]);
    // And a stream open while an event is stored gets it at once.
    const live = liveEvents('events', 1, `&after=${second!.id!}`, { 'last-event-id': resumed!.id! });
    await new Promise((r) => setTimeout(r, 300));
    await publishEvent('door_forced', 'live-now');
    expect((await live)[0]!.data.html).toContain('live-now');
  });
});

describe('the events kept, on the console', () => {
  /** Stores an agent's event as the ingest does (received `receivedAgoMs` ago). */
  async function keep(wire: Record<string, unknown>, receivedAgoMs = 0): Promise<void> {
    await new AuditEventStore(db).store(parseWireEvent(Buffer.from(JSON.stringify(wire))), Date.now() - receivedAgoMs);
  }
  const rowsOf = (body: string) => [...body.matchAll(/<tr><td data-label="When">[\s\S]*?<\/tr>/g)].map((m) => visible(m[0]));
  const page = async (query: string) => (await app.inject({ method: 'GET', url: `/console/events${query}`, headers: { cookie } })).body;

  it('the Events page reads the database: filters by door, person, result, reason and time, and pages back', async () => {
    // Tomorrow, on whole minutes: the newest events there are.
    const base = Math.floor(Date.now() / 60_000) * 60_000 + 86_400_000;
    const at = (minutes: number) => new Date(base + minutes * 60_000).toISOString();
    /** A datetime-local field's value in the site's zone (UTC). */
    const local = (minutes: number) => at(minutes).slice(0, 16);
    for (let i = 1; i <= 120; i++) {
      await keep({ id: `hall-${i}`, seq: i, type: 'access_denied', at: at(i), door: DOOR_UUID, reason: i === 7 ? 'schedule' : 'not_found', hint: `tap-${i}` });
    }
    await keep({ id: 'hall-121', seq: 121, type: 'access_granted', at: at(121), door: DOOR_UUID, who: 'Ada Lovelace', kind: 'card' });
    const first = await page('?person=ada');
    expect(rowsOf(first)).toHaveLength(1);
    expect(rowsOf(first)[0]).toContain('Ada Lovelace');
    expect(rowsOf(await page('?result=denied&reason=schedule'))).toEqual([expect.stringContaining('tap-7')]);
    // The time range, in the site's zone.
    const range = rowsOf(await page(`?from=${local(10)}&to=${local(13)}`));
    expect(range.map((r) => /tap-\d+/.exec(r)?.[0])).toEqual(['tap-12', 'tap-11', 'tap-10']);
    expect(await page(`?from=${local(60)}&to=${local(0)}`)).toContain('the range ends before it starts: To must be after From');
    // A hundred a page, newest first; "Older events" goes on from the last one shown, and that page is not live.
    const newest = await page(`?door=${DOOR_UUID}&result=denied&from=${local(0)}`);
    expect(rowsOf(newest)).toHaveLength(100);
    expect(rowsOf(newest)[0]).toContain('tap-120');
    const older = /<a href="\/console\/events\?([^"]+)" rel="next">Older events<\/a>/.exec(newest)?.[1];
    expect(older).toBeDefined();
    const next = await page(`?${older!.replaceAll('&amp;', '&')}`);
    expect(rowsOf(next).map((r) => /tap-\d+/.exec(r)?.[0])).toEqual(Array.from({ length: 20 }, (_, i) => `tap-${20 - i}`));
    expect(newest).toContain('data-after='); // the newest, with no end: live
    expect(next).not.toContain('data-after=');
    expect(next).not.toContain('Older events');
  });

  it('the Agents page says which events of an agent are missing, and since when', async () => {
    const chain = '3f2c1b0a-0000-4000-8000-00000000abcd';
    const wire = (seq: number) => ({
      id: `gappy-${seq}`,
      seq,
      type: 'door_opened',
      at: new Date().toISOString(),
      door: DOOR_UUID,
      chain,
      prev_hash: '0'.repeat(64),
      hash: 'a'.repeat(64),
    });
    // Seqs 3 and 4 never came; 5 came ten minutes ago (server.audit.gapSeconds: 300 by default).
    for (const seq of [1, 2, 5]) await keep(wire(seq), 600_000);
    const body = (await app.inject({ method: 'GET', url: '/console/agents', headers: { cookie } })).body;
    expect(visible(body)).toMatch(/gappy : events 3-4 missing since/);
    await keep(wire(3));
    await keep(wire(4));
    expect(visible((await app.inject({ method: 'GET', url: '/console/agents', headers: { cookie } })).body)).not.toContain('gappy');
  });
});
