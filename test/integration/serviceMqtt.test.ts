import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseGuestLinkIndex } from '../../src/protocol/guestLinkIndex.js';
import { guestLinkPayload, isRefusal, parseGuestLinkMessage, type GuestLinkMessage } from '../../src/protocol/guestLinks.js';
import { parseHolidaysMessage, parseLockdownMessage, type LockdownScope } from '../../src/protocol/lockdown.js';
import type { MqttOptions } from '../../src/protocol/options.js';
import { isRetainedRefusal } from '../../src/protocol/retainedMessages.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { ServiceMqtt } from '../../src/service/doorsMqtt.js';
import { revokedLinkIds, storedLinks } from '../../src/service/linkStore.js';
import { PublishQueue } from '../../src/service/publishQueue.js';
import { LocalChangeFeed, PostgresChangeFeed, type ChangeFeed } from '../../src/service/sql/changeFeed.js';
import { AdvisoryLockLeadership, SoleLeader, type Leadership } from '../../src/service/sql/leadership.js';
import type { PostgresDb } from '../../src/service/sql/postgresDb.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { StatePublisher } from '../../src/service/statePublisher.js';
import type { Clock } from '../../src/util/clock.js';
import type { DoorAgentError } from '../../src/util/errors.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { Mosquitto } from '../support/mosquitto.js';
import { testService } from '../support/serviceApp.js';
import { describeOn, newServiceDb } from '../support/serviceDb.js';
import { sleep, waitUntil } from '../support/wait.js';

// The service's retained state on a real mosquitto, as a door sees it: what a change owes the doors is written in
// the change's transaction (publishQueue.ts, through the real routes), and the publisher (statePublisher.ts) sends
// it from the database, only in the process that holds the publisher lock, deleting each row once the broker has
// it. On SQLite and, in the postgres project, on PostgreSQL (with its change feed and advisory lock).

const tmp = tempDir('door-agent-service-mqtt-');
const SECRET = 'a-command-secret-of-at-least-32-bytes';
const log = pino({ level: 'silent' });
/** A broker that keeps its retained messages and sessions across a restart (the service loses it for a while). */
const broker = new Mosquitto(join(tmp.path, 'broker'), undefined, true);
beforeAll(() => broker.start());
afterAll(async () => {
  await broker.stop();
  tmp.cleanup();
});

let dirs = 0;
/** A new, empty service database on this run's engine. */
async function newDb(name: string): Promise<SqlDb> {
  const dir = join(tmp.path, `${name}-${++dirs}`);
  mkdirSync(dir, { recursive: true });
  return (await newServiceDb(dir, name)).db;
}

function mqttOptions(prefix: string, signed: boolean): MqttOptions {
  const commandSecretFile = join(tmp.path, 'command-secret');
  if (signed) writeFileSync(commandSecretFile, `${SECRET}\n`);
  return {
    url: broker.url,
    topicPrefix: prefix,
    ...(signed ? { commandSecretFile } : {}),
    commandMaxAgeSeconds: 30,
    maxGuestLinks: 500,
    guestLinkMaxAgeSeconds: 7 * 86_400,
    futureSkewSeconds: 300,
    retainedMaxAgeSeconds: 3 * 86_400,
    keepaliveSeconds: 5,
    protocolVersion: 5,
    homeAssistant: { discovery: false, prefix: 'ha' },
  };
}

/** The feed openStorage gives for the database's engine: local on SQLite, LISTEN/NOTIFY on PostgreSQL. */
async function feedFor(db: SqlDb): Promise<ChangeFeed> {
  if (db.engine === 'sqlite') return new LocalChangeFeed(db);
  const feed = new PostgresChangeFeed(db, (db as PostgresDb).connection, log);
  await feed.start();
  return feed;
}

/** The publisher lock openStorage gives: SQLite's one process always publishes, PostgreSQL's holder of the lock does. */
async function leadershipFor(db: SqlDb): Promise<Leadership> {
  if (db.engine === 'sqlite') return new SoleLeader();
  const leadership = new AdvisoryLockLeadership((db as PostgresDb).connection, log, 200);
  await leadership.start();
  return leadership;
}

/** A process that may not publish until told (SQLite has no lock to wait for: this stands for one held elsewhere). */
class HeldElsewhere implements Leadership {
  leading = false;
  private readonly listeners: Array<(leading: boolean) => void> = [];
  onChange(listener: (leading: boolean) => void): void {
    this.listeners.push(listener);
  }
  release(): void {
    this.leading = true;
    for (const listener of this.listeners) listener(true);
  }
  async close(): Promise<void> {}
}

interface ServiceProcess {
  db: SqlDb;
  queue: PublishQueue;
  mqtt: ServiceMqtt;
  leadership: Leadership;
  /** An HTTP call to the service's routes (fastify inject) with an ADMIN key; the answer's JSON. */
  call(method: string, url: string, payload?: Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/**
 * One service process on `db` as startService wires it: its change feed and publisher lock (as openStorage builds
 * them), its broker connection, the publish queue its routes owe into, the publisher, and the routes.
 */
async function serviceProcess(
  db: SqlDb,
  options: {
    prefix: string;
    signed: boolean;
    clock?: Clock;
    resignIntervalMs?: number;
    holidays?: string[];
    leadership?: Leadership;
    logger?: Logger;
  },
): Promise<ServiceProcess> {
  const clock = options.clock ?? { wallNow: () => Date.now(), monoNow: () => performance.now() };
  const feed = await feedFor(db);
  const leadership = options.leadership ?? (await leadershipFor(db));
  const doors = new ServiceMqtt(mqttOptions(options.prefix, options.signed), {}, log);
  const queue = new PublishQueue(db, feed);
  const publisher = new StatePublisher({
    db,
    queue,
    feed,
    leadership,
    mqtt: doors,
    clock,
    logger: options.logger ?? log,
    holidays: options.holidays ?? null,
    ...(options.resignIntervalMs === undefined ? {} : { resignIntervalMs: options.resignIntervalMs }),
  });
  const app = testService(db, { publishQueue: queue, doors });
  await app.ready();
  const headers = { authorization: `Bearer ${await new ApiKeys(db).create('ADMIN', 0, Date.now())}` };
  return {
    db,
    queue,
    mqtt: doors,
    leadership,
    async call(method, url, payload) {
      const res = await app.inject({ method: method as 'GET', url, headers, ...(payload ? { payload } : {}) });
      const body = res.json<Record<string, unknown>>();
      if (res.statusCode !== 200) throw new Error(`${method} ${url}: ${res.statusCode} ${JSON.stringify(body)}`);
      return body;
    },
    async close() {
      await app.close();
      await publisher.close();
      await doors.close();
      await leadership.close();
      await feed.close();
    },
  };
}

/** A guest link created by POST /magiclinkadmin for `emails`; its id and token. */
async function createLink(p: ServiceProcess, name: string, emails: string[]): Promise<{ id: string; token: string }> {
  const body = await p.call('POST', '/magiclinkadmin', { email_list: emails, resource_id_list: [12], name, send_email: false });
  return { id: String(body.magic_link_id), token: String(body.magic_token) };
}

/** DELETE /user: the guest leaves the links naming them (a link left with nobody is revoked at the doors). */
const removeUser = (p: ServiceProcess, email: string) => p.call('DELETE', `/user?email=${encodeURIComponent(email)}`);

/** What the publish queue holds, oldest first ("kind:subject"). */
async function owed(db: SqlDb): Promise<string[]> {
  return (await db.all<{ kind: string; subject: string }>('SELECT kind, subject FROM publish_queue ORDER BY id')).map((r) => `${r.kind}:${r.subject}`);
}

/** The message a new subscriber (a door connecting now) gets retained on `topic` within `waitMs`, or null. */
async function retained(topic: string, waitMs = 1500): Promise<Buffer | null> {
  let client: mqtt.MqttClient | undefined;
  try {
    client = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0, connectTimeout: 5000 });
    const got = new Promise<Buffer | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), waitMs);
      client!.on('message', (_t, payload, packet) => {
        if (!packet.retain || payload.length === 0) return;
        clearTimeout(timer);
        resolve(payload);
      });
    });
    await client.subscribeAsync(topic, { qos: 1 });
    return await got;
  } catch {
    return null; // the broker is away
  } finally {
    await client?.endAsync().catch(() => undefined);
  }
}

/** Polls what the broker holds retained on `topic` until `accept` takes it (and gives a value); that value. */
async function retainedWhen<T>(topic: string, accept: (payload: Buffer) => T | undefined, what: string, timeoutMs = 45_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const payload = await retained(topic);
    const value = payload === null ? undefined : accept(payload);
    if (value !== undefined) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms (last seen: ${payload?.toString() ?? 'nothing retained'})`);
    await sleep(200);
  }
}

/** A guest-link message as a door reads it (authenticated with the secret when signed); throws on a refusal. */
function linkMessage(id: string, payload: Buffer, secret: string | null = SECRET): GuestLinkMessage {
  const parsed = parseGuestLinkMessage(id, payload, secret);
  if (isRefusal(parsed)) throw new Error(`guest link ${id} refused: ${parsed.refused} (${payload.toString()})`);
  return parsed;
}

/** The signed index as a door reads it: its ids and issued_at; throws on a refusal (a bad signature included). */
function indexMessage(payload: Buffer, secret: string | null = SECRET): { ids: string[]; issuedAt: number } {
  const parsed = parseGuestLinkIndex(payload, secret);
  if (isRetainedRefusal(parsed) || parsed.kind !== 'set') throw new Error(`guest-link index refused: ${payload.toString()}`);
  return { ids: parsed.body.ids, issuedAt: parsed.issuedAt ?? 0 };
}

const live =
  (id: string, after = 0) =>
  (payload: Buffer) => {
    const m = linkMessage(id, payload);
    return m.kind === 'link' && (m.issuedAt ?? 0) > after ? m : undefined;
  };
const revoked =
  (id: string, after = 0) =>
  (payload: Buffer) => {
    const m = linkMessage(id, payload);
    return m.kind === 'revoke' && (m.issuedAt ?? 0) > after ? m : undefined;
  };
const indexListing = (ids: string[]) => (payload: Buffer) => {
  const index = indexMessage(payload);
  return JSON.stringify(index.ids) === JSON.stringify(ids) ? index : undefined;
};

/** A lockdown message as a door reads it (unsigned when `secret` is null). */
function lockdownMessage(scope: LockdownScope, payload: Buffer, secret: string | null = SECRET) {
  const parsed = parseLockdownMessage(scope, payload, secret);
  if (isRetainedRefusal(parsed) || parsed.kind !== 'set') throw new Error(`lockdown refused: ${payload.toString()}`);
  return parsed;
}

/** Every message published on `filter` from now on (not the retained ones a subscriber is first given), in order. */
async function watch(filter: string, clientOptions: mqtt.IClientOptions = {}) {
  const client = await mqtt.connectAsync(broker.url, Object.assign({ reconnectPeriod: 500 }, clientOptions));
  const seen: Array<{ topic: string; payload: Buffer }> = [];
  client.on('message', (topic, payload, packet) => {
    if (!packet.retain) seen.push({ topic, payload });
  });
  await client.subscribeAsync(filter, { qos: 1 });
  return { seen, close: () => client.endAsync(true).catch(() => undefined) };
}

const queueEmpty = (db: SqlDb) => waitUntil(async () => (await owed(db)).length === 0, 30_000, 'the publish queue emptied');
const DOOR: LockdownScope = { kind: 'door', uuid: DOOR_UUID };
const LOBBY: LockdownScope = { kind: 'agent', id: 'lobby' };

describe("the service's guest links on the broker, signed", () => {
  it('a revocation made while the broker is away stays owed, reaches it on reconnect after the lockdown owed before it, and the queue empties', async () => {
    const db = await newDb('away');
    const p = await serviceProcess(db, { prefix: 'da', signed: true });
    let door: Awaited<ReturnType<typeof watch>> | undefined;
    try {
      const { id, token } = await createLink(p, 'Visitor', ['visitor@example.org']);
      const link = await retainedWhen(`da/guest-links/${id}`, live(id), 'the link retained');
      expect(link.kind === 'link' && link.link.magic_token).toBe(token);
      // The signed index of the live links (the doors' reconcile path in signed mode), after the link itself.
      await retainedWhen('da/guest-link-index', indexListing([id]), 'the index retained');
      await queueEmpty(db);
      // A door with a session the broker keeps while it is away: it gets what was published meanwhile, in order.
      door = await watch('da/#', { clean: false, clientId: 'door-da' });
      await broker.stop(); // the service loses the broker
      // Meanwhile the door is locked down, then the guest removed: the link is revoked.
      await p.call('POST', '/lockdown', { active: true, uuid: DOOR_UUID, reason: 'drill' });
      await removeUser(p, 'visitor@example.org');
      await sleep(2000);
      // Nothing acknowledged them: both stay owed, in the order they were made.
      const waiting = await owed(db);
      expect(waiting.indexOf(`link:${id}`)).toBeGreaterThan(waiting.indexOf(`lockdown:door:${DOOR_UUID}`));
      expect(waiting.indexOf(`lockdown:door:${DOOR_UUID}`)).toBeGreaterThanOrEqual(0);
      await broker.start();
      const tombstone = await retainedWhen(`da/guest-links/${id}`, revoked(id), 'the tombstone retained after the reconnect');
      // Strictly newer than the link, even within the same second: a replay of the link is stale at every door.
      expect(tombstone.issuedAt!).toBeGreaterThan(link.issuedAt!);
      await retainedWhen('da/guest-link-index', indexListing([]), 'the index without the revoked link');
      expect(lockdownMessage(DOOR, (await retained(`da/doors/${DOOR_UUID}/lockdown`))!).body.lockdown).toBe(true);
      await queueEmpty(db);
      // The door saw the lockdown before the revocation, as they were made.
      const d = door;
      await waitUntil(() => d.seen.some((m) => m.topic === `da/guest-links/${id}`), 30_000, 'the door got the revocation');
      const topics = d.seen.map((m) => m.topic);
      expect(topics.indexOf(`da/doors/${DOOR_UUID}/lockdown`)).toBeGreaterThanOrEqual(0);
      expect(topics.indexOf(`da/doors/${DOOR_UUID}/lockdown`)).toBeLessThan(topics.indexOf(`da/guest-links/${id}`));
    } finally {
      await door?.close();
      await p.close();
      await db.close();
    }
  }, 120_000);

  it('a row is deleted only once the broker acknowledged it: a frozen broker leaves it owed, and it goes when the broker answers', async () => {
    const db = await newDb('frozen');
    const p = await serviceProcess(db, { prefix: 'dz', signed: true });
    try {
      const { id } = await createLink(p, 'Visitor', ['visitor@example.org']);
      await retainedWhen(`dz/guest-links/${id}`, live(id), 'the link retained');
      await queueEmpty(db);
      broker.freeze(); // the connection stays open; nothing answers
      try {
        await p.call('POST', '/lockdown', { active: true, agent_id: 'lobby' });
        await sleep(3000);
        expect(await owed(db)).toContain('lockdown:agent:lobby');
      } finally {
        broker.thaw();
      }
      await retainedWhen('dz/agents/lobby/lockdown', (b) => (lockdownMessage(LOBBY, b).body.lockdown ? true : undefined), 'the lockdown retained');
      await queueEmpty(db);
    } finally {
      await p.close();
      await db.close();
    }
  }, 120_000);

  it('refuses a command secret shorter than 32 bytes: exit 78 naming the file, never the secret', () => {
    const file = join(tmp.path, 'short-secret');
    writeFileSync(file, 'a-command-secret\n');
    let error: DoorAgentError | undefined;
    try {
      new ServiceMqtt(Object.assign(mqttOptions('dd', false), { commandSecretFile: file }), {}, log);
    } catch (err) {
      error = err as DoorAgentError;
    }
    expect(error?.exitCode).toBe(78);
    expect(error?.message).toBe(
      `mqtt.commandSecretFile: ${file} holds a secret of 16 bytes; it must be at least 32 bytes (for example: openssl rand -hex 32 > ${file})`,
    );
  });

  it('a link, its update and its revocation within one second carry increasing issued_at', async () => {
    const db = await newDb('second');
    // The publisher's clock stands still: every message is issued "in the same second".
    const now = Date.now();
    const p = await serviceProcess(db, { prefix: 'db', signed: true, clock: { wallNow: () => now, monoNow: () => performance.now() } });
    const watcher = await watch('db/guest-links/+');
    try {
      await queueEmpty(db);
      const { id } = await createLink(p, 'Visitors', ['one@example.org', 'two@example.org']);
      // Each message once: a QoS 1 publish sent again over a new connection (a loaded host's keepalive) is the same bytes.
      const messages = () =>
        watcher.seen
          .filter((m) => m.topic === `db/guest-links/${id}`)
          .filter((m, i, all) => all.findIndex((o) => o.topic === m.topic && o.payload.equals(m.payload)) === i)
          .map((m) => linkMessage(id, m.payload));
      await waitUntil(() => messages().length === 1, 15_000, 'the link');
      await removeUser(p, 'one@example.org'); // the link changes: one guest left
      await waitUntil(() => messages().length === 2, 15_000, 'the updated link');
      await removeUser(p, 'two@example.org'); // nobody left: revoked
      await waitUntil(() => messages().length === 3, 15_000, 'the revocation');
      const [first, second, third] = messages();
      expect(second!.kind === 'link' && second!.link.email_list).toEqual(['two@example.org']);
      expect(third!.kind).toBe('revoke');
      expect(second!.issuedAt!).toBeGreaterThan(first!.issuedAt!);
      expect(third!.issuedAt!).toBeGreaterThan(second!.issuedAt!);
    } finally {
      await watcher.close();
      await p.close();
      await db.close();
    }
  });

  it('changes in quick succession: each index comes after the links it lists, and the last one retained lists the live links', async () => {
    const db = await newDb('burst');
    const p = await serviceProcess(db, { prefix: 'de', signed: true });
    const watcher = await watch('de/#');
    try {
      await queueEmpty(db);
      // Four links at once, then one of them revoked at once.
      const links = await Promise.all([1, 2, 3, 4].map((n) => createLink(p, `Visitor ${n}`, [`guest${n}@example.org`])));
      await removeUser(p, 'guest2@example.org');
      const expected = links.map((l) => l.id).filter((id) => id !== links[1]!.id);
      expected.sort((a, b) => Number(a) - Number(b));
      await retainedWhen('de/guest-link-index', indexListing(expected), 'the index of the live links');
      await queueEmpty(db);
      await sleep(1000); // anything still on its way to the watcher
      // Replayed as a door applies them: no index ever drops a link the door holds that stays live.
      const held = new Set<string>();
      let last: string[] | null = null;
      for (const m of watcher.seen) {
        if (m.topic === 'de/guest-link-index') {
          last = indexMessage(m.payload).ids;
          for (const id of held) if (expected.includes(id)) expect(last, `index ${JSON.stringify(last)} drops live link ${id}`).toContain(id);
          continue;
        }
        const id = /^de\/guest-links\/(.+)$/.exec(m.topic)?.[1];
        if (id === undefined) continue;
        if (linkMessage(id, m.payload).kind === 'link') held.add(id);
        else held.delete(id);
      }
      expect(last).toEqual(expected);
      expect([...held].sort((a, b) => Number(a) - Number(b))).toEqual(expected);
    } finally {
      await watcher.close();
      await p.close();
      await db.close();
    }
  }, 60_000);

  it('signs every live link and revocation again on its own schedule (daily), so doors keep them within guestLinkMaxAgeSeconds', async () => {
    const db = await newDb('resign');
    const p = await serviceProcess(db, { prefix: 'dc', signed: true, resignIntervalMs: 1000 });
    try {
      const kept = await createLink(p, 'Kept', ['kept@example.org']);
      const gone = await createLink(p, 'Gone', ['gone@example.org']);
      await removeUser(p, 'gone@example.org');
      await retainedWhen(`dc/guest-links/${gone.id}`, revoked(gone.id), 'the tombstone retained');
      await queueEmpty(db);
      // Nothing is owed now: what comes next is the schedule's doing.
      const first = await retainedWhen(`dc/guest-links/${kept.id}`, live(kept.id), 'the link retained');
      const firstTombstone = await retainedWhen(`dc/guest-links/${gone.id}`, revoked(gone.id), 'the tombstone retained');
      await retainedWhen(`dc/guest-links/${kept.id}`, live(kept.id, first.issuedAt!), 'the link signed again');
      await retainedWhen(`dc/guest-links/${gone.id}`, revoked(gone.id, firstTombstone.issuedAt!), 'the tombstone signed again');
    } finally {
      await p.close();
      await db.close();
    }
  }, 60_000);
});

describe('what the service sends again when it connects to the broker', () => {
  for (const signed of [false, true]) {
    it(signed
      ? 'signed: every stored lockdown, active or ended, newly issued'
      : 'unsigned: only an active lockdown, so an ended one never lifts a lockdown started on the broker since', async () => {
      const prefix = signed ? 'rs' : 'ru';
      const secret = signed ? SECRET : null;
      const db = await newDb(prefix);
      const p = await serviceProcess(db, { prefix, signed });
      const doorTopic = `${prefix}/doors/${DOOR_UUID}/lockdown`;
      const lobbyTopic = `${prefix}/agents/lobby/lockdown`;
      try {
        await p.call('POST', '/lockdown', { active: true, uuid: DOOR_UUID });
        await p.call('POST', '/lockdown', { active: true, agent_id: 'lobby' });
        await p.call('POST', '/lockdown', { active: false, agent_id: 'lobby' });
        const doorBefore = await retainedWhen(doorTopic, (b) => lockdownMessage(DOOR, b, secret), 'the door lockdown retained');
        const lobbyBefore = await retainedWhen(
          lobbyTopic,
          (b) => (lockdownMessage(LOBBY, b, secret).body.lockdown ? undefined : lockdownMessage(LOBBY, b, secret)),
          'the lobby lockdown ended',
        );
        await queueEmpty(db);
        // The broker loses the door's message; unsigned, Home Assistant locks the lobby down on the broker.
        const other = await mqtt.connectAsync(broker.url);
        await other.publishAsync(doorTopic, '', { qos: 1, retain: true });
        if (signed) await other.publishAsync(lobbyTopic, '', { qos: 1, retain: true });
        else await other.publishAsync(lobbyTopic, JSON.stringify({ lockdown: true, by: 'home-assistant' }), { qos: 1, retain: true });
        await other.endAsync();
        await broker.stop();
        await broker.start();
        const door = await retainedWhen(doorTopic, (b) => lockdownMessage(DOOR, b, secret), 'the door lockdown sent again');
        expect(door.body.lockdown).toBe(true);
        if (signed) {
          expect(door.issuedAt!).toBeGreaterThan(doorBefore.issuedAt!);
          const lobby = await retainedWhen(lobbyTopic, (b) => lockdownMessage(LOBBY, b, secret), 'the ended lobby lockdown sent again');
          expect(lobby.body.lockdown).toBe(false);
          expect(lobby.issuedAt!).toBeGreaterThan(lobbyBefore.issuedAt!);
        } else {
          await queueEmpty(db);
          expect(JSON.parse(String(await retained(lobbyTopic)))).toEqual({ lockdown: true, by: 'home-assistant' });
        }
      } finally {
        await p.close();
        await db.close();
      }
    }, 120_000);
  }
});

describe('a guest link the broker retains but the database does not (the database restored from a backup)', () => {
  for (const signed of [false, true]) {
    it(`${signed ? 'signed' : 'unsigned'}: revoked at the start and at a reconnect (its tombstone retained, listed as revoked, its id never given again); a live link left alone`, async () => {
      const prefix = signed ? 'bs' : 'bu';
      const secret = signed ? SECRET : null;
      const db = await newDb(prefix);
      let p = await serviceProcess(db, { prefix, signed });
      const warnings: Array<{ guestLink?: string; msg: string }> = [];
      /** What a restore leaves: the broker retains link `id`, made after the backup, that the database never heard of. */
      const leftAtTheBroker = async (id: string) => {
        const link = Object.assign({}, (await storedLinks(db))[0], { magic_link_id: id, magic_token: `a-token-made-after-the-backup-${id}` });
        const other = await mqtt.connectAsync(broker.url);
        await other.publishAsync(`${prefix}/guest-links/${id}`, guestLinkPayload(link, secret, Math.floor(Date.now() / 1000)), { qos: 1, retain: true });
        await other.endAsync();
        expect(linkMessage(id, (await retained(`${prefix}/guest-links/${id}`))!, secret).kind).toBe('link');
      };
      /** Its tombstone retained: signed, a revocation; unsigned, the empty message, so the broker holds nothing there. */
      const tombstoned = async (id: string) => {
        const topic = `${prefix}/guest-links/${id}`;
        if (signed) await retainedWhen(topic, (b) => (linkMessage(id, b, secret).kind === 'revoke' ? true : undefined), `the signed tombstone of ${id}`);
        else await waitUntil(async () => (await retained(topic)) === null, 30_000, `the retained link ${id} cleared (its empty tombstone)`);
      };
      const warned = () => warnings.filter((w) => w.guestLink !== undefined);
      const warning = (id: string) =>
        expect.objectContaining({
          guestLink: id,
          msg: `guest link ${id} is retained at the broker but not in the database (the database restored from a backup, or replaced): revoked so no door keeps it and its id is not given again`,
        });
      try {
        // A link the database keeps, published and retained.
        const kept = await createLink(p, 'Kept', ['kept@example.org']);
        expect(kept.id).toBe('1');
        await retainedWhen(`${prefix}/guest-links/1`, (b) => (linkMessage('1', b, secret).kind === 'link' ? true : undefined), 'the kept link retained');
        await queueEmpty(db);
        await p.close();
        await leftAtTheBroker('7');

        const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as { guestLink?: string; msg: string }) });
        p = await serviceProcess(db, { prefix, signed, logger });
        await tombstoned('7');
        expect(await revokedLinkIds(db)).toEqual(['7']);
        expect(warned()).toEqual([warning('7')]);
        // The live link is still live, at the broker and in the database.
        expect(linkMessage('1', (await retained(`${prefix}/guest-links/1`))!, secret)).toMatchObject({ kind: 'link', link: { magic_token: kept.token } });
        expect((await storedLinks(db)).map((l) => l.magic_link_id)).toEqual(['1']);
        // The next link is given an id past the revoked one.
        const next = await createLink(p, 'Next', ['next@example.org']);
        expect(Number(next.id)).toBeGreaterThan(7);
        await queueEmpty(db);

        // Another one the broker holds: found when the service connects to the broker again.
        await leftAtTheBroker('20');
        await broker.stop();
        await broker.start();
        await tombstoned('20');
        expect(await revokedLinkIds(db)).toEqual(['7', '20']);
        expect(warned()).toEqual([warning('7'), warning('20')]);
        expect(linkMessage(next.id, (await retained(`${prefix}/guest-links/${next.id}`))!, secret).kind).toBe('link');
      } finally {
        await p.close();
        await db.close();
      }
    }, 120_000);
  }
});

describe('one publisher among the service processes', () => {
  it('a process that does not hold the publisher lock sends nothing and leaves the rows; once it holds it, it sends them and everything', async () => {
    const db = await newDb('follower');
    // The lock is held elsewhere: on PostgreSQL by another process's real lock, which it lets go later.
    let holder: AdvisoryLockLeadership | undefined;
    let leadership: Leadership;
    if (db.engine === 'postgres') {
      holder = new AdvisoryLockLeadership((db as PostgresDb).connection, log, 200);
      await holder.start();
      expect(holder.leading).toBe(true);
      leadership = new AdvisoryLockLeadership((db as PostgresDb).connection, log, 200);
      await (leadership as AdvisoryLockLeadership).start();
    } else leadership = new HeldElsewhere();
    expect(leadership.leading).toBe(false);
    const p = await serviceProcess(db, { prefix: 'df', signed: true, leadership, holidays: ['2026-12-25'] });
    try {
      const { id } = await createLink(p, 'Visitor', ['visitor@example.org']);
      await p.call('POST', '/lockdown', { active: true, agent_id: 'lobby' });
      await waitUntil(() => p.mqtt.connected, 15_000, 'connected to the broker');
      await sleep(3000);
      expect(await retained('df/#')).toBeNull();
      const waiting = await owed(db);
      expect(waiting).toContain(`link:${id}`);
      expect(waiting).toContain('lockdown:agent:lobby');
      // The other process lets the lock go (stops): this one takes over.
      if (holder) await holder.close();
      else (leadership as HeldElsewhere).release();
      await retainedWhen(`df/guest-links/${id}`, live(id), 'the link sent by the new publisher');
      await retainedWhen('df/guest-link-index', indexListing([id]), 'the index');
      await retainedWhen('df/agents/lobby/lockdown', (b) => (lockdownMessage(LOBBY, b).body.lockdown ? true : undefined), 'the lockdown');
      // Never owed by a change: sent as part of everything.
      const holidays = await retainedWhen(
        'df/holidays',
        (b) => {
          const parsed = parseHolidaysMessage(b, SECRET);
          return isRetainedRefusal(parsed) || parsed.kind !== 'set' ? undefined : parsed.body.dates;
        },
        'the holidays',
      );
      expect(holidays).toEqual(['2026-12-25']);
      expect(await retained('df/directory/revision')).not.toBeNull();
      await queueEmpty(db);
    } finally {
      await p.close();
      await holder?.close();
      await db.close();
    }
  }, 60_000);

  it("a link's issued_at keeps increasing when another process takes over, even one whose clock is behind", async () => {
    const db = await newDb('takeover');
    const watcher = await watch('dt/#');
    let first: ServiceProcess | undefined;
    let second: ServiceProcess | undefined;
    try {
      first = await serviceProcess(db, { prefix: 'dt', signed: true });
      const { id } = await createLink(first, 'Visitor', ['visitor@example.org']);
      await first.call('POST', '/lockdown', { active: true, agent_id: 'lobby' });
      const before = await retainedWhen(`dt/guest-links/${id}`, live(id), 'the link from the first publisher');
      await retainedWhen('dt/guest-link-index', indexListing([id]), 'the index from the first publisher');
      await queueEmpty(db);
      await first.close();
      first = undefined;
      // The next publisher's clock is an hour behind: what it sends must still be newer than what the doors hold.
      second = await serviceProcess(db, { prefix: 'dt', signed: true, clock: { wallNow: () => Date.now() - 3600_000, monoNow: () => performance.now() } });
      const after = await retainedWhen(`dt/guest-links/${id}`, live(id, before.issuedAt!), 'the link from the second publisher');
      expect(after.issuedAt!).toBeGreaterThan(before.issuedAt!);
      await queueEmpty(db);
      await sleep(1000);
      // A door watching all along never saw an older issued_at on any topic.
      const last = new Map<string, number>();
      for (const m of watcher.seen) {
        if (m.payload.length === 0 || m.topic.endsWith('/directory/revision')) continue;
        const issuedAt = (JSON.parse(m.payload.toString()) as { issued_at?: number }).issued_at ?? 0;
        expect(issuedAt, m.topic).toBeGreaterThanOrEqual(last.get(m.topic) ?? 0);
        last.set(m.topic, issuedAt);
      }
      expect(last.size).toBeGreaterThanOrEqual(3); // the link, the index, the lockdown
    } finally {
      await watcher.close();
      await first?.close();
      await second?.close();
      await db.close();
    }
  }, 60_000);
});

describeOn('postgres', 'the publish queue on PostgreSQL, where ids are not handed out in commit order', () => {
  it('a change that commits while the publisher sends a later row is still sent (its row is not deleted with the later one)', async () => {
    const db = await newDb('commitorder');
    const p = await serviceProcess(db, { prefix: 'dq', signed: true });
    const watcher = await watch('dq/guest-links/+');
    try {
      // Enough live links that sending everything takes a while.
      const links: string[] = [];
      for (let n = 0; n < 30; n++) links.push((await createLink(p, `Visitor ${n}`, [`guest${n}@example.org`])).id);
      await queueEmpty(db);
      const victim = links[0]!;
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let owedInside!: () => void;
      const rowTaken = new Promise<void>((resolve) => {
        owedInside = resolve;
      });
      // A revocation whose transaction takes its queue row first and commits late (another process, a slow request).
      const revocation = db.transaction(async () => {
        await db.run('DELETE FROM guest_links WHERE magic_link_id = ?', [Number(victim)]);
        await db.run('INSERT INTO revoked_guest_links (magic_link_id, revoked_at) VALUES (?, ?)', [Number(victim), Date.now()]);
        await p.queue.owe('link', victim);
        owedInside();
        await gate;
      });
      await rowTaken;
      const seenBefore = watcher.seen.length;
      await p.queue.owe('all'); // a later row, committed at once: the publisher starts sending everything
      await waitUntil(() => watcher.seen.length > seenBefore, 15_000, 'the publisher sending everything');
      release(); // the revocation commits while everything is being sent
      await revocation;
      await retainedWhen(`dq/guest-links/${victim}`, revoked(victim), 'the revocation sent', 20_000);
      await queueEmpty(db);
    } finally {
      await watcher.close();
      await p.close();
      await db.close();
    }
  }, 120_000);
});
