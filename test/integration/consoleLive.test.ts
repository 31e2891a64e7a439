import { get } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
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
let db: SqlDb;
let app: ReturnType<typeof buildService>;
let base: string;
let cookie: string;

beforeAll(async () => {
  let port: number;
  ({ db, app, port } = await listeningService(join(tmp.path, 'service.db'), {
    console: { options: { enabled: true, sessionMinutes: 30, maxSessionHours: 12 }, feed, mailConfigured: false },
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

/** An agent's audit event as it publishes it on its door's events topic. */
function publishEvent(type: string, hint: string): void {
  feed.onMessage(`site/doors/${DOOR_UUID}/events`, Buffer.from(JSON.stringify({ type, at: new Date().toISOString(), door: DOOR_UUID, hint })));
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
    publishEvent('access_denied', 'before-render');
    const page = await app.inject({ method: 'GET', url: '/console/events', headers: { cookie } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('before-render');
    const mark = /<tbody id="events" data-after="([^"]+)">/.exec(page.body)?.[1];
    expect(mark).toMatch(/^[0-9a-f]{8}:\d+$/);
    // Between the page's render and its stream (the browser still loading the page's script):
    publishEvent('access_granted', 'between-1');
    publishEvent('access_denied', 'between-2');
    const [first, second] = await liveEvents('events', 2, `&after=${encodeURIComponent(mark!)}`);
    expect(first).toMatchObject({ event: 'prepend', data: { id: 'events' } });
    expect(first!.data.html).toContain('between-1');
    expect(second!.data.html).toContain('between-2');
    expect(`${first!.data.html}${second!.data.html}`).not.toContain('before-render'); // already on the page
    // The connection drops; one more event comes; the browser reconnects with the last id it got.
    publishEvent('access_denied', 'while-down');
    const [resumed] = await liveEvents('events', 1, `&after=${encodeURIComponent(mark!)}`, { 'last-event-id': second!.id! });
    expect(resumed!.data.html).toContain('while-down');
    // A page rendered by an earlier run of the service (another epoch): every event kept is new to it.
    const fromBefore = await liveEvents('events', 4, '&after=00000000:999');
    expect(fromBefore.map((e) => /(before-render|between-1|between-2|while-down)/.exec(e.data.html)?.[1])).toEqual([
      'before-render',
      'between-1',
      'between-2',
      'while-down',
    ]);
  });
});
