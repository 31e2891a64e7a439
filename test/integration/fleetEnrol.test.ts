import { createHash, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enrolAnswerSchema,
  enrolChallengeAnswerSchema,
  enrolCodeAnswerSchema,
  enrolmentStateSchema,
  fleetAgentsAnswerSchema,
  parseEnrolCode,
  type BoardFacts,
} from '../../src/api/fleet.js';
import { fingerprint, fleetSignatureMatches, publicKeyFromRaw, rawPublicKey } from '../../src/protocol/fleetSigning.js';
import { ApiKeys, keyDigest } from '../../src/service/apiKeys.js';
import { FleetAgents } from '../../src/service/fleet/fleetAgents.js';
import type { FleetDeps } from '../../src/service/fleet/fleetDeps.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { tempDir } from '../support/cli.js';
import { ManualTime } from '../support/manualTime.js';
import { testService } from '../support/serviceApp.js';
import { newServiceDb } from '../support/serviceDb.js';

// Enrolment at the service (docs/fleet.md, "Enrolment"; issue 54 item 1), on both engines: codes single use and
// expiring, two boards racing on one code, adoption and refusal, the poll secret, the grant and its DOOR key, every
// bad field named, and the /fleet routes without server.fleet. The board's side: enrolCommand.test.ts.

const tmp = tempDir('door-agent-fleet-enrol-');
const PUBLIC_URL = 'https://access.example.org';
const identity = generateKeyPairSync('ed25519');
const release = generateKeyPairSync('ed25519');
const servicePublic = createPublicKey(identity.privateKey);
const time = new ManualTime({ wall: Date.parse('2026-07-01T12:00:00Z') });

const FACTS: BoardFacts = {
  hostname: 'lobby-pi.local',
  version: '0.1.0',
  arch: 'arm64',
  node: 'v20.19.0',
  gpio_chips: ['/dev/gpiochip0', '/dev/gpiochip4'],
  serial_devices: ['/dev/serial/by-id/usb-FTDI_FT232R-if00-port0', '/dev/ttyAMA0'],
};

let db: SqlDb;
let app: ReturnType<typeof testService>;
let bare: ReturnType<typeof testService>;
let bareDb: SqlDb;
const keys = { ADMIN: '', REGULAR: '', DOOR: '' };

beforeAll(async () => {
  ({ db } = await newServiceDb(tmp.path, 'fleet'));
  const apiKeys = new ApiKeys(db);
  for (const rank of ['ADMIN', 'REGULAR', 'DOOR'] as const) keys[rank] = await apiKeys.create(rank, 0, time.wallNow());
  const fleet: FleetDeps = {
    keys: {
      identity: identity.privateKey,
      publicRaw: rawPublicKey(servicePublic),
      fingerprint: fingerprint(servicePublic),
      releaseRaw: rawPublicKey(release.publicKey),
    },
    enrolCodeHours: 24,
    publicUrl: PUBLIC_URL,
    agentMqtt: null,
  } as FleetDeps;
  app = testService(db, { clock: time, fleet });
  await app.ready();
  ({ db: bareDb } = await newServiceDb(tmp.path, 'nofleet'));
  bare = testService(bareDb, { clock: time });
  await bare.ready();
});

afterAll(async () => {
  await app?.close();
  await bare?.close();
  await db?.close();
  await bareDb?.close();
  tmp.cleanup();
});

type Answer = { status: number; body: Record<string, unknown> };

async function call(method: 'GET' | 'POST', url: string, options: { key?: string; bearer?: string; body?: unknown; on?: typeof app } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  const res = await (options.on ?? app).inject({ method, url, headers, ...(options.body === undefined ? {} : { payload: options.body as object }) });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

async function newCode(hours?: number): Promise<{ code: string; secret: string; fingerprint: string; expires_at: string; command: string }> {
  const res = await call('POST', '/fleet/enrol-codes', { key: keys.ADMIN, body: hours === undefined ? {} : { hours } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const answer = enrolCodeAnswerSchema.parse(res.body);
  return { ...answer, ...parseEnrolCode(answer.code)! };
}

async function enrol(secret: string, facts: BoardFacts = FACTS) {
  return call('POST', '/fleet/enrol', { body: { secret, facts } });
}

/** A board enrolled with a new code: its enrolment id and poll secret. */
async function pendingBoard(facts: BoardFacts = FACTS): Promise<{ id: string; poll: string }> {
  const { secret } = await newCode();
  const res = await enrol(secret, facts);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const { accepted } = enrolAnswerSchema.parse(res.body);
  return { id: accepted.enrolment_id, poll: accepted.poll_secret };
}

describe('enrolment codes', () => {
  it('are made by an ADMIN key only, printed as the command the installer types, good for server.fleet.enrolCodeHours', async () => {
    const code = await newCode();
    expect(code.command).toBe(`door-agent enrol ${PUBLIC_URL} ${code.code}`);
    expect(code.fingerprint).toBe(fingerprint(servicePublic));
    expect(Date.parse(code.expires_at)).toBe(time.wallNow() + 24 * 3_600_000);
    expect(Date.parse((await newCode(2)).expires_at)).toBe(time.wallNow() + 2 * 3_600_000);
    for (const key of [keys.REGULAR, keys.DOOR]) expect((await call('POST', '/fleet/enrol-codes', { key })).status).toBe(403);
    expect((await call('POST', '/fleet/enrol-codes', {})).status).toBe(401);
  });

  it('are taken once: the answer is signed by the key the code names and bound to the secret; a second use is refused with when', async () => {
    const { secret, fingerprint: named } = await newCode();
    const first = await enrol(secret);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const answer = enrolAnswerSchema.parse(first.body);
    const key = publicKeyFromRaw(answer.service_key)!;
    expect(fingerprint(key)).toBe(named);
    expect(fleetSignatureMatches(key, 'enrol', answer.accepted, answer.signature)).toBe(true);
    // Made for one purpose, good for no other.
    expect(fleetSignatureMatches(key, 'grant', answer.accepted, answer.signature)).toBe(false);
    expect(answer.accepted.secret_sha256).toBe(createHash('sha256').update(secret).digest('hex'));

    time.wall += 60_000;
    const again = await enrol(secret);
    expect(again).toEqual({ status: 403, body: { error: 'this enrolment code was used at 2026-07-01 12:00:00 UTC: ask the operator for a new one' } });
    time.wall -= 60_000;
  });

  it('expire: a code past its hours is refused with when it expired', async () => {
    const { secret } = await newCode(1);
    time.wall += 3_600_000;
    try {
      expect(await enrol(secret)).toEqual({
        status: 403,
        body: { error: 'this enrolment code expired at 2026-07-01 13:00:00 UTC: ask the operator for a new one' },
      });
    } finally {
      time.wall -= 3_600_000;
    }
    // Unused: still good within its hour.
    expect((await enrol(secret)).status).toBe(200);
  });

  it('refuses a secret this service never made', async () => {
    expect(await enrol('a'.repeat(32))).toEqual({
      status: 403,
      body: { error: 'this enrolment code is not known to this service (mistyped, or made by another service)' },
    });
  });

  it('two boards racing on one code: one enrols, the other is refused, one pending agent', async () => {
    const { secret } = await newCode();
    const before = (await call('GET', '/fleet/agents', { key: keys.ADMIN })).body.agents as unknown[];
    const answers = await Promise.all(Array.from({ length: 4 }, (_, i) => enrol(secret, { ...FACTS, hostname: `racer-${i}` })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 403, 403, 403]);
    for (const a of answers.filter((x) => x.status === 403)) expect(a.body.error).toMatch(/^this enrolment code was used at /);
    const after = fleetAgentsAnswerSchema.parse((await call('GET', '/fleet/agents', { key: keys.ADMIN })).body).agents;
    expect(after.length - before.length).toBe(1);
    expect(after.filter((a) => a.facts.hostname.startsWith('racer-'))).toHaveLength(1);
  });

  it('names every bad field of the enrolment, and of the operator calls', async () => {
    const { secret } = await newCode();
    const bad = async (body: unknown) => {
      const res = await call('POST', '/fleet/enrol', { body });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      return res.body.error as string;
    };
    expect(await bad({ secret: 'short', facts: FACTS })).toContain('secret: must be the secret of an enrolment code');
    expect(await bad({ secret })).toContain('facts: ');
    expect(await bad({ secret, facts: { ...FACTS, hostname: '' } })).toContain('facts.hostname');
    expect(await bad({ secret, facts: { ...FACTS, version: 'latest' } })).toContain('facts.version: must be a version such as 1.4.2');
    expect(await bad({ secret, facts: { ...FACTS, arch: 'ARM 64' } })).toContain('facts.arch: must be a Debian architecture such as arm64');
    expect(await bad({ secret, facts: { ...FACTS, gpio_chips: '/dev/gpiochip0' } })).toContain('facts.gpio_chips');
    expect(await bad({ secret, facts: { ...FACTS, serial_devices: ['x'.repeat(257)] } })).toContain('facts.serial_devices[0]');
    expect(await bad({ secret, facts: { ...FACTS, node: 42 } })).toContain('facts.node');
    // None of them used the code.
    expect((await enrol(secret)).status).toBe(200);

    const { id } = await pendingBoard();
    const admin = async (url: string, body: unknown) => {
      const res = await call('POST', url, { key: keys.ADMIN, body });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      return res.body.error as string;
    };
    for (const hours of [0, 721, 'soon']) expect(await admin('/fleet/enrol-codes', { hours })).toMatch(/^hours: /);
    expect(await admin(`/fleet/agents/${id}/adopt`, { agent_id: 'front door!' })).toBe('agent_id: must be 1-64 letters, digits, "-" or "_"');
    expect(await admin(`/fleet/agents/${id}/refuse`, { reason: 'x'.repeat(501) })).toMatch(/^reason: /);
    expect(await admin('/fleet/agents/not-a-uuid/adopt', {})).toBe('enrolment_id: must be an enrolment id (a UUID)');
    expect((await call('GET', '/fleet/enrolments/not-a-uuid', { bearer: 'x' })).body).toEqual({ error: 'enrolment_id: must be an enrolment id (a UUID)' });
  });
});

describe('the challenge', () => {
  it("signs the board's nonce and server.publicUrl's origin with the identity key, for that purpose only, and keeps nothing", async () => {
    const nonce = randomBytes(32).toString('base64url');
    const res = await call('POST', '/fleet/enrol/challenge', { body: { nonce } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const answer = enrolChallengeAnswerSchema.parse(res.body);
    expect(answer.origin).toBe(PUBLIC_URL);
    const key = publicKeyFromRaw(answer.service_key)!;
    expect(fingerprint(key)).toBe(fingerprint(servicePublic));
    expect(fleetSignatureMatches(key, 'enrol-challenge', { nonce, origin: PUBLIC_URL }, answer.signature)).toBe(true);
    expect(fleetSignatureMatches(key, 'enrol-challenge', { nonce, origin: 'https://elsewhere.example.org' }, answer.signature)).toBe(false);
    expect(fleetSignatureMatches(key, 'enrol', { nonce, origin: PUBLIC_URL }, answer.signature)).toBe(false);
    // Asked again with the same nonce: answered the same way (no state), the signature still for that nonce only.
    expect((await call('POST', '/fleet/enrol/challenge', { body: { nonce } })).status).toBe(200);
  });

  it('names a nonce that is not 32 bytes of base64url', async () => {
    // Absent, not text, too short, padded base64, and 43 characters whose last one leaves bits over 32 bytes.
    for (const nonce of [undefined, 42, 'short', randomBytes(32).toString('base64'), `${'A'.repeat(42)}B`]) {
      const res = await call('POST', '/fleet/enrol/challenge', { body: nonce === undefined ? {} : { nonce } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toMatch(/^nonce: /);
    }
  });
});

describe('adoption', () => {
  it('lists a pending board with what it reported; the poll takes its own secret only', async () => {
    const { id, poll } = await pendingBoard();
    const listed = fleetAgentsAnswerSchema.parse((await call('GET', '/fleet/agents', { key: keys.ADMIN })).body).agents.find((a) => a.enrolment_id === id);
    expect(listed).toMatchObject({ state: 'pending', agent_id: null, facts: FACTS, delivered: false, enrolled_at: '2026-07-01T12:00:00.000Z' });
    expect((await call('GET', '/fleet/agents', { key: keys.REGULAR })).status).toBe(403);

    expect(await call('GET', `/fleet/enrolments/${id}`, { bearer: poll })).toEqual({ status: 200, body: { state: 'pending' } });
    expect((await call('GET', `/fleet/enrolments/${id}`)).status).toBe(401);
    const other = await pendingBoard();
    expect(await call('GET', `/fleet/enrolments/${id}`, { bearer: other.poll })).toEqual({
      status: 401,
      body: { error: `the poll secret is not enrolment ${id}'s` },
    });
    // An API key is no poll secret, whatever its rank.
    expect((await call('GET', `/fleet/enrolments/${id}`, { key: keys.ADMIN })).status).toBe(401);
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect(await call('GET', `/fleet/enrolments/${unknown}`, { bearer: poll })).toEqual({ status: 404, body: { error: `no enrolment ${unknown}` } });
  });

  it('refused: the board reads why; a decided enrolment is neither adopted nor refused again', async () => {
    const { id, poll } = await pendingBoard();
    expect((await call('POST', `/fleet/agents/${id}/refuse`, { key: keys.ADMIN, body: { reason: 'not one of ours' } })).status).toBe(200);
    expect(await call('GET', `/fleet/enrolments/${id}`, { bearer: poll })).toEqual({ status: 200, body: { state: 'refused', reason: 'not one of ours' } });
    expect((await call('POST', `/fleet/agents/${id}/adopt`, { key: keys.ADMIN, body: {} })).status).toBe(409);
    expect((await call('POST', `/fleet/agents/${id}/refuse`, { key: keys.ADMIN, body: {} })).status).toBe(409);
    expect((await call('POST', '/fleet/agents/00000000-0000-4000-8000-000000000000/refuse', { key: keys.ADMIN, body: {} })).status).toBe(404);
  });

  it('adopts under the host name made an agent id, made unique; a given id that is taken is 409', async () => {
    const first = await pendingBoard({ ...FACTS, hostname: 'hall door#2.example.org' });
    const second = await pendingBoard({ ...FACTS, hostname: 'hall door#2.example.org' });
    const adopt = (id: string, body: object = {}) => call('POST', `/fleet/agents/${id}/adopt`, { key: keys.ADMIN, body });
    expect((await adopt(first.id)).body.agent_id).toBe('hall-door-2');
    expect((await adopt(second.id)).body.agent_id).toBe('hall-door-2-2');
    const third = await pendingBoard();
    const taken = await adopt(third.id, { agent_id: 'hall-door-2' });
    expect(taken).toEqual({ status: 409, body: { error: `agent_id: hall-door-2 is the id of another agent (enrolment ${first.id}): choose another` } });
    expect((await adopt(first.id, { agent_id: 'other' })).status).toBe(409);
    expect((await call('POST', `/fleet/agents/${third.id}/adopt`, { key: keys.REGULAR, body: {} })).status).toBe(403);
  });

  it('hands the adopted board a signed grant with a DOOR key that reads but may not write; confirming ends the poll secret', async () => {
    const { id, poll } = await pendingBoard();
    expect((await call('POST', `/fleet/agents/${id}/adopt`, { key: keys.ADMIN, body: { agent_id: 'lobby' } })).status).toBe(200);

    const state = enrolmentStateSchema.parse((await call('GET', `/fleet/enrolments/${id}`, { bearer: poll })).body);
    if (state.state !== 'adopted') throw new Error(`not adopted: ${JSON.stringify(state)}`);
    const { grant, signature } = state;
    expect(grant).toMatchObject({ enrolment_id: id, agent_id: 'lobby', service_url: PUBLIC_URL, mqtt: null, release_key: rawPublicKey(release.publicKey) });
    expect(fleetSignatureMatches(servicePublic, 'grant', grant, signature)).toBe(true);
    expect(fleetSignatureMatches(servicePublic, 'grant', { ...grant, agent_id: 'other' }, signature)).toBe(false);

    // The key reads as a door's does, and writes nothing but its own confirmation.
    expect((await call('GET', '/directory', { key: grant.api_key })).status).toBe(200);
    const post = await call('POST', '/fleet/enrol-codes', { key: grant.api_key });
    expect(post).toEqual({ status: 403, body: { error: 'a DOOR key only reads (GET): POST needs an ADMIN key' } });
    expect((await call('POST', '/lockdown', { key: grant.api_key, body: { active: true } })).status).toBe(403);
    expect(await new FleetAgents(db).agentOfKeyDigest(keyDigest(grant.api_key))).toBe('lobby');

    // Asked again (a lost answer): a fresh key, the one before revoked.
    const again = enrolmentStateSchema.parse((await call('GET', `/fleet/enrolments/${id}`, { bearer: poll })).body);
    if (again.state !== 'adopted') throw new Error('not adopted');
    expect(again.grant.api_key).not.toBe(grant.api_key);
    expect((await call('GET', '/directory', { key: grant.api_key })).status).toBe(401);
    expect(await new FleetAgents(db).agentOfKeyDigest(keyDigest(grant.api_key))).toBeNull();

    // Confirmed only with the key granted: not another DOOR key, not the revoked one.
    for (const key of [keys.DOOR, grant.api_key]) expect((await call('POST', `/fleet/enrolments/${id}/confirm`, { key })).status).not.toBe(200);
    expect((await call('POST', `/fleet/enrolments/${id}/confirm`, { key: keys.ADMIN })).status).toBe(403);
    expect((await call('POST', `/fleet/enrolments/${id}/confirm`, { key: again.grant.api_key })).status).toBe(200);
    expect(await call('GET', `/fleet/enrolments/${id}`, { bearer: poll })).toEqual({
      status: 410,
      body: { error: `enrolment ${id} was delivered and confirmed: its poll secret is no longer good` },
    });
    // Its key stays good; the console sees the agent delivered.
    expect((await call('GET', '/directory', { key: again.grant.api_key })).status).toBe(200);
    const listed = fleetAgentsAnswerSchema.parse((await call('GET', '/fleet/agents', { key: keys.ADMIN })).body).agents.find((a) => a.enrolment_id === id);
    expect(listed).toMatchObject({ state: 'adopted', agent_id: 'lobby', delivered: true, decided_by: 'API key (ADMIN)' });
  });
});

describe('a service without server.fleet', () => {
  it('answers every /fleet route 404 with the reason (after the key check)', async () => {
    const reason = { error: 'this service has no server.fleet section: enrolment and the fleet are off here (docs/fleet.md)' };
    expect(await call('POST', '/fleet/enrol', { on: bare, body: { secret: 'a'.repeat(32), facts: FACTS } })).toEqual({ status: 404, body: reason });
    const nonce = randomBytes(32).toString('base64url');
    expect(await call('POST', '/fleet/enrol/challenge', { on: bare, body: { nonce } })).toEqual({ status: 404, body: reason });
    expect(await call('GET', '/fleet/enrolments/00000000-0000-4000-8000-000000000000', { on: bare, bearer: 'x' })).toEqual({ status: 404, body: reason });
    const admin = await new ApiKeys(bareDb).create('ADMIN', 0, time.wallNow());
    expect(await call('POST', '/fleet/enrol-codes', { on: bare, key: admin })).toEqual({ status: 404, body: reason });
    expect(await call('GET', '/fleet/agents', { on: bare, key: admin })).toEqual({ status: 404, body: reason });
    expect((await call('GET', '/fleet/agents', { on: bare })).status).toBe(401);
  });

  it('lists the fleet routes in GET /openapi.json, with their path parameters', async () => {
    const doc = (await call('GET', '/openapi.json')).body as { paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string }> }>> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/fleet/enrol',
        '/fleet/enrol/challenge',
        '/fleet/enrolments/{enrolment_id}',
        '/fleet/enrolments/{enrolment_id}/confirm',
        '/fleet/enrol-codes',
        '/fleet/agents',
      ]),
    );
    expect(doc.paths['/fleet/agents/{enrolment_id}/adopt']!.post!.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'enrolment_id', in: 'path' })]),
    );
  });
});
