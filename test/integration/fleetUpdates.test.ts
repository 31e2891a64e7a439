import { createHash, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enrolAnswerSchema,
  enrolCodeAnswerSchema,
  enrolmentStateSchema,
  fleetExchangeSchema,
  parseEnrolCode,
  type BoardFacts,
  type ReleaseManifest,
} from '../../src/api/fleet.js';
import { fleetTaskSchema, releasesAnswerSchema, rolloutAnswerSchema, rolloutsAnswerSchema } from '../../src/api/fleetUpdates.js';
import { fingerprint, rawPublicKey, signFleet } from '../../src/protocol/fleetSigning.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { AgentConfigs } from '../../src/service/fleet/agentConfigs.js';
import type { FleetDeps } from '../../src/service/fleet/fleetDeps.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { fleetDocument } from '../support/fleetDocument.js';
import { ManualTime } from '../support/manualTime.js';
import { testService } from '../support/serviceApp.js';
import { newServiceDb, type TestDbLocation } from '../support/serviceDb.js';

// Signed updates and reader firmware at the service (issue 54 items 3 and 4; docs/fleet.md, "Signed updates" and
// "Reader firmware"), on both engines, over real HTTP as an operator and the agents call it: bundles stored only
// when the release key signed them (a wrong key, a flipped byte, a cut upload, a duplicate: nothing stored), a
// rollout offered stage by stage as the agents report, stopped at the first failure or by the operator, two
// reports at once moving it exactly one stage, and reader firmware tasks handed out and recorded. The agents are
// enrolled and adopted through the fleet's own routes. The board's side: test/unit/updateBundle.test.ts,
// test/unit/fleetBoardUpdates.test.ts, and `update apply` refusing a request or a signature that is not one here;
// the real install, switch and rollback: test/integration/install.test.ts.

const tmp = tempDir('door-agent-fleet-updates-');
const PUBLIC_URL = 'https://access.example.org';
const identity = generateKeyPairSync('ed25519');
const release = generateKeyPairSync('ed25519');
const stranger = generateKeyPairSync('ed25519');
const servicePublic = createPublicKey(identity.privateKey);
const time = new ManualTime({ wall: Date.parse('2026-07-01T12:00:00Z') });
/** Small, so that the bound is met in a test; a bundle here spans several 1 MiB chunks. */
const MAX_BUNDLE = 4 << 20;

let db: SqlDb;
let location: TestDbLocation;
let app: ReturnType<typeof testService>;
let noKeyApp: ReturnType<typeof testService>;
let base: string;
let port: number;
let admin: string;
let regular: string;
/** Each adopted agent's own DOOR key. */
const agentKeys: Record<string, string> = {};

const fleetDeps = (releaseRaw: string | null): FleetDeps => ({
  keys: { identity: identity.privateKey, publicRaw: rawPublicKey(servicePublic), fingerprint: fingerprint(servicePublic), releaseRaw },
  enrolCodeHours: 24,
  maxBundleBytes: MAX_BUNDLE,
  publicUrl: PUBLIC_URL,
  agentMqtt: null,
});

type Answer = { status: number; body: Record<string, unknown> };

async function call(method: string, path: string, key: string | undefined, body?: unknown): Promise<Answer> {
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** A board enrolled with a code and adopted as `agentId` through the fleet's routes; its own DOOR key. */
async function adopt(agentId: string, arch: string): Promise<void> {
  const made = await call('POST', '/fleet/enrol-codes', admin, {});
  const { secret } = parseEnrolCode(enrolCodeAnswerSchema.parse(made.body).code)!;
  const facts: BoardFacts = { hostname: `${agentId}.local`, version: '1.0.0', arch, node: 'v20.19.0', gpio_chips: ['/dev/gpiochip0'], serial_devices: [] };
  const enrolled = enrolAnswerSchema.parse((await call('POST', '/fleet/enrol', undefined, { secret, facts })).body);
  const id = enrolled.accepted.enrolment_id;
  expect((await call('POST', `/fleet/agents/${id}/adopt`, admin, { agent_id: agentId })).status).toBe(200);
  const state = enrolmentStateSchema.parse((await call('GET', `/fleet/enrolments/${id}`, enrolled.accepted.poll_secret)).body);
  if (state.state !== 'adopted') throw new Error(`${agentId} not adopted`);
  expect((await call('POST', `/fleet/enrolments/${id}/confirm`, state.grant.api_key)).status).toBe(200);
  agentKeys[agentId] = state.grant.api_key;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const manifestOf = (version: string, arch: string, bytes: Buffer): ReleaseManifest => ({ version, arch, sha256: sha256(bytes), size: bytes.length });
const signatureOf = (manifest: ReleaseManifest, key: KeyObject = release.privateKey) => signFleet(key, 'release', manifest);

async function upload(
  version: string,
  arch: string,
  bytes: Buffer,
  signature: string | undefined,
  options: { key?: string; on?: string; unescaped?: boolean } = {},
): Promise<Answer> {
  // Unescaped, as `?signature=$(jq -r .signature BUNDLE.sig.json)` in a shell sends it: a "+" reads as a space.
  const query = signature === undefined ? '' : `?signature=${options.unescaped ? signature : encodeURIComponent(signature)}`;
  const res = await fetch(`${options.on ?? base}/fleet/releases/${version}/${arch}${query}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${options.key ?? admin}`, 'content-type': 'application/octet-stream' },
    body: bytes,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A release stored, signed by the release key: random bytes stand for the bundle (the service never looks inside). */
async function stored(version: string, arch: string, size = 4096): Promise<Buffer> {
  const bytes = randomBytes(size);
  const res = await upload(version, arch, bytes, signatureOf(manifestOf(version, arch, bytes)));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return bytes;
}

async function rows(): Promise<{ releases: number; chunks: number }> {
  return {
    releases: Number(await db.value('SELECT count(*) FROM fleet_releases')),
    chunks: Number(await db.value('SELECT count(*) FROM fleet_release_chunks')),
  };
}

async function download(path: string, key: string): Promise<{ status: number; bytes: Buffer; length: string | null }> {
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()), length: res.headers.get('content-length') };
}

/** An agent's exchange, as it polls GET /fleet/self. */
async function exchange(agentId: string) {
  const res = await call('GET', '/fleet/self', agentKeys[agentId]);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return fleetExchangeSchema.parse(res.body);
}

/** An agent's report of its update. */
async function report(agentId: string, rolloutId: number, state: string, detail = '', version = '1.0.0'): Promise<void> {
  const res = await call('POST', '/fleet/self/report', agentKeys[agentId], { version, update: { rollout_id: rolloutId, state, detail } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function rollout(id: number) {
  const res = await call('GET', `/fleet/rollouts/${id}`, admin);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return rolloutAnswerSchema.parse(res.body);
}

async function startRollout(body: Record<string, unknown>) {
  const res = await call('POST', '/fleet/rollouts', admin, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return rolloutAnswerSchema.parse(res.body);
}

/** Which agents are offered an update at their exchange now. */
async function offered(): Promise<string[]> {
  const ids: string[] = [];
  for (const id of Object.keys(agentKeys).sort()) if ((await exchange(id)).update !== null) ids.push(id);
  return ids;
}

beforeAll(async () => {
  ({ db, location } = await newServiceDb(join(tmp.path, 'data'), 'service'));
  const apiKeys = new ApiKeys(db);
  admin = await apiKeys.create('ADMIN', 0, time.wallNow());
  regular = await apiKeys.create('REGULAR', 0, time.wallNow());
  app = testService(db, { clock: time, fleet: fleetDeps(rawPublicKey(release.publicKey)) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as { port: number }).port;
  base = `http://127.0.0.1:${port}`;
  noKeyApp = testService(db, { clock: time, fleet: fleetDeps(null) });
  await noKeyApp.listen({ host: '127.0.0.1', port: 0 });
  // Six boards: five arm64 and one armhf.
  for (const id of ['door-01', 'door-02', 'door-03', 'door-04', 'door-05']) await adopt(id, 'arm64');
  await adopt('gate-01', 'armhf');
});

afterAll(async () => {
  await app?.close();
  await noKeyApp?.close();
  await db?.close();
  tmp.cleanup();
});

describe('release bundles', () => {
  it('stores a bundle the release key signed and streams it back byte for byte, in its chunks', async () => {
    // Three chunks; a signature with a "+", sent unescaped as a shell would.
    let bytes = randomBytes((2 << 20) + 12_345);
    while (!signatureOf(manifestOf('1.5.0', 'arm64', bytes)).includes('+')) bytes = randomBytes(bytes.length);
    const manifest = manifestOf('1.5.0', 'arm64', bytes);
    const res = await upload('1.5.0', 'arm64', bytes, signatureOf(manifest), { unescaped: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.release).toMatchObject({ ...manifest, bundle_path: '/fleet/releases/1.5.0_arm64/bundle', uploaded_by: 'API key (ADMIN)' });
    expect(Number(await db.value("SELECT count(*) FROM fleet_release_chunks WHERE version = '1.5.0'"))).toBe(3);

    const listed = releasesAnswerSchema.parse((await call('GET', '/fleet/releases', admin)).body).releases;
    expect(listed.find((r) => r.version === '1.5.0')).toMatchObject({ ...manifest, signature: signatureOf(manifest), uploaded_at: '2026-07-01T12:00:00.000Z' });
    const back = await download('/fleet/releases/1.5.0_arm64/bundle', admin);
    expect(back.status).toBe(200);
    expect(back.length).toBe(String(bytes.length));
    expect(back.bytes.equals(bytes)).toBe(true);

    // Not to a REGULAR key, nor to an agent no rollout offers it to.
    expect((await download('/fleet/releases/1.5.0_arm64/bundle', regular)).status).toBe(403);
    expect((await call('GET', '/fleet/releases/1.5.0_arm64/bundle', agentKeys['door-01'])).body).toEqual({
      error: 'release 1.5.0 for arm64 is not meant for agent door-01 now',
    });
    expect((await call('GET', '/fleet/releases', regular)).status).toBe(403);
    expect((await call('GET', '/fleet/releases/9.9.9_arm64/bundle', admin)).status).toBe(404);
    expect((await call('GET', '/fleet/releases/latest/bundle', admin)).body.error).toMatch(/^version_arch: /);
  });

  it('refuses a wrong key, a flipped byte, no signature, a duplicate and an oversized bundle, storing nothing', async () => {
    const bytes = randomBytes(300_000);
    const manifest = manifestOf('1.6.0', 'arm64', bytes);
    const before = await rows();

    const wrongKey = await upload('1.6.0', 'arm64', bytes, signatureOf(manifest, stranger.privateKey));
    expect(wrongKey.status).toBe(400);
    expect(wrongKey.body.error).toMatch(
      /^signature: not the release key's signature of this bundle \(version 1\.6\.0, arm64, 300000 bytes, SHA-256 [0-9a-f]{64}\)/,
    );
    const flipped = Buffer.from(bytes);
    flipped[123_456]! ^= 0x01;
    expect((await upload('1.6.0', 'arm64', flipped, signatureOf(manifest))).body.error).toMatch(/^signature: not the release key's signature/);
    // Signed for another architecture or version: not good for this one.
    expect((await upload('1.6.0', 'armhf', bytes, signatureOf(manifest))).status).toBe(400);
    expect((await upload('1.6.0', 'arm64', bytes, undefined)).body).toEqual({
      error:
        "signature: a bundle needs the release key's signature (the `signature` of BUNDLE.sig.json, door-agent release sign): an unsigned bundle is refused",
    });
    expect((await upload('1.6.0', 'arm64', bytes, 'c2lnbmF0dXJl')).body.error).toBe('signature: the signature must be 64 bytes');
    expect((await upload('1.6.0', 'arm64', bytes, signatureOf(manifest), { key: regular })).status).toBe(403);
    const big = randomBytes(MAX_BUNDLE + 1);
    expect(await upload('1.6.0', 'arm64', big, signatureOf(manifestOf('1.6.0', 'arm64', big)))).toEqual({
      status: 413,
      body: { error: `the bundle is ${MAX_BUNDLE + 1} bytes, over server.fleet.maxBundleMegabytes (4 MiB): nothing was stored` },
    });
    expect(await rows()).toEqual(before);

    expect((await upload('1.6.0', 'arm64', bytes, signatureOf(manifest))).status).toBe(200);
    const after = await rows();
    const again = await upload('1.6.0', 'arm64', randomBytes(10), signatureOf(manifest));
    expect(again).toEqual({ status: 409, body: { error: 'release 1.6.0 for arm64 is stored already: a release is never replaced (upload a new version)' } });
    expect(await rows()).toEqual(after);
    expect((await download('/fleet/releases/1.6.0_arm64/bundle', admin)).bytes.equals(bytes)).toBe(true);
  });

  it('refuses an upload cut short (fewer bytes than its Content-Length), storing nothing', async () => {
    const bytes = randomBytes(1_500_000);
    const manifest = manifestOf('1.7.0', 'arm64', bytes);
    const before = await rows();
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(
          `PUT /fleet/releases/1.7.0/arm64?signature=${encodeURIComponent(signatureOf(manifest))} HTTP/1.1\r\nHost: localhost\r\n` +
            `Authorization: Bearer ${admin}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${bytes.length}\r\n\r\n`,
        );
        // The connection ends (the sender's side) a megabyte in.
        socket.end(bytes.subarray(0, 1_000_000));
      });
      let text = '';
      socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('the request ended before its body did');
    expect(await rows()).toEqual(before);
    // The same bundle whole is taken.
    expect((await upload('1.7.0', 'arm64', bytes, signatureOf(manifest))).status).toBe(200);
  });

  it('refuses every bundle when the service has no release public key', async () => {
    const bytes = randomBytes(100);
    const res = await upload('1.8.0', 'arm64', bytes, signatureOf(manifestOf('1.8.0', 'arm64', bytes)), {
      on: `http://127.0.0.1:${(noKeyApp.server.address() as { port: number }).port}`,
    });
    expect(res).toEqual({ status: 409, body: { error: 'this service has no server.fleet.releasePublicKeyFile: it cannot check a bundle' } });
  });

  it('door-agent service release add stores a signed bundle on the service machine through the same checks', async () => {
    const config = join(tmp.path, 'config.yaml');
    const releasePub = join(tmp.path, 'release.pub');
    const identityKey = join(tmp.path, 'identity.key');
    writeFileSync(releasePub, release.publicKey.export({ format: 'pem', type: 'spki' }));
    writeFileSync(identityKey, identity.privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
    writeFileSync(
      config,
      `server:
  listen: 127.0.0.1:0
  publicUrl: ${PUBLIC_URL}
  dataDir: ${join(tmp.path, 'data')}
${location.engine === 'postgres' ? `  database: { url: "${location.url}", passwordFile: ${location.passwordFile} }\n` : ''}  resources:
    - { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door }
  fleet: { identityKeyFile: ${identityKey}, releasePublicKeyFile: ${releasePub} }
`,
    );
    const bytes = randomBytes(1_200_000);
    const bundle = join(tmp.path, 'door-agent-1.9.0-armhf.tar.gz');
    writeFileSync(bundle, bytes);
    const manifest = manifestOf('1.9.0', 'armhf', bytes);
    const before = await rows();

    // Signed by another key: refused, nothing stored.
    writeFileSync(`${bundle}.sig.json`, JSON.stringify({ manifest, signature: signatureOf(manifest, stranger.privateKey) }));
    const wrong = runCli(['service', 'release', 'add', bundle, '--config', config]);
    expect(wrong.status, wrong.stderr).toBe(1);
    expect(wrong.stderr).toMatch(/^door-agent: refused: the signature of .* does not verify with the release key/);
    expect(await rows()).toEqual(before);

    writeFileSync(`${bundle}.sig.json`, JSON.stringify({ manifest, signature: signatureOf(manifest) }));
    const added = runCli(['service', 'release', 'add', bundle, '--config', config]);
    expect(added.status, added.stderr).toBe(0);
    expect(added.stdout).toBe(`stored release 1.9.0 for armhf (1200000 bytes, SHA-256 ${manifest.sha256}): a rollout may offer it now\n`);
    expect((await download('/fleet/releases/1.9.0_armhf/bundle', admin)).bytes.equals(bytes)).toBe(true);
    const again = runCli(['service', 'release', 'add', bundle, '--config', config]);
    expect(again.status).toBe(1);
    expect(again.stderr).toBe('door-agent: refused: release 1.9.0 for armhf is stored already: a release is never replaced (upload a new version)\n');
  });
});

describe('rollouts', () => {
  it('offers the canary first, then the share once it is healthy, then all; the agents fetch their bundle with their own key', async () => {
    const arm64 = await stored('2.0.0', 'arm64');
    const armhf = await stored('2.0.0', 'armhf');
    const made = await startRollout({ version: '2.0.0', canary: 'door-03' });
    expect(made).toMatchObject({
      stage: 'canary',
      canary: 'door-03',
      share_percent: 25,
      allow_downgrade: false,
      health_bound_seconds: 180,
      stopped_reason: null,
    });
    // Five others, 25 % of them rounded up: the first two by id.
    expect(made.agents.map((a) => `${a.stage}:${a.agent_id}:${a.state}`)).toEqual([
      'canary:door-03:waiting',
      'share:door-01:waiting',
      'share:door-02:waiting',
      'all:door-04:waiting',
      'all:door-05:waiting',
      'all:gate-01:waiting',
    ]);
    const id = made.rollout_id;

    expect(await offered()).toEqual(['door-03']);
    const offer = (await exchange('door-03')).update!;
    expect(offer).toEqual({
      rollout_id: id,
      manifest: manifestOf('2.0.0', 'arm64', arm64),
      signature: signatureOf(manifestOf('2.0.0', 'arm64', arm64)),
      bundle_path: '/fleet/releases/2.0.0_arm64/bundle',
      allow_downgrade: false,
      health_bound_seconds: 180,
    });
    expect((await rollout(id)).agents.find((a) => a.agent_id === 'door-03')!.state).toBe('offered');
    expect((await download(offer.bundle_path, agentKeys['door-03']!)).bytes.equals(arm64)).toBe(true);
    expect((await download(offer.bundle_path, agentKeys['door-01']!)).status).toBe(403);

    await report('door-03', id, 'downloading');
    await report('door-03', id, 'installing', 'switching to 2.0.0');
    expect(await offered()).toEqual(['door-03']);
    await report('door-03', id, 'healthy', 'every door driven, readers open, sync and broker reached', '2.0.0');
    expect((await rollout(id)).stage).toBe('share');
    expect(await offered()).toEqual(['door-01', 'door-02']);

    await report('door-01', id, 'healthy', '', '2.0.0');
    expect((await rollout(id)).stage).toBe('share');
    await report('door-02', id, 'healthy', '', '2.0.0');
    expect((await rollout(id)).stage).toBe('all');
    expect(await offered()).toEqual(['door-04', 'door-05', 'gate-01']);
    const gate = (await exchange('gate-01')).update!;
    expect(gate.manifest).toEqual(manifestOf('2.0.0', 'armhf', armhf));
    expect((await download(gate.bundle_path, agentKeys['gate-01']!)).bytes.equals(armhf)).toBe(true);
    for (const agent of ['door-04', 'door-05', 'gate-01']) await report(agent, id, 'healthy', '', '2.0.0');
    const done = await rollout(id);
    expect(done.stage).toBe('done');
    expect(done.agents.every((a) => a.state === 'healthy')).toBe(true);
    expect(await offered()).toEqual([]);
    // Over: the agents' keys no longer fetch it.
    expect((await download(offer.bundle_path, agentKeys['door-03']!)).status).toBe(403);
  });

  it('stops at the first agent that rolled back: nothing more is offered, the reason names it', async () => {
    await stored('3.0.0', 'arm64');
    await stored('3.0.0', 'armhf');
    const { rollout_id: id } = await startRollout({ version: '3.0.0', canary: 'door-01', share_percent: 40, health_bound_seconds: 60, allow_downgrade: false });
    await exchange('door-01');
    await report('door-01', id, 'healthy', '', '3.0.0');
    // 40 % of five: door-02 and door-03.
    expect(await offered()).toEqual(['door-02', 'door-03']);
    await report('door-02', id, 'rolled_back', 'not healthy within 60 s: the relay of Front door was not driven');
    const stopped = await rollout(id);
    expect(stopped.stage).toBe('stopped');
    expect(stopped.stopped_reason).toBe('door-02 reported rolled back: not healthy within 60 s: the relay of Front door was not driven');
    expect(await offered()).toEqual([]);
    // door-03 finishing its update is recorded, and moves nothing.
    await report('door-03', id, 'healthy', '', '3.0.0');
    const after = await rollout(id);
    expect(after.stage).toBe('stopped');
    expect(after.agents.filter((a) => a.stage === 'all').every((a) => a.state === 'waiting')).toBe(true);
    expect(rolloutsAnswerSchema.parse((await call('GET', '/fleet/rollouts', admin)).body).rollouts[0]).toMatchObject({ rollout_id: id, stage: 'stopped' });
  });

  it('one at a time; stopped by the operator; refused for an agent not adopted or an architecture without a bundle', async () => {
    await stored('3.1.0', 'arm64');
    await stored('3.1.0', 'armhf');
    const { rollout_id: id } = await startRollout({ version: '3.1.0', canary: 'door-05' });
    expect(await offered()).toEqual(['door-05']);
    const second = await call('POST', '/fleet/rollouts', admin, { version: '3.0.0', canary: 'door-01' });
    expect(second).toEqual({
      status: 409,
      body: {
        error: `rollout ${id} (version 3.1.0) is at its canary stage: one rollout at a time; stop it (POST /fleet/rollouts/${id}/stop) or let it end first`,
      },
    });
    const stop = await call('POST', `/fleet/rollouts/${id}/stop`, admin, { reason: 'the night shift starts' });
    expect(stop.status).toBe(200);
    expect(stop.body).toMatchObject({ stage: 'stopped', stopped_reason: 'stopped by API key (ADMIN): the night shift starts' });
    expect(await offered()).toEqual([]);
    expect((await call('POST', `/fleet/rollouts/${id}/stop`, admin, { reason: 'again' })).status).toBe(409);
    expect((await call('POST', '/fleet/rollouts/999/stop', admin, { reason: 'x' })).status).toBe(404);
    expect((await call('POST', `/fleet/rollouts/${id}/stop`, admin, {})).body.error).toMatch(/^reason: /);

    await stored('3.2.0', 'arm64');
    expect(await call('POST', '/fleet/rollouts', admin, { version: '3.2.0', canary: 'door-01' })).toEqual({
      status: 400,
      body: { error: 'version: no bundle of version 3.2.0 for the architecture of gate-01 (armhf): upload 3.2.0/armhf first (stored: arm64)' },
    });
    expect((await call('POST', '/fleet/rollouts', admin, { version: '3.3.0', canary: 'door-01' })).body.error).toMatch(
      /^version: no bundle of version 3\.3\.0 is stored/,
    );
    expect((await call('POST', '/fleet/rollouts', admin, { version: '3.1.0', canary: 'lobby' })).body).toEqual({
      error: 'canary: lobby is not an adopted agent (adopted: door-01, door-02, door-03, door-04, door-05, gate-01)',
    });
    for (const [body, field] of [
      [{ version: '3.1.0', canary: 'door-01', share_percent: 100 }, 'share_percent'],
      [{ version: '3.1.0', canary: 'door-01', health_bound_seconds: 10 }, 'health_bound_seconds'],
      [{ version: 'latest', canary: 'door-01' }, 'version'],
    ] as const) {
      expect((await call('POST', '/fleet/rollouts', admin, body)).body.error).toMatch(new RegExp(`^${field}: `));
    }
    expect((await call('POST', '/fleet/rollouts', regular, { version: '3.1.0', canary: 'door-01' })).status).toBe(403);
    expect((await call('POST', '/fleet/rollouts', agentKeys['door-01'], { version: '3.1.0', canary: 'door-01' })).status).toBe(403);
  });

  it("refuses allow_downgrade: true, and a health bound shorter than an agent's start delay and a sync", async () => {
    await stored('3.5.0', 'arm64');
    await stored('3.5.0', 'armhf');
    const downgrade = await call('POST', '/fleet/rollouts', admin, { version: '3.5.0', canary: 'door-01', allow_downgrade: true });
    expect(downgrade).toEqual({
      status: 400,
      body: {
        error:
          "allow_downgrade: a rollout cannot take a board to an older version (the board's root takes only newer signed versions from the service); " +
          'release the old code again under a newer version, or run `sudo door-agent update apply BUNDLE --allow-downgrade` on the board',
      },
    });
    // The start delay in door-04's configuration at the service: healthy needs a sync, so 170 s + 30 s at least.
    const configs = new AgentConfigs(db);
    await configs.add('door-04', fleetDocument(5, 'service: { startDelaySeconds: 170 }\n'), 'a test', '', time.wallNow());
    expect(await call('POST', '/fleet/rollouts', admin, { version: '3.5.0', canary: 'door-01', health_bound_seconds: 180 })).toEqual({
      status: 400,
      body: {
        error:
          "health_bound_seconds: 180 s is too short: door-04's configuration sets service.startDelaySeconds to 170 s, and an updated board is " +
          'healthy only once it has synced with the service again; give at least 200 s (that delay + 30 s)',
      },
    });
    await configs.add('door-04', fleetDocument(5), 'a test', 'the delay back to its default', time.wallNow());
    const { rollout_id: id } = await startRollout({ version: '3.5.0', canary: 'door-01', health_bound_seconds: 180 });
    expect((await exchange('door-01')).update).toMatchObject({ rollout_id: id, allow_downgrade: false });
    expect((await call('POST', `/fleet/rollouts/${id}/stop`, admin, { reason: 'a test' })).status).toBe(200);
  });

  it("refuses an agent's report whose update part is not one, naming the field; the rollout does not move", async () => {
    await stored('3.4.0', 'arm64');
    await stored('3.4.0', 'armhf');
    const { rollout_id: id } = await startRollout({ version: '3.4.0', canary: 'door-02' });
    await exchange('door-02');
    const send = (update: unknown) => call('POST', '/fleet/self/report', agentKeys['door-02'], { version: '1.0.0', update });
    expect((await send({ rollout_id: id, state: 'exploded', detail: '' })).body.error).toMatch(/^update\.state: /);
    expect((await send({ rollout_id: 'latest', state: 'healthy', detail: '' })).body.error).toMatch(/^update\.rollout_id: /);
    const long = await send({ rollout_id: id, state: 'failed', detail: 'x'.repeat(2001) });
    expect(long.status).toBe(400);
    expect(long.body.error).toMatch(/^update\.detail: /);
    const after = await rollout(id);
    expect([after.stage, after.agents.find((a) => a.agent_id === 'door-02')!.state]).toEqual(['canary', 'offered']);
    expect((await call('POST', `/fleet/rollouts/${id}/stop`, admin, { reason: 'a test' })).status).toBe(200);
  });

  it('two reports at once, on two connections, move the rollout exactly one stage', async () => {
    for (const version of ['4.0.0', '4.0.1', '4.0.2']) {
      await stored(version, 'arm64');
      await stored(version, 'armhf');
      // 50 % of five: door-02, door-03 and door-04 in the share; door-05 and gate-01 in all.
      const { rollout_id: id } = await startRollout({ version, canary: 'door-01', share_percent: 50 });
      await exchange('door-01');
      await report('door-01', id, 'healthy', '', version);
      expect(await offered()).toEqual(['door-02', 'door-03', 'door-04']);
      await Promise.all(['door-02', 'door-03', 'door-04'].map((agent) => report(agent, id, 'healthy', '', version)));
      const share = await rollout(id);
      expect(share.stage, version).toBe('all');
      expect(share.agents.filter((a) => a.stage === 'all').map((a) => a.state)).toEqual(['waiting', 'waiting']);
      expect(await offered()).toEqual(['door-05', 'gate-01']);
      await Promise.all(['door-05', 'gate-01'].map((agent) => report(agent, id, 'healthy', '', version)));
      expect((await rollout(id)).stage, version).toBe('done');
    }
  });
});

describe('reader firmware', () => {
  it('stores a file, hands its task to the agent, lets only that agent fetch it, and records its reports', async () => {
    const bytes = randomBytes(200_000);
    const up = await fetch(`${base}/fleet/files?name=${encodeURIComponent('HID-signo-4.2.1.bin')}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/octet-stream' },
      body: bytes,
    });
    expect(up.status).toBe(200);
    const file = (await up.json()) as { file_id: number };
    expect(file).toEqual({ file_id: file.file_id, name: 'HID-signo-4.2.1.bin', sha256: sha256(bytes), size: bytes.length });

    const made = await call('POST', '/fleet/agents/door-02/reader-firmware', admin, { readers: ['Front reader', 'Back reader'], file_id: file.file_id });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const task = fleetTaskSchema.parse(made.body);
    expect(task).toMatchObject({ agent_id: 'door-02', state: 'waiting', readers: ['Front reader', 'Back reader'], created_by: 'API key (ADMIN)' });

    const { tasks } = await exchange('door-02');
    expect(tasks).toEqual([
      {
        task_id: task.task_id,
        kind: 'reader_firmware',
        readers: ['Front reader', 'Back reader'],
        file: { name: 'HID-signo-4.2.1.bin', sha256: sha256(bytes), size: bytes.length, path: `/fleet/files/${file.file_id}` },
      },
    ]);
    expect((await exchange('door-03')).tasks).toEqual([]);
    expect((await download(`/fleet/files/${file.file_id}`, agentKeys['door-02']!)).bytes.equals(bytes)).toBe(true);
    expect((await download(`/fleet/files/${file.file_id}`, admin)).bytes.equals(bytes)).toBe(true);
    // Another agent's key, a REGULAR key: refused.
    expect((await call('GET', `/fleet/files/${file.file_id}`, agentKeys['door-03'])).body).toEqual({
      error: `firmware file ${file.file_id} is not meant for agent door-03 now`,
    });
    expect((await download(`/fleet/files/${file.file_id}`, regular)).status).toBe(403);

    const tasksOf = async () => (await call('GET', '/fleet/agents/door-02/tasks', admin)).body.tasks as Array<{ state: string; detail: string }>;
    const reportTasks = (agent: string, state: string, detail: string) =>
      call('POST', '/fleet/self/report', agentKeys[agent], { version: '1.0.0', tasks: [{ task_id: task.task_id, state, detail }] });
    expect((await reportTasks('door-02', 'running', 'Front reader: block 3 of 40')).status).toBe(200);
    expect((await tasksOf())[0]).toMatchObject({ state: 'running', detail: 'Front reader: block 3 of 40' });
    // Another agent's report of it changes nothing.
    expect((await reportTasks('door-03', 'failed', 'not mine')).status).toBe(200);
    expect((await tasksOf())[0]!.state).toBe('running');
    expect((await reportTasks('door-02', 'done', 'Front reader 4.2.1, Back reader 4.2.1')).status).toBe(200);
    expect((await tasksOf())[0]).toMatchObject({ state: 'done', detail: 'Front reader 4.2.1, Back reader 4.2.1' });
    expect((await exchange('door-02')).tasks).toEqual([]);
    // Ended: the agent's key no longer fetches the file.
    expect((await download(`/fleet/files/${file.file_id}`, agentKeys['door-02']!)).status).toBe(403);
  });

  it('names what is wrong with a file or a task', async () => {
    const post = (query: string, body: Buffer) =>
      fetch(`${base}/fleet/files${query}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/octet-stream' },
        body,
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error: string } }));
    expect((await post('', randomBytes(10))).body.error).toBe("name: the file's name is required (?name=...)");
    expect((await post('?name=..%2Fetc%2Fpasswd', randomBytes(10))).body.error).toMatch(/^name: must be a file name/);
    expect(await post('?name=big.bin', randomBytes((16 << 20) + 1))).toEqual({
      status: 413,
      body: { error: `the firmware file is ${(16 << 20) + 1} bytes, over the 16 MiB a firmware file may have: nothing was stored` },
    });
    expect((await post('?name=empty.bin', Buffer.alloc(0))).body.error).toBe('the firmware file is empty: nothing was stored');
    const json = await call('POST', '/fleet/files?name=x.bin', admin, { bytes: 'x' });
    expect(json).toEqual({ status: 400, body: { error: 'send the firmware file as the request body, Content-Type: application/octet-stream' } });

    const task = (agent: string, body: unknown) => call('POST', `/fleet/agents/${agent}/reader-firmware`, admin, body);
    expect((await task('door-01', { readers: [], file_id: 1 })).body.error).toMatch(/^readers: name at least one reader/);
    expect((await task('door-01', { readers: ['A', 'A'], file_id: 1 })).body.error).toMatch(/^readers: names a reader twice/);
    expect(await task('door-01', { readers: ['A'], file_id: 999 })).toEqual({
      status: 404,
      body: { error: 'file_id: no firmware file 999 (POST /fleet/files uploads one)' },
    });
    expect(await task('lobby', { readers: ['A'], file_id: 1 })).toEqual({ status: 404, body: { error: 'no adopted agent lobby' } });
    expect((await call('GET', '/fleet/agents/lobby/tasks', admin)).status).toBe(404);
    expect((await call('POST', '/fleet/agents/door-01/reader-firmware', regular, { readers: ['A'], file_id: 1 })).status).toBe(403);
  });
});

describe('GET /openapi.json', () => {
  it('describes the uploads as raw bytes with their parameters in the query string, and the downloads as raw bytes', async () => {
    type Operation = {
      parameters?: Array<{ name: string; in: string }>;
      requestBody?: { content: Record<string, unknown> };
      responses: Record<string, { content?: Record<string, unknown> }>;
    };
    const doc = (await call('GET', '/openapi.json', undefined)).body as { paths: Record<string, Record<string, Operation>> };
    const put = doc.paths['/fleet/releases/{version}/{arch}']!.put!;
    expect(put.parameters!.map((p) => `${p.in}:${p.name}`).sort()).toEqual(['path:arch', 'path:version', 'query:signature']);
    expect(Object.keys(put.requestBody!.content)).toEqual(['application/octet-stream']);
    expect(Object.keys(doc.paths['/fleet/files']!.post!.requestBody!.content)).toEqual(['application/octet-stream']);
    expect(Object.keys(doc.paths['/fleet/releases/{version_arch}/bundle']!.get!.responses['200']!.content!)).toEqual(['application/octet-stream']);
    for (const path of ['/fleet/rollouts', '/fleet/rollouts/{rollout_id}/stop', '/fleet/agents/{agent_id}/reader-firmware'])
      expect(doc.paths[path]!.post).toBeDefined();
  });
});

describe('door-agent update apply, given a request or a signature that is not one', () => {
  it('refuses it, naming the field, and replaces nothing', () => {
    const board = join(tmp.path, 'board');
    const root = join(board, 'root');
    mkdirSync(join(root, 'opt/door-agent'), { recursive: true });
    const program = join(root, 'opt/door-agent/package.json');
    writeFileSync(program, JSON.stringify({ name: 'door-agent', version: '1.0.0' }));
    const config = writeConfig(board, { agent: `controlSocket: ${join(board, 'control.sock')}` });
    const releaseKey = join(board, 'release.pub');
    writeFileSync(releaseKey, release.publicKey.export({ format: 'pem', type: 'spki' }));
    const results = () => JSON.parse(readFileSync(join(board, 'data/fleet/update-result.json'), 'utf8')) as Array<{ state: string; detail: string }>;
    const apply = (...args: string[]) => runCli(['update', 'apply', ...args, '--release-key', releaseKey, '--root', root, '--config', config]);

    // A request the daemon wrote that is not one: no signature's size, and a field it never writes.
    const request = join(board, 'update-request.json');
    const manifest = manifestOf('2.0.0', 'arm64', randomBytes(10));
    writeFileSync(
      request,
      JSON.stringify({
        rollout_id: 3,
        bundle: join(board, 'door-agent-2.0.0-arm64.tar.gz'),
        signed: { manifest: Object.assign({}, manifest, { size: 'big' }), signature: signatureOf(manifest) },
        allow_downgrade: false,
        health_bound_seconds: 120,
        run_as: 'root',
      }),
    );
    const fromRequest = apply('--request', request);
    expect(fromRequest.status, fromRequest.stderr).toBe(1);
    expect(fromRequest.stderr).toMatch(
      new RegExp(`^door-agent: update refused, nothing replaced: ${request} is not an update request: .*signed\\.manifest\\.size: .*run_as: unknown key`),
    );
    expect(existsSync(request)).toBe(false); // removed: the path unit does not start it again
    expect(results().at(-1)).toMatchObject({ state: 'refused', detail: expect.stringContaining('is not an update request') });

    // A request is the unprivileged daemon's: its bundle must be one it downloaded, not any file root can read.
    const outside = join(board, 'elsewhere.tar.gz');
    writeFileSync(
      request,
      JSON.stringify({
        rollout_id: 3,
        bundle: outside,
        signed: { manifest, signature: signatureOf(manifest) },
        allow_downgrade: false,
        health_bound_seconds: 120,
      }),
    );
    const fromElsewhere = apply('--request', request);
    expect(fromElsewhere.status, fromElsewhere.stderr).toBe(1);
    expect(fromElsewhere.stderr).toBe(
      `door-agent: update refused, nothing replaced: the request names ${outside}, not a bundle in ${join(board, 'data/fleet/downloads')}\n`,
    );
    expect(results().at(-1)).toMatchObject({ state: 'refused', detail: expect.stringContaining('not a bundle in') });

    // By hand, with a signature file that is not one.
    const bundle = join(board, 'door-agent-2.0.0-arm64.tar.gz');
    writeFileSync(bundle, randomBytes(10));
    const signature = join(board, 'bundle.sig.json');
    writeFileSync(signature, JSON.stringify({ manifest: { version: '2.0.0', arch: 'arm64' }, signature: signatureOf(manifest) }));
    const bySignature = apply(bundle, '--signature', signature);
    expect(bySignature.status, bySignature.stderr).toBe(1);
    expect(bySignature.stderr).toMatch(
      new RegExp(`^door-agent: update refused, nothing replaced: the signature ${signature} is not a release signature: manifest\\.sha256: `),
    );
    expect(results().at(-1)).toMatchObject({ state: 'refused', detail: expect.stringContaining('is not a release signature') });
    expect(JSON.parse(readFileSync(program, 'utf8'))).toEqual({ name: 'door-agent', version: '1.0.0' });
    expect(existsSync(join(root, 'opt/door-agent.new'))).toBe(false);
  });
});
