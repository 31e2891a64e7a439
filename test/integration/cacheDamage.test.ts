import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseHealth, type Health } from '../../src/protocol/health.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { startService, type RunningService } from '../../src/service/root.js';
import { systemClock } from '../../src/util/clock.js';
import { connectOperator, startDaemon, type Cleanups } from '../support/agentSite.js';
import { DOOR_UUID, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { readLevel, type Daemon } from '../support/daemon.js';
import { Mosquitto } from '../support/mosquitto.js';
import { freePort } from '../support/net.js';
import type { Operator } from '../support/operator.js';
import { PtyPair } from '../support/socat.js';
import { waitUntil } from '../support/wait.js';

// Issue 51 item 8: a damaged cache (pages of cache.db overwritten, as a failing SD card does) must not stop the door.
// The real daemon (simulated GPIO, a socat pty as its reader) against a real mosquitto and the reference service on
// a real port; the damage is written into the file as the card would, with a fixed seed.

const tmp = tempDir('door-agent-cache-damage-');
vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

const P = 'cd';
const USERS = 300;
/** Card i of the directory, as the reader sends it (7 digits). */
const card = (i: number) => String(4_300_000 + i);
const ALICE = card(7);

let broker: Mosquitto;
let service: RunningService | null = null;
let servicePort = 0;
let doorKey = '';
const serviceData = join(tmp.path, 'service');

async function startTheService(): Promise<void> {
  service = await startService(
    {
      server: {
        listen: `127.0.0.1:${servicePort}`,
        dataDir: serviceData,
        lockReplyTimeoutSeconds: 5,
        resources: [{ resourceId: 12, uuid: DOOR_UUID, type: 'DOOR', name: 'Front door' }],
      },
    },
    { clock: systemClock, logger: pino({ level: 'silent' }), env: {} },
  );
}

async function stopTheService(): Promise<void> {
  await service?.stop();
  service = null;
}

beforeAll(async () => {
  broker = new Mosquitto(join(tmp.path, 'broker'));
  await broker.start();
  mkdirSync(serviceData);
  servicePort = await freePort();
  await startTheService();
  const keys = new ApiKeys(service!.db);
  const admin = await keys.create('ADMIN', 0, Date.now());
  doorKey = await keys.create('DOOR', 0, Date.now());
  const call = async (path: string, body: Record<string, unknown>) => {
    const res = await fetch(`${service!.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (res.status !== 200) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  // A directory of a few hundred users: a cache of many pages, so that random pages hold real data.
  const staff = (await call('/groups', { type: 'users', name: 'Staff', add_ids: [] })).group_id as number;
  await call('/invites', {
    emails: Array.from({ length: USERS }, (_, i) => `user${i}@example.org`),
    no_email: true,
    groups: [{ id: staff, name: 'Staff' }],
    smartcards: Array.from({ length: USERS }, (_, i) => [{ number: card(i), label: 'badge' }]),
  });
});
afterAll(async () => {
  await stopTheService();
  await broker.stop();
  tmp.cleanup();
});

const cleanups: Cleanups = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  if (!service) await startTheService(); // a test that failed with the service stopped
});

interface Door {
  id: string;
  dir: string;
  config: string;
  cache: string;
  pty: PtyPair;
  relay: string;
  exit: string;
}

let doors = 0;

/** A door of the site, its cache synced from the service by `door-agent sync` (as an installer provisions it). */
async function door(startDelaySeconds: number): Promise<Door> {
  const id = `cd${doors++}`;
  const dir = join(tmp.path, id);
  mkdirSync(dir);
  writeFileSync(join(dir, 'api-key'), `${doorKey}\n`);
  const config = writeConfig(dir, {
    id,
    access: '{ groups: [Staff] }',
    extra:
      `mqtt: { url: "${broker.url}", topicPrefix: ${P}, keepaliveSeconds: 5 }\n` +
      `service: { baseUrl: "http://127.0.0.1:${servicePort}", apiKeyFile: ${dir}/api-key, syncIntervalSeconds: 10, startDelaySeconds: ${startDelaySeconds}, timeoutSeconds: 5 }`,
    doorExtra: `    unlockSeconds: 1
    exitButton: { pin: 22, debounceMs: 20 }
    reader: { path: ${dir}/reader }
`,
  });
  const synced = await runCliAsync(['sync', '--config', config]);
  expect(synced.status, synced.stderr).toBe(0);
  const pty = new PtyPair(join(dir, 'reader'), join(dir, 'terminal'));
  await pty.plugIn();
  cleanups.push(() => pty.unplug());
  return { id, dir, config, cache: join(dir, 'data', 'cache.db'), pty, relay: join(dir, 'gpio/gpio17/value'), exit: join(dir, 'gpio/gpio22/value') };
}

/** A small seeded generator (mulberry32): the same damage on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pageSizeOf(file: string): number {
  const size = readFileSync(file).readUInt16BE(16);
  return size === 1 ? 65_536 : size;
}

/** Overwrites whole pages (numbered from 1) of `file` with garbage, in place, as a failing card returns them. */
function overwritePages(file: string, pages: readonly number[], random: () => number): void {
  const pageSize = pageSizeOf(file);
  const fd = openSync(file, 'r+');
  try {
    for (const page of pages) {
      const garbage = Buffer.alloc(pageSize);
      for (let i = 0; i < pageSize; i++) garbage[i] = Math.floor(random() * 256);
      writeSync(fd, garbage, 0, pageSize, (page - 1) * pageSize);
    }
  } finally {
    closeSync(fd);
  }
}

/** What SQLite's own check says of the file, on a connection of the test's (never the daemon's). */
function sqliteCheck(file: string): string {
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      return (db.pragma('quick_check') as Array<{ quick_check: string }>).map((r) => r.quick_check).join('; ');
    } finally {
      db.close();
    }
  } catch (err) {
    return (err as Error).message;
  }
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

async function cli(d: Door, ...args: string[]) {
  return runCliAsync([...args, '--config', d.config]);
}

/** The audit events of this door's agent as they went out on the broker (`P/doors/<uuid>/events`, `P/doors/agent/events`). */
const published = (op: Operator, d: Door) =>
  op.received
    .filter((m) => m.topic.endsWith('/events'))
    .map((m) => m.json as Record<string, unknown>)
    .filter((e) => String(e.id).startsWith(`${d.id}-`));

const decisions = (all: Array<Record<string, unknown>>) => all.filter((e) => e.type === 'access_granted' || e.type === 'access_denied');

/** The tap of a card at the door's reader; resolves with the decision the agent published for it. */
async function tap(d: Door, op: Operator, number: string): Promise<Record<string, unknown>> {
  const before = decisions(published(op, d)).length;
  d.pty.write(`${number}\r\n`);
  await waitUntil(() => decisions(published(op, d)).length > before, 10_000, 'the decision published');
  return decisions(published(op, d))[before]!;
}

/** An audit event of the agent's, once published. */
async function publishedEvent(op: Operator, d: Door, type: string, timeoutMs = 10_000): Promise<Record<string, unknown>> {
  await waitUntil(() => published(op, d).some((e) => e.type === type), timeoutMs, type);
  return published(op, d).find((e) => e.type === type)!;
}

/** An operator watching the agent (availability, health, audit events); another one sends its commands. */
async function operatorOf(d: Door): Promise<Operator> {
  return connectOperator(broker.url, cleanups, [`${P}/agents/${d.id}/status`, `${P}/agents/${d.id}/health`, `${P}/doors/+/events`]);
}

const latestHealth = (op: Operator, d: Door): Health | null => {
  const all = op.received.filter((m) => m.topic === `${P}/agents/${d.id}/health`);
  return all.length === 0 ? null : parseHealth(all[all.length - 1]!.text);
};

/** Everything at the door that does not need the cache, while the cache is damaged. */
async function expectTheRestWorks(d: Door, daemon: Daemon, op: Operator): Promise<void> {
  const remote = await connectOperator(broker.url, cleanups, [`${P}/doors/${DOOR_UUID}/reply`]);
  await op.waitFor((m) => m.topic === `${P}/agents/${d.id}/status` && m.text === 'online', 10_000, 'availability online');
  // The exit button unlocks and the door locks again after unlockSeconds.
  writeFileSync(d.exit, '0\n');
  await waitUntil(() => readLevel(d.relay) === '1', 5000, 'the exit button unlocks');
  writeFileSync(d.exit, '1\n');
  await waitUntil(() => readLevel(d.relay) === '0', 5000, 'locked again');
  // A remote unlock over MQTT.
  const reply = await remote.command(`${P}/doors/${DOOR_UUID}/reply`, `${P}/doors/${DOOR_UUID}/set`, { lock_state: false, unlock_time: 1 }, `u-${d.id}`);
  expect(reply).toMatchObject({ status: 200 });
  await waitUntil(() => readLevel(d.relay) === '0', 5000, 'locked again after the remote unlock');
  expect(daemon.exitCode).toBe(null);
}

describe('a cache damaged before the daemon starts', () => {
  it.each<[string, (file: string) => void]>([
    [
      'random pages past the first overwritten (the header intact)',
      (file) => {
        const random = seeded(51);
        const pages = Math.floor(readFileSync(file).length / pageSizeOf(file));
        const chosen = new Set<number>();
        while (chosen.size < Math.ceil(pages / 4)) chosen.add(2 + Math.floor(random() * (pages - 1)));
        overwritePages(file, [...chosen], random);
      },
    ],
    ['the header itself overwritten', (file) => overwritePages(file, [1], seeded(8))],
  ])('%s: the door runs degraded, refusing every card with cache_damaged; once the service answers the cache is rebuilt', async (_what, damage) => {
    const d = await door(0);
    await stopTheService(); // the service unreachable: the door must run on without a cache
    damage(d.cache);
    expect(sqliteCheck(d.cache)).not.toBe('ok');
    const damagedHash = sha256(d.cache);

    const op = await operatorOf(d);
    const daemon = await startDaemon(d.config, cleanups, { waitFor: ['reader connected'] });
    await daemon.waitForLog((l) => l.msg.startsWith('the cache is damaged'));

    const refused = await tap(d, op, ALICE);
    expect(refused).toMatchObject({ type: 'access_denied', reason: 'cache_damaged', holders: [] });
    expect(readLevel(d.relay)).toBe('0');
    await expectTheRestWorks(d, daemon, op);

    await op.waitFor((m) => m.topic === `${P}/agents/${d.id}/health` && parseHealth(m.text).cache.damaged != null, 10_000, 'the health saying so');
    expect(latestHealth(op, d)?.cache.damaged).toMatchObject({ rebuild: 'automatic', error: expect.any(String), since: expect.any(String) });
    const status = await cli(d, 'status');
    expect(status.status).toBe(1);
    expect(status.stdout).toContain(`WARNING: the cache ${d.cache} is damaged`);
    expect(status.stdout).toContain('the daemon rebuilds it from the service by itself, retrying until the service answers');
    const check = await cli(d, 'check', ALICE);
    expect(check.status).toBe(1);
    // A damaged page: "the cache is damaged (...)"; a damaged header: "not a door-agent cache (...): a damaged cache ...".
    expect(check.stderr).toMatch(/the cache is damaged \(|a damaged cache \(a failing SD card\)/);
    expect(check.stderr).toMatch(/door-agent run rebuilds it from the service by itself|door-agent run, with a service configured, does both by itself/);
    expect(sha256(d.cache)).toBe(damagedHash); // never written while damaged

    // The service comes back: the daemon's next try (its backoff) rebuilds the cache, the damaged file kept aside.
    await startTheService();
    const rebuilt = await publishedEvent(op, d, 'cache_rebuilt', 30_000);
    expect(published(op, d).find((e) => e.type === 'cache_damaged')).toMatchObject({ door: null, at_start: true, rebuild: 'automatic' });
    expect(rebuilt).toMatchObject({ door: null, kept_as: expect.stringMatching(/^cache\.db\.damaged-/) });
    expect(daemon.logs.some((l) => l.msg === 'the cache was rebuilt from the service: decisions resume (the damaged file is kept aside)')).toBe(true);
    const keptAs = join(d.dir, 'data', rebuilt!.kept_as as string);
    expect(sha256(keptAs)).toBe(damagedHash);
    expect(readdirSync(join(d.dir, 'data')).filter((f) => f.startsWith('cache.db.damaged-') && !f.endsWith('-wal') && !f.endsWith('-shm'))).toHaveLength(1);
    expect(sqliteCheck(d.cache)).toBe('ok');

    const granted = await tap(d, op, ALICE);
    expect(granted).toMatchObject({ type: 'access_granted', holders: [expect.objectContaining({ reason: null })] });
    await waitUntil(() => readLevel(d.relay) === '0', 5000, 'locked again');
    await op.waitFor((m) => m.topic === `${P}/agents/${d.id}/health` && parseHealth(m.text).cache.damaged === null, 10_000, 'the health sound again');
    const after = await cli(d, 'status');
    expect(after.status, after.stdout).toBe(0);
    expect(after.stdout).toContain(`cache: rebuilt from the service at `);
    expect((await cli(d, 'check', ALICE)).status).toBe(0);
    expect(daemon.exitCode).toBe(null);
  });
});

describe('a cache damaged while the daemon runs', () => {
  it('the tap that reads the damaged page is refused with cache_damaged; the cache is rebuilt at once, its guest links come again, the next tap is granted', async () => {
    // No sync of its own before the damage (the start delay): the file on the disk is what the daemon reads.
    const d = await door(3600);
    // The page of the credentials table that holds Alice's card: her lookup must read it, and the daemon, which has
    // made no lookup yet, holds no copy of it in memory (the guest link below is stored far from it, in number order).
    const db = new Database(d.cache, { readonly: true });
    const leaves = db.prepare("SELECT pageno FROM dbstat WHERE name = 'credentials' AND pagetype = 'leaf'").pluck().all() as number[];
    db.close();
    const pageSize = pageSizeOf(d.cache);
    const bytes = readFileSync(d.cache);
    const alicePage = leaves.find((p) => bytes.subarray((p - 1) * pageSize, p * pageSize).includes(Buffer.from(ALICE)));
    expect(alicePage).toBeDefined();
    const page = alicePage!;
    const op = await operatorOf(d);
    // A guest link the service published (retained): it lives in the cache too, and must come back with the rebuild.
    const GUEST_CARD = '5550042';
    const link = JSON.stringify({
      magic_link_id: '42',
      magic_token: 'cache-damage-guest-token-42',
      name: 'Visitor',
      email_list: ['v@example.org'],
      resource_id_list: [12],
      start_time: '2026-01-01 00:00:00',
      end_time: null,
      smartcards: [{ number: GUEST_CARD, label: 'visitor' }],
    });
    await op.publish(`${P}/guest-links/42`, link, { retain: true });
    cleanups.push(() => op.publish(`${P}/guest-links/42`, '', { retain: true }));
    const daemon = await startDaemon(d.config, cleanups, { waitFor: ['reader connected'] });
    const linkStored = () => daemon.logs.filter((l) => l.msg === 'guest link received' && l.guestLink === '42' && l.result === 'stored').length;
    await waitUntil(() => linkStored() === 1, 10_000, 'the guest link stored');

    // That page overwritten under the running daemon.
    overwritePages(d.cache, [page], seeded(80));
    const garbage = readFileSync(d.cache).subarray((page - 1) * pageSize, page * pageSize);
    const probe = new Database(d.cache, { readonly: true });
    expect(() => probe.prepare('SELECT * FROM credentials WHERE number = ?').all(ALICE)).toThrow(/malformed|not a database/);
    probe.close();

    const refused = await tap(d, op, ALICE);
    expect(refused).toMatchObject({ type: 'access_denied', reason: 'cache_damaged' });
    expect(readLevel(d.relay)).toBe('0');
    await publishedEvent(op, d, 'cache_rebuilt', 30_000);
    const all = published(op, d);
    const types = all.map((e) => e.type).filter((t) => typeof t === 'string' && t.startsWith('cache_'));
    expect(types).toEqual(['cache_damaged', 'cache_rebuilt']);
    expect(all.find((e) => e.type === 'cache_damaged')).toMatchObject({
      at_start: false,
      rebuild: 'automatic',
      error: expect.stringMatching(/malformed|not a database/),
    });
    // Kept aside as it was: the damaged page is still there, nothing deleted.
    const keptAs = join(d.dir, 'data', all.find((e) => e.type === 'cache_rebuilt')!.kept_as as string);
    expect(existsSync(keptAs)).toBe(true);
    expect(
      readFileSync(keptAs)
        .subarray((page - 1) * pageSize, page * pageSize)
        .equals(garbage),
    ).toBe(true);

    const granted = await tap(d, op, ALICE);
    expect(granted).toMatchObject({ type: 'access_granted' });
    await waitUntil(() => linkStored() === 2, 10_000, 'the retained guest link stored again in the rebuilt cache');
    await waitUntil(() => readLevel(d.relay) === '0', 5000, 'locked again');
    expect(await tap(d, op, GUEST_CARD)).toMatchObject({ type: 'access_granted', kind: 'card' });
    await op.waitFor((m) => m.topic === `${P}/agents/${d.id}/status` && m.text === 'online', 5000, 'availability online');
    expect(daemon.exitCode).toBe(null);
  });
});
