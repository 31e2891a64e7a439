import { mkdirSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { REQUEST_LIMITS } from '../../src/service/requestLimits.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { newServiceDb } from '../support/serviceDb.js';
import { startServiceProcess, type ServiceProcess } from '../support/serviceProcess.js';
import { freePort } from '../support/net.js';

// The API document gives `api_key` as a form parameter of one call and leaves every other parameter's place open,
// so a client written from it alone may send the key in the body of any call. The service (its own process, as
// deployed) takes it there, but reads at most REQUEST_LIMITS.bodyBeforeKey bytes of a body before it knows a key:
// a keyless 50 MB upload is refused at once and its connection closed, not read.

const tmp = tempDir('door-agent-bodykey-');
const LIMIT = REQUEST_LIMITS.bodyBeforeKey;
let service: ServiceProcess;
let port: number;
let admin: string;
let superKey: string;
let door: string;

beforeAll(async () => {
  port = await freePort();
  mkdirSync(join(tmp.path, 'svc'));
  // The service's own database: svc/data/service.db on SQLite, given as server.database on PostgreSQL.
  const { db, location } = await newServiceDb(join(tmp.path, 'svc', 'data'));
  const database =
    location.engine === 'postgres' ? `  database: { url: ${JSON.stringify(location.url)}, passwordFile: ${JSON.stringify(location.passwordFile)} }\n` : '';
  const config = join(tmp.path, 'svc', 'config.yaml');
  writeFileSync(
    config,
    `server:
  listen: 127.0.0.1:${port}
  dataDir: ${tmp.path}/svc/data
${database}  resources:
    - { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door }
`,
  );
  admin = await new ApiKeys(db).create('ADMIN', 0, Date.now());
  superKey = await new ApiKeys(db).create('SUPER', 0, Date.now());
  door = await new ApiKeys(db).create('DOOR', 0, Date.now());
  await db.close();
  service = await startServiceProcess(config, { captureStderr: true });
}, 60_000);

afterAll(async () => {
  await service?.stop();
  tmp.cleanup();
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
}

/** One request with node:http (which, unlike fetch, sends a body with GET too). */
function send(method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method, path, headers: body === undefined ? headers : { 'content-length': String(Buffer.byteLength(body)), ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const JSON_TYPE = { 'content-type': 'application/json' };
const form = (fields: Record<string, unknown>) =>
  new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)])).toString();

describe('api_key in the body of every call', () => {
  let emailId: number;
  let userId: number;

  it('POST /invites, then every other call, with the key only in a form body', async () => {
    const invited = await send('POST', '/invites', form({ api_key: admin, emails: ['form@example.org'], no_email: true }), FORM);
    expect(invited.status, JSON.stringify(invited.body)).toBe(200);
    emailId = (invited.body.add_ids as number[])[0]!;
    const list = await send('GET', '/multipleusers', form({ api_key: admin }), FORM);
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    userId = (list.body as unknown as Array<{ email_id: number; user_id: number }>).find((u) => u.email_id === emailId)!.user_id;

    const calls: Array<[string, string, Record<string, unknown>, number]> = [
      ['GET', '/user', { email_id: emailId }, 200],
      ['GET', '/modifysmartcard', { email_id: emailId }, 200],
      ['GET', '/directory', {}, 200],
      ['GET', '/lockdown', {}, 200],
      ['POST', '/groups', { type: 'users', name: 'Form', add_ids: [emailId] }, 200],
      ['PUT', '/groups', { type: 'users', group_id: 1, del_ids: [emailId] }, 200],
      ['PUT', '/modifysmartcard', { email_id: emailId, smartcards: [{ number: '4213578', label: 'badge' }] }, 200],
      ['PUT', '/modifysmartcards', { email_id: emailId, smartcards: [{ number: '4213578', label: 'badge' }] }, 200],
      ['PUT', '/modifyallusernames', { email_id: emailId, computer_usernames: [{ computer_username: 'form' }] }, 200],
      ['PUT', '/togglesuspension', { email_id: emailId }, 200],
      ['PUT', '/togglesuspension', { email_id: emailId }, 200],
      ['PUT', '/promoteguest', { email_id: emailId }, 400], // a USER already: the route's own answer, past the key
      ['POST', '/magiclinkadmin', { email_list: ['guest@example.org'], resource_id_list: [12], name: 'Visit', send_email: false }, 200],
      // No MQTT in this service: the route's own 503, past the key.
      ['POST', '/setlockstatus', { uuid: DOOR_UUID, lock_state: true }, 503],
      ['POST', '/lockdown', { uuid: DOOR_UUID, active: true }, 503],
    ];
    for (const [method, path, fields, status] of calls) {
      const answer = await send(method, path, form({ api_key: admin, ...fields }), FORM);
      expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(status);
    }
    // SUPER's call, and the key in a JSON body.
    expect((await send('PUT', '/modifyrank', form({ api_key: superKey, admin_user_id: userId, rank: 'ADMIN' }), FORM)).status).toBe(200);
    const json = await send('PUT', '/modifyrank', JSON.stringify({ api_key: superKey, admin_user_id: userId, rank: 'REGULAR' }), JSON_TYPE);
    expect(json.status, JSON.stringify(json.body)).toBe(200);
    const viaJson = await send('GET', '/user', JSON.stringify({ api_key: admin, email_id: emailId }), JSON_TYPE);
    expect(viaJson.body).toMatchObject({ smartcards: [{ number: '4213578', label: 'badge' }], computer_usernames: ['form'] });
    const removed = await send('DELETE', '/user', form({ api_key: admin, email_id: emailId }), FORM);
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
  });

  it('a wrong, expired-looking or missing key in the body is refused (401); a DOOR key in the body may only read', async () => {
    for (const [body, type] of [
      [form({ api_key: 'dak_not-a-key', emails: ['x@example.org'] }), FORM],
      [JSON.stringify({ api_key: `dak_${'A'.repeat(43)}`, emails: ['x@example.org'] }), JSON_TYPE],
    ] as const) {
      expect(await send('POST', '/invites', body, type)).toMatchObject({ status: 401, body: { error: 'API key not valid or expired' } });
    }
    expect(await send('POST', '/invites', form({ emails: ['x@example.org'] }), FORM)).toMatchObject({ status: 401, body: { error: 'an API key is required' } });
    // Broken JSON without a key: the key is the first problem.
    expect(await send('POST', '/invites', '{"emails": [', JSON_TYPE)).toMatchObject({ status: 401 });
    expect(await send('POST', '/invites', form({ api_key: door, emails: ['x@example.org'] }), FORM)).toMatchObject({ status: 403 });
    expect((await send('GET', '/multipleusers', form({ api_key: door }), FORM)).status).toBe(200);
    const list = (await send('GET', '/multipleusers', undefined, { authorization: `Bearer ${admin}` })).body as unknown as unknown[];
    expect(list.some((u) => JSON.stringify(u).includes('x@example.org'))).toBe(false);
  });

  it('a key in two places that disagree is refused (400) naming both; the same key twice is fine', async () => {
    const both = await send('POST', '/invites', form({ api_key: superKey, emails: ['two@example.org'], no_email: true }), {
      ...FORM,
      authorization: `Bearer ${admin}`,
    });
    expect(both).toMatchObject({ status: 400, body: { error: expect.stringContaining('two API keys that differ') } });
    expect(both.body.error).toContain('Authorization header');
    expect(both.body.error).toContain('api_key in the body');
    const query = await send('GET', `/multipleusers?api_key=${superKey}`, undefined, { 'x-api-key': admin });
    expect(query).toMatchObject({ status: 400, body: { error: expect.stringContaining('X-API-Key header') } });
    const same = await send('POST', '/invites', form({ api_key: admin, emails: ['two@example.org'], no_email: true }), {
      ...FORM,
      authorization: `Bearer ${admin}`,
    });
    expect(same.status, JSON.stringify(same.body)).toBe(200);
  });

  it(`a body over ${LIMIT} bytes: its key must come in the first ${LIMIT}; then the call's own limit applies`, async () => {
    const emails = (tag: string) => Array.from({ length: 1000 }, (_, i) => `${tag}${i}@example.org`);
    // Key first: the body (about 30 KB) goes through, in a form and in JSON.
    const first = `api_key=${admin}&${form({ emails: emails('bigform'), no_email: true })}`;
    expect(first.length).toBeGreaterThan(2 * LIMIT);
    const formAnswer = await send('POST', '/invites', first, FORM);
    expect(formAnswer.status, JSON.stringify(formAnswer.body).slice(0, 200)).toBe(200);
    expect(formAnswer.body.add_ids).toHaveLength(1000);
    const jsonAnswer = await send('POST', '/invites', JSON.stringify({ api_key: admin, emails: emails('bigjson'), no_email: true }), JSON_TYPE);
    expect(jsonAnswer.status, JSON.stringify(jsonAnswer.body).slice(0, 200)).toBe(200);
    expect(jsonAnswer.body.add_ids).toHaveLength(1000);
    // Key last: refused, saying where it must be.
    const lateBody = `${form({ emails: emails('late'), no_email: true })}&api_key=${admin}`;
    expect(lateBody.length).toBeGreaterThan(2 * LIMIT);
    const last = await send('POST', '/invites', lateBody, FORM);
    expect(last.status).toBe(401);
    expect(last.body.error).toContain(`first ${LIMIT} bytes`);
    expect(last.headers.connection).toBe('close');
    // A wrong key first: refused without reading further.
    const wrong = await send('POST', '/invites', `api_key=dak_wrong&${form({ emails: emails('wrong'), no_email: true })}`, FORM);
    expect(wrong).toMatchObject({ status: 401, body: { error: 'API key not valid or expired' } });
  });
});

/**
 * Sends `total` bytes of body as fast as the connection takes them (or until the service closes it) and returns
 * the answer's first bytes, how many body bytes the connection took, and how long until it was closed.
 */
async function upload(head: string, total: number, chunked: boolean): Promise<{ answer: string; sent: number; ms: number; closed: boolean }> {
  const started = performance.now();
  const socket = connect(port, '127.0.0.1');
  let answer = '';
  let closed = false;
  socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
  socket.on('error', () => {});
  const done = new Promise<void>((resolve) => socket.once('close', () => ((closed = true), resolve())));
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  socket.write(head);
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const framed = chunked ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk;
  let sent = 0;
  while (sent < total && !closed && !socket.destroyed) {
    const more = socket.write(framed);
    sent += chunk.length;
    if (!more) await Promise.race([new Promise((r) => socket.once('drain', r)), done]);
  }
  if (!closed && chunked) socket.write('0\r\n\r\n');
  // Given the whole body, a service that reads it all answers then; wait for that (or the close) either way.
  await Promise.race([done, new Promise((r) => setTimeout(r, 20_000))]);
  const ms = performance.now() - started;
  socket.destroy();
  return { answer, sent, ms, closed };
}

describe('a large body without a valid key is refused at once, not read', () => {
  const MB50 = 50 * 1024 * 1024;
  const path = '/groups';
  it.each([
    [
      'no key, Content-Length',
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${MB50}\r\n\r\n`,
      false,
      401,
    ],
    ['no key, chunked', `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n`, true, 401],
    ['no key, chunked JSON', `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`, true, 401],
    [
      'a wrong key in the header',
      `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dak_wrong\r\nContent-Type: application/json\r\nContent-Length: ${MB50}\r\n\r\n`,
      false,
      401,
    ],
  ] as const)(
    '%s: the answer comes at once and the connection is closed, not read to its end',
    async (_name, head, chunked, status) => {
      const r = await upload(head, MB50, chunked);
      expect(r.answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(r.answer.toLowerCase()).toContain('connection: close');
      expect(r.closed).toBe(true);
      // The kernel's buffers hold a few MB at most: far from the 50 MB a service reading it all would take.
      expect(r.sent).toBeLessThan(16 * 1024 * 1024);
      expect(r.ms).toBeLessThan(10_000);
    },
    60_000,
  );

  it('the service still answers at once afterwards, and never logged a key', async () => {
    expect((await send('GET', '/multipleusers', undefined, { authorization: `Bearer ${admin}` })).status).toBe(200);
    const output = service.output();
    for (const key of [admin, superKey, door]) expect(output).not.toContain(key);
    expect(output).not.toContain('dak_');
  });
});
