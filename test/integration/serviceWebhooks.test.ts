import { createHmac, timingSafeEqual } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { DEFAULT_WEBHOOK_OPTIONS, WebhookDispatcher } from '../../src/service/audit/webhookDispatcher.js';
import type { WebhookServiceOptions } from '../../src/service/options.js';
import { SoleLeader } from '../../src/service/sql/leadership.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { ManualTime } from '../support/manualTime.js';
import { freePort } from '../support/net.js';
import { testService } from '../support/serviceApp.js';
import { newServiceDb } from '../support/serviceDb.js';
import { waitUntil } from '../support/wait.js';
import { WebhookReceiver } from '../support/webhookReceiver.js';

// Webhooks at the service (docs/audit.md, "Webhooks"), on this run's engine: subscriptions through the API, and
// deliveries by the dispatcher to real HTTP receivers on 127.0.0.1 (allowed through server.webhooks.allowAddresses),
// on a manual clock and a fixed jitter so every retry's time is exact. Events are put into audit_events as the
// service stores them.

const SECRET = 'a-webhook-secret-of-at-least-32-characters';
const OPTIONS: WebhookServiceOptions = { allowAddresses: ['127.0.0.1/32'], allowHttp: true, retryHours: 1, timeoutSeconds: 30 };

const tmp = tempDir('door-agent-webhooks-');
const time = new ManualTime({ wall: Date.parse('2026-07-01T12:00:00Z') });
let db: SqlDb;
let app: ReturnType<typeof testService>;
let admin: Record<string, string>;
let regular: Record<string, string>;
let seq = 0;
const receivers: WebhookReceiver[] = [];
const dispatchers: WebhookDispatcher[] = [];

beforeAll(async () => {
  ({ db } = await newServiceDb(tmp.path, 'webhooks'));
  const keys = new ApiKeys(db);
  admin = { authorization: `Bearer ${await keys.create('ADMIN', 0, Date.now())}` };
  regular = { authorization: `Bearer ${await keys.create('REGULAR', 0, Date.now())}` };
  app = testService(db, { clock: time, webhooks: OPTIONS });
  await app.ready();
});
afterEach(async () => {
  for (const d of dispatchers.splice(0)) await d.close();
  for (const r of receivers.splice(0)) await r.close();
  // Each test's subscriptions go with it: the next test's events are owed to its own only.
  for (const { webhook_id } of (await api('GET', '/webhooks')).json.webhooks as Array<{ webhook_id: number }>) {
    expect((await api('DELETE', `/webhooks/${webhook_id}`)).status).toBe(200);
  }
});
afterAll(async () => {
  await app?.close();
  await db?.close();
  tmp.cleanup();
});

async function api(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: object, headers = admin) {
  const res = await app.inject({ method, url, headers, ...(body ? { payload: body } : {}) });
  return { status: res.statusCode, json: res.json() as Record<string, unknown> & { error?: string } };
}

async function receiver(answers: { statuses?: number[]; hang?: boolean } = {}): Promise<WebhookReceiver> {
  const r = await WebhookReceiver.start(answers);
  receivers.push(r);
  return r;
}

function dispatcher(options: Partial<WebhookServiceOptions> = {}): WebhookDispatcher {
  const d = new WebhookDispatcher({
    db,
    leadership: new SoleLeader(),
    clock: time,
    logger: pino({ level: 'silent' }),
    options: Object.assign({}, OPTIONS, options),
    random: () => 0.5,
  });
  dispatchers.push(d);
  return d;
}

/** One round of the dispatcher, and the outcomes of the requests it started. */
async function deliver(d: WebhookDispatcher): Promise<void> {
  await d.poll();
  await d.settled();
}

async function subscribe(url: string, types: string[] = ['*']): Promise<number> {
  const made = await api('POST', '/webhooks', { url, types, secret: SECRET, description: 'test receiver' });
  expect(made.status, made.json.error).toBe(201);
  return made.json.webhook_id as number;
}

/** An event as the service stores one it received (audit_events), at the manual clock's time; its wire form. */
async function storeEvent(type: string, fields: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  seq += 1;
  const at = time.wallNow();
  const wire = Object.assign({ id: `${seq}`, seq, at: new Date(at).toISOString(), door: DOOR_UUID, type }, fields);
  await db.run(`INSERT INTO audit_events (agent_id, chain_id, seq, at, door_uuid, type, body, received_at) VALUES (?, '', ?, ?, ?, ?, ?, ?)`, [
    'front-door-agent',
    seq,
    at,
    DOOR_UUID,
    type,
    JSON.stringify(wire),
    at,
  ]);
  return wire;
}

interface DeliveryAnswer {
  delivery_id: number;
  state: string;
  attempts: number;
  next_at: string | null;
  attempt_log: Array<{ attempt: number; status: number | null; error: string | null }>;
}
async function deliveries(webhookId: number, query = ''): Promise<DeliveryAnswer[]> {
  const log = await api('GET', `/webhooks/${webhookId}/deliveries${query}`);
  expect(log.status, log.json.error).toBe(200);
  return log.json.deliveries as DeliveryAnswer[];
}

describe('a delivery', () => {
  it('is signed as docs/audit.md says: the receiver recomputes the HMAC over timestamp "." body with the secret', async () => {
    const r = await receiver();
    const id = await subscribe(r.url, ['access_granted']);
    const granted = await storeEvent('access_granted', { user: 'Ada Lovelace', credential: 'card', hint: '…3578' });
    await storeEvent('door_opened');
    await deliver(dispatcher());

    // Only the type subscribed to.
    expect(r.received).toHaveLength(1);
    const [{ headers, body }] = r.received as [(typeof r.received)[0]];
    // The documented scheme, written out here: Door-Agent-Webhook-Signature: v1=<hex HMAC-SHA256(secret, timestamp + "." + body)>.
    const timestamp = headers['door-agent-webhook-timestamp'] as string;
    expect(Number(timestamp)).toBe(Math.floor(time.wallNow() / 1000));
    const expected = `v1=${createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex')}`;
    const signature = headers['door-agent-webhook-signature'] as string;
    expect(timingSafeEqual(Buffer.from(signature), Buffer.from(expected))).toBe(true);
    expect(headers['content-type']).toBe('application/json');
    const [delivery] = await deliveries(id);
    expect(headers['door-agent-webhook-id']).toBe(String(delivery!.delivery_id));
    expect(JSON.parse(body)).toEqual({ delivery: delivery!.delivery_id, agent: 'front-door-agent', event: granted });
    expect(delivery).toMatchObject({ state: 'delivered', attempts: 1, attempt_log: [{ attempt: 1, status: 200, error: null }] });

    // Sent once: a later round sends nothing again.
    await deliver(dispatchers[0]!);
    expect(r.received).toHaveLength(1);
  });

  it('answered 500 is tried again after the backoff (30 s, full jitter) and delivered by the 200 after', async () => {
    const r = await receiver({ statuses: [500, 200] });
    const id = await subscribe(r.url);
    await storeEvent('door_forced');
    const d = dispatcher();
    await deliver(d);
    expect(r.received).toHaveLength(1);
    const [first] = await deliveries(id);
    // Full jitter with the random fixed at 0.5: half of 30 s.
    expect(first).toMatchObject({ state: 'pending', attempts: 1, attempt_log: [{ attempt: 1, status: 500, error: 'answered 500' }] });
    expect(Date.parse(first!.next_at!)).toBe(time.wallNow() + 15_000);

    time.advance(14_999);
    await deliver(d);
    expect(r.received).toHaveLength(1);
    time.advance(1);
    await deliver(d);
    expect(r.received).toHaveLength(2);
    expect(r.received[1]!.body).toBe(r.received[0]!.body);
    const [second] = await deliveries(id);
    expect(second).toMatchObject({ state: 'delivered', attempts: 2, next_at: null });
    expect(second!.attempt_log.map((a) => a.status)).toEqual([500, 200]);
  });

  it('to a dead receiver (connection refused) or a slow one (no answer) does not delay another subscription', async () => {
    const deadPort = await freePort();
    const slow = await receiver({ hang: true });
    const fast = await receiver();
    const deadId = await subscribe(`http://127.0.0.1:${deadPort}/hook`);
    await subscribe(slow.url);
    const fastId = await subscribe(fast.url);
    for (let i = 0; i < 10; i++) await storeEvent('door_opened');
    const d = dispatcher();
    await d.poll();

    // Every one of the fast receiver's ten, while the slow one holds its four requests open, unanswered.
    await waitUntil(() => fast.received.length === 10, 20_000, 'the fast receiver has its ten deliveries');
    await waitUntil(async () => (await deliveries(fastId, '?state=delivered')).length === 10, 20_000, 'the ten recorded delivered');
    expect(slow.received).toHaveLength(4);
    expect(slow.open.size).toBe(4);
    // The dead one's were tried and refused, each an attempt with why.
    await waitUntil(async () => (await deliveries(deadId)).every((x) => x.attempts === 1), 20_000, "the dead receiver's attempts");
    const dead = await deliveries(deadId);
    expect(dead).toHaveLength(10);
    expect(dead[0]!.attempt_log[0]).toMatchObject({ status: null, error: 'connection refused by 127.0.0.1' });
  });

  it('fails once retryHours have passed, and a replay sends it again and delivers it, its attempts kept', async () => {
    const r = await receiver({ statuses: [503] });
    const id = await subscribe(r.url);
    await storeEvent('tamper');
    const d = dispatcher();
    await deliver(d);
    // 15 s, 30 s, 60 s, ... (half of each ceiling), at most half an hour apart: failed at the first try after 1 h.
    for (let round = 0; round < 20; round++) {
      const [pending] = await deliveries(id);
      if (pending!.state !== 'pending') break;
      time.advance(Date.parse(pending!.next_at!) - time.wallNow());
      await deliver(d);
    }
    const [failed] = await deliveries(id, '?state=failed');
    expect(failed).toMatchObject({ state: 'failed', attempts: 9, next_at: null });
    expect(r.received).toHaveLength(9);
    expect(await deliveries(id, '?state=pending')).toEqual([]);

    r.answerWith(204);
    const replayed = await api('POST', `/webhooks/${id}/deliveries/${failed!.delivery_id}/replay`);
    expect(replayed.status, replayed.json.error).toBe(200);
    expect(replayed.json).toMatchObject({ state: 'pending', attempts: 9 });
    expect((await api('POST', `/webhooks/${id}/deliveries/${failed!.delivery_id}/replay`)).status).toBe(409);
    await deliver(d);
    const [delivered] = await deliveries(id);
    expect(delivered).toMatchObject({ state: 'delivered', attempts: 10 });
    expect(delivered!.attempt_log.map((a) => a.status)).toEqual([503, 503, 503, 503, 503, 503, 503, 503, 503, 204]);
    expect(r.received).toHaveLength(10);
  });

  it('to a loopback receiver is refused without server.webhooks.allowAddresses, the attempt saying why', async () => {
    const r = await receiver();
    const id = await subscribe(r.url);
    await storeEvent('duress');
    // The same subscription after a restart with the allowance taken out of the configuration.
    await deliver(dispatcher({ allowAddresses: [] }));
    expect(r.received).toEqual([]);
    const [refused] = await deliveries(id);
    expect(refused).toMatchObject({ state: 'pending', attempts: 1 });
    expect(refused!.attempt_log[0]).toMatchObject({
      status: null,
      error: 'refused: 127.0.0.1 is a loopback address, which server.webhooks.allowAddresses does not list',
    });
  });

  it('dropped mid-send (the dispatcher stopped, its request unanswered) is due again once its claim runs out', async () => {
    const r = await receiver({ hang: true });
    const id = await subscribe(r.url);
    await storeEvent('door_held_open');
    const dying = dispatcher({ timeoutSeconds: 10 });
    await dying.poll();
    await waitUntil(() => r.received.length === 1, 20_000, 'the first request');
    // Gone mid-send: nothing of its outcome is written (close() drops the request unrecorded, as a kill does).
    await dying.close();
    const [claimed] = await deliveries(id);
    expect(claimed).toMatchObject({ state: 'pending', attempts: 0 });
    r.answerWith(200);
    const next = dispatcher({ timeoutSeconds: 10 });
    await deliver(next);
    expect(r.received).toHaveLength(1);
    // Its claim was the request's timeout and 5 s: then it is due again.
    time.advance(15_000);
    await deliver(next);
    expect(r.received).toHaveLength(2);
    expect(r.received[1]!.body).toBe(r.received[0]!.body);
    expect((await deliveries(id))[0]).toMatchObject({ state: 'delivered', attempts: 1 });
  });
});

describe('subscriptions', () => {
  it('answer the secret once, made when none is given, and never again', async () => {
    const made = await api('POST', '/webhooks', { url: 'https://hooks.example.org/door?token=abc', types: ['access_denied', 'door_forced'] });
    expect(made.status).toBe(201);
    expect(made.json.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const id = made.json.webhook_id as number;
    const listed = await api('GET', '/webhooks');
    const one = await api('GET', `/webhooks/${id}`);
    for (const answer of [listed, one]) expect(JSON.stringify(answer.json)).not.toContain(made.json.secret as string);
    expect(one.json).toMatchObject({ url: 'https://hooks.example.org/door?token=abc', types: ['access_denied', 'door_forced'], enabled: true });
    const changed = await api('PATCH', `/webhooks/${id}`, { enabled: false, description: 'paused' });
    expect(changed.json).toMatchObject({ enabled: false, description: 'paused' });
    expect((await api('GET', '/webhooks', undefined, regular)).status).toBe(403);
  });

  it('refuse bad input with 400 naming the field, and save nothing', async () => {
    const before = await db.value<number | string>('SELECT count(*) FROM webhooks');
    const refusals: Array<[object, RegExp]> = [
      [{ url: 'not a url', types: ['*'] }, /^url: is not a URL/],
      [{ url: 'ftp://hooks.example.org/', types: ['*'] }, /^url: must be https:\/\//],
      [{ url: 'https://10.1.2.3/hook', types: ['*'] }, /^url: 10\.1\.2\.3 is a private address/],
      [{ url: 'https://[::1]:8443/hook', types: ['*'] }, /^url: ::1 is a loopback address/],
      [{ url: 'https://hooks.example.org/', types: ['door_kicked'] }, /^types: unknown event type door_kicked/],
      [{ url: 'https://hooks.example.org/', types: ['*', 'tamper'] }, /^types: "\*" \(every type\) stands alone/],
      [{ url: 'https://hooks.example.org/', types: [] }, /^types: name at least one event type/],
      [{ url: 'https://hooks.example.org/', types: ['*'], secret: 'too-short' }, /^secret: must be at least 32 characters/],
    ];
    for (const [body, error] of refusals) {
      const answer = await api('POST', '/webhooks', body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.json.error).toMatch(error);
    }
    // http:// needs server.webhooks.allowHttp: a service without it refuses it.
    const strict = testService(db, { clock: time, webhooks: DEFAULT_WEBHOOK_OPTIONS });
    const http = await strict.inject({ method: 'POST', url: '/webhooks', headers: admin, payload: { url: 'http://hooks.example.org/', types: ['*'] } });
    expect(http.statusCode).toBe(400);
    expect(http.json()).toEqual({ error: 'url: must be https:// (http:// needs server.webhooks.allowHttp)' });
    await strict.close();
    expect(await db.value<number | string>('SELECT count(*) FROM webhooks')).toEqual(before);

    const id = await subscribe('https://hooks.example.org/ok');
    const bad = await api('PATCH', `/webhooks/${id}`, { secret: 'short', description: 'changed' });
    expect(bad).toMatchObject({ status: 400, json: { error: 'secret: must be at least 32 characters' } });
    expect((await api('GET', `/webhooks/${id}`)).json.description).toBe('test receiver');
    expect((await api('PATCH', '/webhooks/999999', { enabled: false })).status).toBe(404);
  });
});

describe("the console's Webhooks page", () => {
  const PUBLIC_URL = 'https://doors.example.org';
  let consoleApp: ReturnType<typeof testService>;
  let cookie: string;
  /** The console's receiver (the other tests' are closed after each). */
  let recv: WebhookReceiver;
  beforeAll(async () => {
    recv = await WebhookReceiver.start();
    consoleApp = testService(db, {
      clock: time,
      webhooks: OPTIONS,
      console: { options: { enabled: true, sessionMinutes: 30, maxSessionHours: 12 }, feed: null, mailConfigured: false, publicUrl: PUBLIC_URL },
    });
    await consoleApp.ready();
    const superKey = await new ApiKeys(db).create('SUPER', 0, Date.now());
    const signedIn = await browser('POST', '/console/signin', { api_key: superKey });
    cookie = /door_console=([^;]+)/.exec(String(signedIn.headers['set-cookie']))![1]!;
  });
  afterAll(async () => {
    await consoleApp?.close();
    await recv?.close();
  });

  /** A request as the browser on the console's public address sends it (a form, from this origin). */
  async function browser(method: 'GET' | 'POST', url: string, form?: Record<string, string>) {
    const headers: Record<string, string> = { host: 'doors.example.org' };
    if (cookie) headers.cookie = `door_console=${cookie}`;
    if (method === 'POST') Object.assign(headers, { origin: PUBLIC_URL, 'content-type': 'application/x-www-form-urlencoded' });
    const res = await consoleApp.inject({ method, url, headers, ...(form ? { payload: new URLSearchParams(form).toString() } : {}) });
    return { status: res.statusCode, headers: res.headers, body: res.body };
  }
  const csrfOf = (body: string) => /name="csrf" value="([^"]+)"/.exec(body)![1]!;

  it('adds one showing its secret once, disables it, shows its delivery log with Send again, and deletes it', async () => {
    const empty = await browser('GET', '/console/webhooks');
    expect(empty.status).toBe(200);
    expect(empty.body).toContain('<a href="/console/webhooks" aria-current="page">Webhooks</a>');
    const csrf = csrfOf(empty.body);

    const refused = await browser('POST', '/console/webhooks', { csrf, url: 'https://hooks.example.org/x', types: 'door_kicked' });
    expect(refused.status).toBe(303);
    expect((await browser('GET', '/console/webhooks')).body).toContain('types: unknown event type door_kicked');

    const added = await browser('POST', '/console/webhooks', { csrf, url: recv.url, types: 'access_denied, door_forced', description: 'SOC' });
    expect(added.status).toBe(200);
    const secret = /<code id="webhook-secret-once">([^<]+)<\/code>/.exec(added.body)?.[1];
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const listed = await browser('GET', '/console/webhooks');
    expect(listed.body).toContain('access_denied, door_forced');
    expect(listed.body).not.toContain(secret!);
    const id = /id="webhook-(\d+)"/.exec(listed.body)![1]!;
    expect(listed.body).toContain(`data-confirm="Delete the webhook to ${recv.url}, with its delivery log?"`);

    expect((await browser('POST', `/console/webhooks/${id}/enabled`, { csrf, enabled: 'false' })).status).toBe(303);
    expect((await browser('GET', '/console/webhooks')).body).toContain(`webhook ${id} disabled: its deliveries wait`);
    expect((await api('GET', `/webhooks/${id}`)).json.enabled).toBe(false);
    expect((await browser('POST', `/console/webhooks/${id}/enabled`, { csrf, enabled: 'true' })).status).toBe(303);

    // A delivery refused (503) shows its attempt; Send again is offered once it has failed, and takes it.
    await storeEvent('door_forced');
    const d = dispatcher({ retryHours: 1 });
    recv.answerWith(503);
    await deliver(d);
    const pendingLog = await browser('GET', `/console/webhooks/${id}`);
    expect(pendingLog.body).toContain('HTTP 503, answered 503');
    expect(pendingLog.body).not.toContain('Send again');
    const [delivery] = await deliveries(Number(id));
    await db.run("UPDATE webhook_deliveries SET state = 'failed' WHERE delivery_id = ?", [delivery!.delivery_id]);
    const failedLog = await browser('GET', `/console/webhooks/${id}?state=failed`);
    expect(failedLog.body).toContain('Send again');
    recv.answerWith(200);
    const replayed = await browser('POST', `/console/webhooks/${id}/deliveries/${delivery!.delivery_id}/replay`, { csrf });
    expect(replayed.headers.location).toBe(`/console/webhooks/${id}`);
    await deliver(d);
    expect((await browser('GET', `/console/webhooks/${id}`)).body).toContain('HTTP 200');

    expect((await browser('POST', `/console/webhooks/${id}/delete`, { csrf })).status).toBe(303);
    expect((await browser('GET', '/console/webhooks')).body).toContain(`webhook ${id} deleted`);
    expect((await api('GET', `/webhooks/${id}`)).status).toBe(404);
  });
});
