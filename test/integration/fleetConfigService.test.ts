import { createHash, createPublicKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetExchangeSchema } from '../../src/api/fleet.js';
import { agentConfigAnswerSchema, configStoredSchema, configVersionAnswerSchema } from '../../src/api/fleetConfig.js';
import { documentProblems } from '../../src/config/fleetDocument.js';
import { fingerprint, fleetSignatureMatches, rawPublicKey } from '../../src/protocol/fleetSigning.js';
import { ApiKeys, keyDigest } from '../../src/service/apiKeys.js';
import type { FleetDeps } from '../../src/service/fleet/fleetDeps.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { tempDir } from '../support/cli.js';
import { ManualTime } from '../support/manualTime.js';
import { testService } from '../support/serviceApp.js';
import { newServiceDb } from '../support/serviceDb.js';
import { fleetDocument } from '../support/fleetDocument.js';

// Each agent's configuration kept at the service (docs/fleet.md, "Configuration from the service"; issue 54 item
// 2), on both engines: versions and restore, a document that fails the board's check refused with its problems,
// the exchange only to the agent's own DOOR key and signed, its report stored and shown, bad bodies refused naming
// the field. The board's side, end to end: fleetConfigDaemon.test.ts.

const tmp = tempDir('door-agent-fleet-config-');
const PUBLIC_URL = 'https://access.example.org';
const identity = generateKeyPairSync('ed25519');
const servicePublic = createPublicKey(identity.privateKey);
const time = new ManualTime({ wall: Date.parse('2026-07-01T12:00:00Z') });

let db: SqlDb;
let app: ReturnType<typeof testService>;
const keys = { ADMIN: '', REGULAR: '', DOOR: '', lobby: '', garage: '' };

const document = fleetDocument;

/** An adopted agent as enrolment leaves it: its fleet_agents row and its own DOOR key. */
async function adoptedAgent(agentId: string): Promise<string> {
  const key = await new ApiKeys(db).create('DOOR', 0, time.wallNow());
  const keyId = await db.value<number>('SELECT key_id FROM api_keys WHERE key_hash = ?', [keyDigest(key)]);
  await db.run(
    "INSERT INTO fleet_agents (enrolment_id, agent_id, state, facts, enrolled_at, decided_at, decided_by, key_id) VALUES (?, ?, 'adopted', '{}', ?, ?, 'test', ?)",
    [randomUUID(), agentId, time.wallNow(), time.wallNow(), Number(keyId)],
  );
  return key;
}

beforeAll(async () => {
  ({ db } = await newServiceDb(tmp.path, 'fleetconfig'));
  const apiKeys = new ApiKeys(db);
  for (const rank of ['ADMIN', 'REGULAR', 'DOOR'] as const) keys[rank] = await apiKeys.create(rank, 0, time.wallNow());
  keys.lobby = await adoptedAgent('lobby');
  keys.garage = await adoptedAgent('garage');
  const fleet: FleetDeps = {
    keys: { identity: identity.privateKey, publicRaw: rawPublicKey(servicePublic), fingerprint: fingerprint(servicePublic), releaseRaw: null },
    enrolCodeHours: 24,
    publicUrl: PUBLIC_URL,
    agentMqtt: null,
    checkConfig: (text, agentId) => documentProblems(text, agentId, PUBLIC_URL),
  };
  app = testService(db, { clock: time, fleet });
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  await db?.close();
  tmp.cleanup();
});

type Answer = { status: number; body: Record<string, unknown> };

async function call(method: 'GET' | 'POST' | 'PUT', url: string, key: string, body?: unknown): Promise<Answer> {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, ...(body === undefined ? {} : { payload: body as object }) });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe("an agent's configuration versions", () => {
  it('are stored 1, 2, ... by an ADMIN key, listed newest first, read one by one, and restored as a new version', async () => {
    const first = await call('PUT', '/fleet/agents/lobby/config', keys.ADMIN, { document: document(5), note: 'first' });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(configStoredSchema.parse(first.body)).toMatchObject({ agent_id: 'lobby', version: 1, note: 'first', sha256: sha256(document(5)) });
    time.advance(60_000);
    expect((await call('PUT', '/fleet/agents/lobby/config', keys.ADMIN, { document: document(8) })).body).toMatchObject({ version: 2 });

    const listed = agentConfigAnswerSchema.parse((await call('GET', '/fleet/agents/lobby/config', keys.ADMIN)).body);
    expect(listed.current).toMatchObject({ version: 2, document: document(8) });
    expect(listed.versions.map((v) => [v.version, v.note, v.created_by])).toEqual([
      [2, '', 'API key (ADMIN)'],
      [1, 'first', 'API key (ADMIN)'],
    ]);
    expect(listed.reported).toBeNull();
    expect(configVersionAnswerSchema.parse((await call('GET', '/fleet/agents/lobby/config/1', keys.ADMIN)).body).document).toBe(document(5));

    const restored = await call('POST', '/fleet/agents/lobby/config/restore', keys.ADMIN, { version: 1 });
    expect(restored.status, JSON.stringify(restored.body)).toBe(200);
    expect(restored.body).toMatchObject({ version: 3, note: 'restored from version 1', sha256: sha256(document(5)) });
    expect((await call('GET', '/fleet/agents/lobby/config/3', keys.ADMIN)).body).toMatchObject({ document: document(5) });
  });

  it('refuse a document that fails the check the board runs, with its problems worded as config check words them; nothing is stored', async () => {
    const before = agentConfigAnswerSchema.parse((await call('GET', '/fleet/agents/garage/config', keys.ADMIN)).body).versions.length;
    const bad = document(5, '    relockOnClose: maybe\n').replace('pin: 17', 'pin: 99');
    const res = await call('PUT', '/fleet/agents/garage/config', keys.ADMIN, { document: bad });
    expect(res.status).toBe(400);
    const error = String(res.body.error);
    expect(error).toContain('document: the configuration fails its check, nothing was stored');
    for (const problem of documentProblems(bad, 'garage', PUBLIC_URL)) expect(error).toContain(problem);
    expect(error).toMatch(/doors\[0\]\.relay\.pin: /);
    expect(error).toMatch(/doors\[0\]\.relockOnClose: /);
    const yaml = await call('PUT', '/fleet/agents/garage/config', keys.ADMIN, { document: 'doors: [' });
    expect(yaml.status).toBe(400);
    expect(String(yaml.body.error)).toMatch(/line 1, column \d+: /);
    expect(agentConfigAnswerSchema.parse((await call('GET', '/fleet/agents/garage/config', keys.ADMIN)).body).versions).toHaveLength(before);
  });

  it('are refused to keys below ADMIN, for an agent not adopted, and with bad parameters named', async () => {
    for (const key of [keys.REGULAR, keys.DOOR, keys.lobby]) {
      const res = await call('PUT', '/fleet/agents/lobby/config', key, { document: document(5) });
      expect(res.status, JSON.stringify(res.body)).toBe(403);
    }
    expect((await call('GET', '/fleet/agents/lobby/config', keys.REGULAR)).status).toBe(403);
    const unknown = await call('GET', '/fleet/agents/cellar/config', keys.ADMIN);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toContain('no adopted agent cellar');
    expect((await call('GET', '/fleet/agents/lobby/config/99', keys.ADMIN)).status).toBe(404);
    expect((await call('POST', '/fleet/agents/lobby/config/restore', keys.ADMIN, { version: 99 })).status).toBe(404);
    const badVersion = await call('GET', '/fleet/agents/lobby/config/zero', keys.ADMIN);
    expect(badVersion.status).toBe(400);
    expect(badVersion.body.error).toMatch(/^version: /);
    const badId = await call('GET', '/fleet/agents/no%20such/config', keys.ADMIN);
    expect(badId.status).toBe(400);
    expect(badId.body.error).toMatch(/^agent_id: /);
    const noDocument = await call('PUT', '/fleet/agents/lobby/config', keys.ADMIN, { note: 'x' });
    expect(noDocument.status).toBe(400);
    expect(noDocument.body.error).toMatch(/^document: /);
    const badRestore = await call('POST', '/fleet/agents/lobby/config/restore', keys.ADMIN, { version: 'first' });
    expect(badRestore.status).toBe(400);
    expect(badRestore.body.error).toMatch(/^version: /);
  });
});

describe('GET /fleet/self', () => {
  it("gives an agent's own DOOR key its newest version, signed by the identity key; null once it holds that one", async () => {
    const res = await call('GET', '/fleet/self?config=1', keys.lobby);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const exchange = fleetExchangeSchema.parse(res.body);
    expect(exchange).toMatchObject({ agent_id: 'lobby', update: null, tasks: [] });
    const config = exchange.config!;
    expect(config).toMatchObject({ agent_id: 'lobby', version: 3, document: document(5), sha256: sha256(document(5)) });
    const { signature, ...signed } = config;
    expect(fleetSignatureMatches(servicePublic, 'config', signed, signature)).toBe(true);
    // Made for one purpose, good for no other; and for this agent only.
    expect(fleetSignatureMatches(servicePublic, 'grant', signed, signature)).toBe(false);
    expect(fleetSignatureMatches(servicePublic, 'config', { ...signed, agent_id: 'garage' }, signature)).toBe(false);

    expect(fleetExchangeSchema.parse((await call('GET', '/fleet/self?config=3', keys.lobby)).body).config).toBeNull();
    expect(fleetExchangeSchema.parse((await call('GET', '/fleet/self', keys.lobby)).body).config?.version).toBe(3);
  });

  it("gives another agent's key that agent's own, and refuses a person's key or a door key outside the fleet, saying whose call it is", async () => {
    const garage = fleetExchangeSchema.parse((await call('GET', '/fleet/self?config=0', keys.garage)).body);
    expect(garage).toMatchObject({ agent_id: 'garage', config: null });
    const admin = await call('GET', '/fleet/self', keys.ADMIN);
    expect(admin.status).toBe(403);
    expect(admin.body.error).toBe("GET /fleet/self is an agent's own call: it takes the DOOR key the agent was given at adoption, not a key of rank ADMIN");
    const handMade = await call('GET', '/fleet/self', keys.DOOR);
    expect(handMade.status).toBe(403);
    expect(handMade.body.error).toContain("this DOOR key is not an adopted agent's own");
    const bad = await call('GET', '/fleet/self?config=-1', keys.lobby);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/^config: /);
  });
});

describe('POST /fleet/self/report', () => {
  it("stores the agent's report, each part over the one stored, shown by the ADMIN GET", async () => {
    const refused = { version: 4, problems: ['doors[0].relay.pin: must be at most 63'] };
    const res = await call('POST', '/fleet/self/report', keys.lobby, { version: '0.1.0', config: { applied: 3, refused, how: 'live' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.success).toBe('report of lobby stored');
    time.advance(1000);
    // Another part alone: the configuration part is kept.
    expect((await call('POST', '/fleet/self/report', keys.lobby, { version: '0.1.1' })).status).toBe(200);
    const listed = agentConfigAnswerSchema.parse((await call('GET', '/fleet/agents/lobby/config', keys.ADMIN)).body);
    expect(listed.reported).toEqual({ at: new Date(time.wallNow()).toISOString(), version: '0.1.1', config: { applied: 3, refused, how: 'live' } });
    // The other agent's report is its own.
    expect(agentConfigAnswerSchema.parse((await call('GET', '/fleet/agents/garage/config', keys.ADMIN)).body).reported).toBeNull();
  });

  it("refuses a bad body naming the field, and any key but an adopted agent's own", async () => {
    const badHow = await call('POST', '/fleet/self/report', keys.lobby, { version: '0.1.0', config: { applied: 3, refused: null, how: 'sometimes' } });
    expect(badHow.status).toBe(400);
    expect(badHow.body.error).toMatch(/^config\.how: /);
    const noVersion = await call('POST', '/fleet/self/report', keys.lobby, { config: { applied: 3, refused: null, how: null } });
    expect(noVersion.status).toBe(400);
    expect(noVersion.body.error).toMatch(/^version: /);
    const badProblems = await call('POST', '/fleet/self/report', keys.lobby, {
      version: '0.1.0',
      config: { applied: null, refused: { version: 0, problems: 'x' }, how: null },
    });
    expect(badProblems.status).toBe(400);
    expect(badProblems.body.error).toMatch(/config\.refused\.version: .*config\.refused\.problems: /);
    expect((await call('POST', '/fleet/self/report', keys.ADMIN, { version: '0.1.0' })).status).toBe(403);
    expect((await call('POST', '/fleet/self/report', keys.DOOR, { version: '0.1.0' })).status).toBe(403);
  });
});
