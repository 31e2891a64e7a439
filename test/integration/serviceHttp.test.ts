import { mkdirSync } from 'node:fs';
import { maxHeaderSize } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { startService, type RunningService } from '../../src/service/root.js';
import { systemClock } from '../../src/util/clock.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';

// The reference service's HTTP layer (issue 15): every error in the API's one shape `{"error": message}`, also
// those raised before a route is found (by Node's HTTP parser or by fastify), bodies that are not UTF-8, the
// Authorization scheme in any case, 405 with Allow. In this process, driven over real sockets: fetch where an
// HTTP client can send the request, raw TCP (node:net) where none would.

const tmp = tempDir('door-agent-service-http-');
let service: RunningService;
let port: number;
let key: string;

let services = 0;
async function startHere(): Promise<{ service: RunningService; key: string; port: number }> {
  const dataDir = join(tmp.path, `service-${++services}`);
  mkdirSync(dataDir);
  const started = await startService(
    {
      server: {
        listen: '127.0.0.1:0',
        dataDir,
        lockReplyTimeoutSeconds: 5,
        resources: [{ resourceId: 12, uuid: DOOR_UUID, type: 'DOOR', name: 'Front door' }],
      },
    },
    { clock: systemClock, logger: pino({ level: 'silent' }), env: {} },
  );
  return { service: started, key: await new ApiKeys(started.db).create('ADMIN', 0, Date.now()), port: Number(new URL(started.url).port) };
}

beforeAll(async () => {
  ({ service, key, port } = await startHere());
});
afterAll(async () => {
  await service.stop();
  tmp.cleanup();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `request` as is on a new TCP connection and reads the answer until the server closes it. */
function rawRequest(request: string | Buffer, options: { port?: number; endAfterMs?: number } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(options.port ?? port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (err) => (chunks.length > 0 ? undefined : reject(err)));
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) return reject(new Error(`no HTTP answer: ${JSON.stringify(text)}`));
      const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(split + 4) });
    });
    socket.write(request);
    // A request the server answers without closing (keep-alive) would hang here: the tests send Connection: close.
    setTimeout(() => socket.end(), options.endAfterMs ?? 2000).unref();
  });
}

/** The answer's body is the API's error shape, `{"error": message}` and nothing else; returns the message. */
function errorOf(answer: { headers: Record<string, string>; body: string }): string {
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  const parsed = JSON.parse(answer.body) as Record<string, unknown>;
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(typeof parsed.error).toBe('string');
  return parsed.error as string;
}

async function send(method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...headers },
    ...(body === undefined ? {} : { body }),
  });
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
}
const json = (body: string | Buffer) => send('POST', '/invites', body, { 'content-type': 'application/json' });
const form = (body: string | Buffer) => send('POST', '/invites', body, { 'content-type': 'application/x-www-form-urlencoded' });

async function listedEmails(): Promise<string[]> {
  const list = await send('GET', '/multipleusers');
  return (JSON.parse(list.body) as Array<{ email: string }>).map((u) => u.email);
}

describe('bodies that are not UTF-8 are refused, never stored with U+FFFD', () => {
  const bytes = (...parts: Array<string | number[]>) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));

  it('a JSON body with bytes that are not UTF-8: 400, and nothing is added', async () => {
    const answer = await json(bytes('{"emails":["bad', [0xff, 0xfe], '@example.org"],"no_email":true}'));
    expect(answer.status).toBe(400);
    expect(errorOf(answer)).toBe('request body is not valid UTF-8');
    // A truncated multi-byte sequence too (é cut after its first byte).
    const cut = await json(bytes('{"emails":["cut', [0xc3], '@example.org"],"no_email":true}'));
    expect(cut.status).toBe(400);
    expect(errorOf(cut)).toBe('request body is not valid UTF-8');
    expect((await listedEmails()).filter((e) => e.startsWith('bad') || e.startsWith('cut'))).toEqual([]);
  });

  it('a JSON string with an unpaired surrogate escape (\\ud800): 400', async () => {
    const answer = await json('{"emails":["lone\\ud800x@example.org"],"no_email":true}');
    expect(answer.status).toBe(400);
    expect(errorOf(answer)).toMatch(/^request body is not valid UTF-8: .*unpaired surrogate/);
  });

  it('a form body with raw bytes, or percent-encoded bytes, that are not UTF-8: 400', async () => {
    const raw = await form(bytes('emails=%5B%22rawform', [0xe9], '%40example.org%22%5D&no_email=true'));
    expect(raw.status).toBe(400);
    expect(errorOf(raw)).toBe('request body is not valid UTF-8');
    const encoded = await form('emails=%5B%22pctform%FF%40example.org%22%5D&no_email=true');
    expect(encoded.status).toBe(400);
    expect(errorOf(encoded)).toMatch(/^request body is not valid UTF-8: .*%FF/);
    expect((await listedEmails()).filter((e) => e.startsWith('rawform') || e.startsWith('pctform'))).toEqual([]);
  });

  it('UTF-8 text, raw or escaped, in JSON or a form, is stored as sent', async () => {
    expect((await json(bytes('{"emails":["zoë@example.org"],"no_email":true}'))).status).toBe(200);
    expect((await json('{"emails":["\\u00e9mile\\ud83d\\ude00@example.org"],"no_email":true}')).status).toBe(200);
    expect((await form(`emails=${encodeURIComponent('["jürgen@example.org"]')}&no_email=true`)).status).toBe(200);
    // A "%" that starts no escape stays as it is (as before).
    expect((await form('emails=%5B%22per%zzcent%40example.org%22%5D&no_email=true')).status).toBe(200);
    expect(await listedEmails()).toEqual(expect.arrayContaining(['zoë@example.org', 'émile😀@example.org', 'jürgen@example.org', 'per%zzcent@example.org']));
  });
});

describe('Authorization: the scheme is case-insensitive (RFC 9110)', () => {
  it('bearer, BEARER, extra spaces or a tab after the scheme', async () => {
    for (const header of [`bearer ${key}`, `BEARER ${key}`, `Bearer    ${key}`, `bEaReR \t ${key}`]) {
      const res = await fetch(`http://127.0.0.1:${port}/multipleusers`, { headers: { authorization: header } });
      expect(res.status, header).toBe(200);
    }
  });

  it('another scheme, or Bearer without a key, is still refused', async () => {
    const basic = await fetch(`http://127.0.0.1:${port}/multipleusers`, { headers: { authorization: `Basic ${key}` } });
    expect(basic.status).toBe(401);
    const bearerless = await fetch(`http://127.0.0.1:${port}/multipleusers`, { headers: { authorization: `Bearerx ${key}` } });
    expect(bearerless.status).toBe(401);
  });
});

describe('errors raised before a route answers have the API shape and say what is wrong', () => {
  it('431 for headers over the limit, with Connection: close', async () => {
    const answer = await rawRequest(`GET /multipleusers HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(maxHeaderSize + 1000)}\r\n\r\n`);
    expect(answer.status).toBe(431);
    expect(answer.headers.connection).toBe('close');
    expect(errorOf(answer)).toBe(`request headers over ${maxHeaderSize} bytes: send fewer or shorter headers`);
  });

  it('400 for a request line that is not HTTP', async () => {
    const garbage = await rawRequest('GARBAGE\r\n\r\n');
    expect(garbage.status).toBe(400);
    expect(garbage.headers.connection).toBe('close');
    expect(errorOf(garbage)).toMatch(/^the request line is not valid HTTP \(Invalid method encountered\)/);
    const space = await rawRequest('GET /multiple users HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(space.status).toBe(400);
    expect(errorOf(space)).toMatch(/^the request line is not valid HTTP .*percent-encode/);
  });

  it('400 for Transfer-Encoding together with Content-Length, either order', async () => {
    for (const headers of ['Content-Length: 5\r\nTransfer-Encoding: chunked', 'Transfer-Encoding: chunked\r\nContent-Length: 5']) {
      const answer = await rawRequest(
        `POST /invites HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${headers}\r\n\r\n0\r\n\r\n`,
      );
      expect(answer.status).toBe(400);
      expect(answer.headers.connection).toBe('close');
      expect(errorOf(answer)).toBe('the request has both Transfer-Encoding and Content-Length: send only one of them');
    }
  });

  it('400 for a header with a character HTTP does not allow, and for a malformed chunked body', async () => {
    const header = await rawRequest('GET /multipleusers HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n');
    expect(header.status).toBe(400);
    expect(errorOf(header)).toMatch(/^a header name or value holds a character HTTP does not allow/);
    const chunk = await rawRequest(
      `POST /invites HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    );
    expect(chunk.status).toBe(400);
    expect(errorOf(chunk)).toMatch(/^the chunked request body is malformed/);
  });

  it('400 for a path that is not valid percent-encoding', async () => {
    const answer = await send('GET', '/%zz');
    expect(answer.status).toBe(400);
    expect(errorOf(answer)).toBe('the URL path /%zz is not valid: a "%" must start a UTF-8 byte written as two hex digits');
  });

  it('400 naming a __proto__ or constructor.prototype key in JSON', async () => {
    const proto = await json('{"emails":["p@example.org"],"__proto__":{"admin":true}}');
    expect(proto.status).toBe(400);
    expect(errorOf(proto)).toBe('request body: the JSON key "__proto__" is not accepted (it could change object prototypes): remove or rename it');
    const escaped = await json('{"emails":["p@example.org"],"\\u005f_proto__":{}}');
    expect(errorOf(escaped)).toMatch(/"__proto__" is not accepted/);
    const ctor = await json('{"emails":["p@example.org"],"constructor":{"prototype":{}}}');
    expect(ctor.status).toBe(400);
    expect(errorOf(ctor)).toMatch(/the JSON key "constructor" \(with a "prototype"\) is not accepted/);
  });

  it('400 for JSON that does not parse, saying where; 400 for an empty JSON body', async () => {
    const broken = await json('{"emails": [');
    expect(broken.status).toBe(400);
    expect(errorOf(broken)).toMatch(/^request body is not valid JSON \(.+\)$/);
    const empty = await send('DELETE', '/user?email_id=999999', '', { 'content-type': 'application/json' });
    expect(empty.status).toBe(400);
    expect(errorOf(empty)).toBe('request body is empty but Content-Type is application/json: send a JSON object, or no Content-Type');
  });

  it('415 naming the content type and the ones accepted', async () => {
    const answer = await send('POST', '/invites', '<emails/>', { 'content-type': 'text/xml' });
    expect(answer.status).toBe(415);
    expect(errorOf(answer)).toBe('Content-Type text/xml is not supported: send application/json or application/x-www-form-urlencoded');
  });

  it('415 for a text/plain body too (fastify would take it and the parameters would be reported missing)', async () => {
    const answer = await send('POST', '/invites', '{"emails":["a@example.org"]}', { 'content-type': 'text/plain' });
    expect(answer.status).toBe(415);
    expect(errorOf(answer)).toBe('Content-Type text/plain is not supported: send application/json or application/x-www-form-urlencoded');
  });

  it('400 for a body over 1 MiB (kept), in the same shape', async () => {
    const answer = await json(JSON.stringify({ emails: ['x'.repeat(1024 * 1024)] }));
    expect(answer.status).toBe(400);
    expect(errorOf(answer)).toBe('request body over 1048576 bytes');
  });
});

describe('a wrong method on a known path is 405 with Allow; an unknown path stays 404', () => {
  it('DELETE /multipleusers, POST /user, OPTIONS /groups', async () => {
    const list = await send('DELETE', '/multipleusers');
    expect(list.status).toBe(405);
    expect(list.headers.allow).toBe('GET, HEAD');
    expect(errorOf(list)).toBe('DELETE is not allowed on /multipleusers: use GET or HEAD');
    const user = await send('POST', '/user?email_id=1');
    expect(user.status).toBe(405);
    expect(user.headers.allow).toBe('DELETE, GET, HEAD');
    const groups = await send('OPTIONS', '/groups');
    expect(groups.status).toBe(405);
    expect(groups.headers.allow).toBe('POST, PUT');
    expect(errorOf(groups)).toBe('OPTIONS is not allowed on /groups: use POST or PUT');
  });

  it('an unknown path: 404; a wrong method still needs a key first', async () => {
    const unknown = await send('GET', '/nothing-here');
    expect(unknown.status).toBe(404);
    expect(errorOf(unknown)).toBe('no endpoint GET /nothing-here');
    const keyless = await fetch(`http://127.0.0.1:${port}/multipleusers`, { method: 'DELETE' });
    expect(keyless.status).toBe(401);
  });
});

describe('a request that arrives while the service stops', () => {
  it('503 in the API shape, with Retry-After and Connection: close', async () => {
    const other = await startHere();
    // The request line is in, the headers are not: the connection is not idle, so closing waits for it.
    const socket = connect(other.port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`GET /multipleusers HTTP/1.1\r\nHost: x\r\n`);
    await new Promise((r) => setTimeout(r, 100));
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const stopping = other.service.stop();
    await new Promise((r) => setTimeout(r, 100));
    socket.write(`Authorization: Bearer ${other.key}\r\n\r\n`);
    await closed;
    await stopping;
    const text = Buffer.concat(chunks).toString();
    expect(text).toMatch(/^HTTP\/1\.1 503 /);
    expect(text.toLowerCase()).toContain('connection: close');
    expect(text.toLowerCase()).toMatch(/\r\nretry-after: \d+\r\n/);
    const body = text.slice(text.indexOf('\r\n\r\n') + 4);
    expect(errorOf({ headers: { 'content-type': 'application/json' }, body })).toBe('the service is stopping: try again in a moment');
  });
});
