import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base32, fingerprint, rawPublicKey, signFleet } from '../../src/protocol/fleetSigning.js';
import { listing } from '../support/boardListing.js';
import { runCliAsync, tempDir } from '../support/cli.js';

// `door-agent enrol` (the built CLI) against a fake service that holds the real identity key of the code's
// fingerprint and answers one thing wrong at a time (docs/fleet.md, "Enrolment"; issue 54 point 1): the board
// must refuse each, exit 1 naming what was wrong, write nothing, and never send the code's secret before the
// challenge proves the key and the address. The real service: enrolCommand.test.ts.

const tmp = tempDir('door-agent-enrol-refusals-');
const identity = generateKeyPairSync('ed25519');
const stranger = generateKeyPairSync('ed25519');
const SERVICE_KEY = rawPublicKey(identity.publicKey);
const FINGERPRINT = fingerprint(identity.publicKey);
const ENROLMENT = '3f2b8c1e-5d4a-4e6f-9a7b-0c1d2e3f4a5b';
const POLL_SECRET = randomBytes(32).toString('base64url');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

type Body = Record<string, unknown>;
/** One route of the fake: its answer's status and JSON body. */
type Handler = (body: Body) => { status: number; body: unknown };
type Route = 'POST /fleet/enrol/challenge' | 'POST /fleet/enrol' | 'GET /fleet/enrolments/:id' | 'POST /fleet/enrolments/:id/confirm';

let server: Server;
let port: number;
let origin: string;
/** Every request the fake received, with its body as sent. */
let received: Array<{ route: string; body: string }> = [];
let routes: Record<Route, Handler>;

const ok = (body: unknown) => ({ status: 200, body });

/** The answers of the service the code was made for, each right. */
const right: Record<Route, Handler> = {
  'POST /fleet/enrol/challenge': (body) => ok(challengeAnswer({ nonce: body.nonce, origin })),
  'POST /fleet/enrol': (body) => ok(enrolAnswer(String(body.secret))),
  'GET /fleet/enrolments/:id': () => ok(adopted({ enrolment_id: ENROLMENT })),
  'POST /fleet/enrolments/:id/confirm': () => ok({ success: 'confirmed' }),
};

function challengeAnswer(signed: { nonce: unknown; origin: string }, purpose: 'enrol-challenge' | 'enrol' = 'enrol-challenge') {
  return { origin: signed.origin, service_key: SERVICE_KEY, signature: signFleet(identity.privateKey, purpose, signed) };
}

function enrolAnswer(secret: string, signer = identity.privateKey) {
  const accepted = { enrolment_id: ENROLMENT, secret_sha256: sha256(secret), poll_secret: POLL_SECRET };
  return { accepted, service_key: SERVICE_KEY, signature: signFleet(signer, 'enrol', accepted) };
}

function adopted(change: { enrolment_id?: string }, signer = identity.privateKey) {
  const grant = Object.assign(
    { enrolment_id: ENROLMENT, agent_id: 'lobby', service_url: origin, api_key: 'k'.repeat(32), mqtt: null, release_key: null },
    change,
  );
  return { state: 'adopted', grant, signature: signFleet(signer, 'grant', grant) };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0]!.replace(/\/fleet\/enrolments\/[^/]+/, '/fleet/enrolments/:id');
      const route = `${req.method} ${path}`;
      received.push({ route, body });
      const handler = routes[route as Route];
      const answer = handler ? handler(body === '' ? {} : (JSON.parse(body) as Body)) : { status: 404, body: { error: `no endpoint ${route}` } };
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
    });
  });
  // Every address: the loopback one for most cases, the board's LAN address for the warning about plain http.
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  port = (server.address() as { port: number }).port;
  origin = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  tmp.cleanup();
});

let boards = 0;

/** `door-agent enrol URL CODE` on a blank board with a new code of the fake's fingerprint, the fake answering `changed` wrong. */
async function enrolWith(changed: Partial<Record<Route, Handler>>, url = origin) {
  routes = Object.assign({}, right, changed);
  received = [];
  const dir = join(tmp.path, `board-${++boards}`);
  mkdirSync(dir);
  const secret = base32(randomBytes(20));
  const r = await runCliAsync([
    'enrol',
    url,
    `da1.${secret}.${FINGERPRINT}`,
    '--config',
    join(dir, 'etc', 'config.yaml'),
    '--data-dir',
    join(dir, 'data'),
    '--wait-minutes',
    '1',
  ]);
  return Object.assign(r, { dir, secret, routes: received.map((x) => x.route), secretSent: received.some((x) => x.body.includes(secret)) });
}

const NOT_SENT = "the code's secret was not sent, nothing was written";

describe('door-agent enrol against a fake service', () => {
  it('answered right by the fake, enrols (so each refusal below is its one fault)', async () => {
    const r = await enrolWith({});
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`enrolled as agent lobby of ${origin}`);
    expect(r.routes).toEqual(['POST /fleet/enrol/challenge', 'POST /fleet/enrol', 'GET /fleet/enrolments/:id', 'POST /fleet/enrolments/:id/confirm']);
    expect(r.stderr).not.toContain('WARNING');
  });

  describe('the challenge fails: the secret is never sent, nothing is written', () => {
    const refusedAtChallenge = (r: Awaited<ReturnType<typeof enrolWith>>) => {
      expect(r.status).toBe(1);
      expect(r.routes).toEqual(['POST /fleet/enrol/challenge']);
      expect(r.secretSent).toBe(false);
      expect(listing(r.dir)).toEqual({});
    };

    it('a signature by the key of the right fingerprint, but not of the challenge (another purpose)', async () => {
      const r = await enrolWith({ 'POST /fleet/enrol/challenge': (body) => ok(challengeAnswer({ nonce: body.nonce, origin }, 'enrol')) });
      refusedAtChallenge(r);
      expect(r.stderr).toContain(
        `the challenge's answer of ${origin} is not signed by the key it names for this board's nonce (forged, or replayed from another exchange): refused, ${NOT_SENT}`,
      );
    });

    it('a challenge signed for another nonce (replayed)', async () => {
      const replayed = challengeAnswer({ nonce: randomBytes(32).toString('base64url'), origin });
      const r = await enrolWith({ 'POST /fleet/enrol/challenge': () => ok(replayed) });
      refusedAtChallenge(r);
      expect(r.stderr).toContain(`the challenge's answer of ${origin} is not signed by the key it names for this board's nonce`);
    });

    it('a challenge signed for another origin: the URL typed is not the service publicUrl, both named', async () => {
      const elsewhere = 'https://access.example.org';
      const r = await enrolWith({ 'POST /fleet/enrol/challenge': (body) => ok(challengeAnswer({ nonce: body.nonce, origin: elsewhere })) });
      refusedAtChallenge(r);
      expect(r.stderr).toContain(
        `the service's address is ${elsewhere} (its server.publicUrl), not ${origin} as given: enrol with the URL door-agent service enrol-code prints; ${NOT_SENT}`,
      );
    });

    it('a key of another fingerprint', async () => {
      const r = await enrolWith({
        'POST /fleet/enrol/challenge': (body) =>
          ok({
            origin,
            service_key: rawPublicKey(stranger.publicKey),
            signature: signFleet(stranger.privateKey, 'enrol-challenge', { nonce: body.nonce, origin }),
          }),
      });
      refusedAtChallenge(r);
      expect(r.stderr).toContain(`the service at ${origin} signs with a key of fingerprint ${fingerprint(stranger.publicKey)}, not the code's ${FINGERPRINT}`);
    });

    it('a malformed answer to the challenge', async () => {
      const r = await enrolWith({ 'POST /fleet/enrol/challenge': () => ok({ origin, service_key: SERVICE_KEY }) });
      refusedAtChallenge(r);
      expect(r.stderr).toMatch(/POST \/fleet\/enrol\/challenge: the answer is not the enrolment's \(signature: .*\); the code's secret was not sent/);
    });

    it('an older service without the challenge (404, though POST /fleet/enrol answers): it must be updated, no fallback', async () => {
      const r = await enrolWith({ 'POST /fleet/enrol/challenge': () => ({ status: 404, body: { error: 'no endpoint POST /fleet/enrol/challenge' } }) });
      refusedAtChallenge(r);
      expect(r.stderr).toContain(
        `${origin} does not answer the enrolment's challenge (POST /fleet/enrol/challenge: no endpoint POST /fleet/enrol/challenge): a door-agent service older than this board must be updated before it enrols boards`,
      );
    });

    const lan = Object.values(networkInterfaces())
      .flat()
      .find((a) => a?.family === 'IPv4' && !a.internal)?.address;
    it.skipIf(lan === undefined)('plain http to another machine: one warning line, and the enrolment goes on', async () => {
      const r = await enrolWith({ 'POST /fleet/enrol/challenge': () => ({ status: 404, body: { error: 'no endpoint' } }) }, `http://${lan}:${port}`);
      refusedAtChallenge(r);
      const warnings = r.stderr.split('\n').filter((line) => line.includes('WARNING'));
      expect(warnings).toEqual([
        `door-agent enrol: WARNING: http://${lan}:${port} is plain http to another machine: the code's secret, and once adopted the board's DOOR key and MQTT password, cross the network in clear (use https://)`,
      ]);
    });
  });

  describe('the challenge passes, the answer to the code does not: nothing is written', () => {
    const refusedAtAnswer = (r: Awaited<ReturnType<typeof enrolWith>>) => {
      expect(r.status).toBe(1);
      expect(r.routes).toEqual(['POST /fleet/enrol/challenge', 'POST /fleet/enrol']);
      expect(listing(r.dir)).toEqual({});
    };

    it('not signed by the key it names', async () => {
      const r = await enrolWith({ 'POST /fleet/enrol': (body) => ok(enrolAnswer(String(body.secret), stranger.privateKey)) });
      refusedAtAnswer(r);
      expect(r.stderr).toContain(`the answer of ${origin} is not signed by the key it names: refused, nothing was written`);
    });

    it("for another code's secret (replayed)", async () => {
      const r = await enrolWith({ 'POST /fleet/enrol': () => ok(enrolAnswer(base32(randomBytes(20)))) });
      refusedAtAnswer(r);
      expect(r.stderr).toContain(`the answer of ${origin} is for another code (replayed): refused, nothing was written`);
    });

    it('malformed', async () => {
      const r = await enrolWith({ 'POST /fleet/enrol': (body) => ok(Object.assign(enrolAnswer(String(body.secret)), { signature: 'not base64!' })) });
      refusedAtAnswer(r);
      expect(r.stderr).toContain("POST /fleet/enrol: the answer is not the enrolment's (signature: the signature must be base64");
      expect(r.stderr).toContain('nothing was written');
    });
  });

  describe('adopted, the grant does not hold: only the pending record is on the board', () => {
    const refusedAtGrant = (r: Awaited<ReturnType<typeof enrolWith>>) => {
      expect(r.status).toBe(1);
      expect(r.routes).toEqual(['POST /fleet/enrol/challenge', 'POST /fleet/enrol', 'GET /fleet/enrolments/:id']);
      expect(listing(r.dir)).toEqual({ data: '750', 'data/fleet': '750', 'data/fleet/enrolment.json': '600' });
    };

    it("a grant not signed by the service's key", async () => {
      const r = await enrolWith({ 'GET /fleet/enrolments/:id': () => ok(adopted({}, stranger.privateKey)) });
      refusedAtGrant(r);
      expect(r.stderr).toContain("the grant is not signed by the service's key this board trusts: refused, nothing was written");
    });

    it('a grant for another enrolment', async () => {
      const another = '00000000-0000-4000-8000-000000000001';
      const r = await enrolWith({ 'GET /fleet/enrolments/:id': () => ok(adopted({ enrolment_id: another })) });
      refusedAtGrant(r);
      expect(r.stderr).toContain(`the grant is for enrolment ${another}, not ${ENROLMENT}: refused`);
    });
  });
});
