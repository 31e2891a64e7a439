import { get } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { SiteFeed } from '../../src/service/console/siteFeed.js';
import type { ServiceDb } from '../../src/service/database.js';
import type { buildService } from '../../src/service/server.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { listeningService } from '../support/serviceApp.js';

// The console's live stream (GET /console/live) on a real listening service: a page's stream starts with its rows
// as they are, so a change that came between the page's render and the stream (a page loaded after a POST while
// the door answers, a reconnect after a dropped connection) still reaches the page.
const tmp = tempDir('door-agent-console-live-');
const feed = new SiteFeed('site');
let db: ServiceDb;
let app: ReturnType<typeof buildService>;
let base: string;
let cookie: string;

beforeAll(async () => {
  let port: number;
  ({ db, app, port } = await listeningService(join(tmp.path, 'service.db'), {
    console: { options: { enabled: true, sessionMinutes: 30, maxSessionHours: 12 }, feed, mailConfigured: false },
  }));
  base = `http://127.0.0.1:${port}`;
  const key = new ApiKeys(db).create('ADMIN', 0, Date.now());
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
  db.close();
  tmp.cleanup();
});

/** The first server-sent event of a live stream that is not a comment or the retry line, as { event, data }. */
function firstEvent(page: string): Promise<{ event: string; data: { id: string; html: string } }> {
  return new Promise((resolve, reject) => {
    const request = get(`${base}/console/live?page=${page}`, { headers: { cookie } }, (response) => {
      if (response.statusCode !== 200) reject(new Error(`GET /console/live answered ${response.statusCode}`));
      let text = '';
      response.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
        const match = /event: (\w+)\ndata: (.*)\n\n/.exec(text);
        if (match) {
          clearTimeout(timer);
          resolve({ event: match[1]!, data: JSON.parse(match[2]!) as { id: string; html: string } });
          request.destroy();
        }
      });
    });
    request.on('error', (err) => {
      if (!('code' in err) || err.code !== 'ECONNRESET') reject(err);
    });
    const timer = setTimeout(() => {
      request.destroy();
      reject(new Error(`no event on the ${page} stream within 5 s`));
    }, 5000);
  });
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
});
