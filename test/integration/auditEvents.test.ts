import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectAsync, type MqttClient } from 'mqtt';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResendRequest } from '../../src/protocol/auditResend.js';
import type { MqttOptions } from '../../src/protocol/options.js';
import { openStateDatabase, statePath } from '../../src/store/database.js';
import { EventLog } from '../../src/store/eventLog.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { GapWatch } from '../../src/service/audit/chainGaps.js';
import { GapRequests } from '../../src/service/audit/gapRequests.js';
import { EventIngest } from '../../src/service/audit/eventIngest.js';
import { AuditEventStore, type ChainRow } from '../../src/service/audit/eventStore.js';
import { Retention } from '../../src/service/audit/retention.js';
import { StoredEvents } from '../../src/service/audit/storedEvents.js';
import { startService, type RunningService } from '../../src/service/root.js';
import { SoleLeader } from '../../src/service/sql/leadership.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { type Clock, systemClock } from '../../src/util/clock.js';
import { WireChain } from '../support/auditWire.js';
import { type Cleanups, connectOperator, startDaemon } from '../support/agentSite.js';
import { DOOR_UUID, runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { ManualTime } from '../support/manualTime.js';
import { Mosquitto } from '../support/mosquitto.js';
import { testService } from '../support/serviceApp.js';
import { newServiceDb, type TestDbLocation } from '../support/serviceDb.js';
import { waitUntil } from '../support/wait.js';

// The service keeps every agent's audit events (docs/audit.md, "Where events are kept"): taken off a real
// mosquitto on a persistent session of the service's own, acknowledged only once committed, stored once however
// often they come, their gaps found and closed, old ones deleted by retention, and read back through the API.
// On SQLite and, in the postgres project, on PostgreSQL.

const tmp = tempDir('door-agent-audit-events-');
/** Keeps sessions and their queued messages (the service's session outlives the service). */
const broker = new Mosquitto(join(tmp.path, 'broker'), undefined, true);
let agent: MqttClient;
const silent = pino({ level: 'silent' });
const T0 = Date.parse('2026-11-02T08:00:00.000Z');
const OTHER_DOOR = '0b9a7c55-3e1d-4f0a-8a7b-5c6d7e8f9a0b';

beforeAll(async () => {
  await broker.start();
  agent = await connectAsync(broker.url, { protocolVersion: 5 });
});
afterAll(async () => {
  await agent?.endAsync();
  await broker.stop();
  tmp.cleanup();
});

let dirs = 0;
async function newDb(): Promise<SqlDb> {
  const dir = join(tmp.path, `db-${++dirs}`);
  mkdirSync(dir, { recursive: true });
  return (await newServiceDb(dir, 'audit')).db;
}

function mqttOptions(prefix: string): MqttOptions {
  return {
    url: broker.url,
    topicPrefix: prefix,
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

/** A topic prefix of the test's own (the broker and its sessions are shared by the file's tests). */
const newPrefix = () => `audit-${randomBytes(4).toString('hex')}`;

/** A service process's ingest on `db` with `clientId` (its session), connected and subscribed. */
async function ingest(db: SqlDb, prefix: string, clientId: string, options: { store?: AuditEventStore; clock?: Clock } = {}): Promise<EventIngest> {
  const taking = new EventIngest(
    mqttOptions(prefix),
    {},
    {
      clientId,
      store: options.store ?? new AuditEventStore(db),
      stored: new StoredEvents(),
      clock: options.clock ?? { wallNow: () => Date.now(), monoNow: () => performance.now() },
      logger: silent,
    },
  );
  await waitUntil(() => taking.connected, 10_000, 'the ingest connects');
  // The subscription is made on connect; a message published before its SUBACK would not be routed to it.
  await new Promise((r) => setTimeout(r, 200));
  return taking;
}

/** Publishes as the agent's outbox does: QoS 1 on P/doors/<door>/events. */
async function publish(prefix: string, ...events: Array<Record<string, unknown>>): Promise<void> {
  for (const event of events) await agent.publishAsync(`${prefix}/doors/${(event.door as string | null) ?? 'agent'}/events`, JSON.stringify(event), { qos: 1 });
}

const storedSeqs = (db: SqlDb, agentId: string) => db.column<number>('SELECT seq FROM audit_events WHERE agent_id = ? ORDER BY seq', [agentId]);

describe('the ingest', () => {
  it('stores an event the outbox sends twice once, keeps it as received, and drops a payload that does not parse', async () => {
    const db = await newDb();
    const prefix = newPrefix();
    const taking = await ingest(db, prefix, `svc-${prefix}`);
    try {
      const chain = new WireChain('board-1');
      const started = chain.start(T0);
      const granted = chain.add({ type: 'access_granted', door: DOOR_UUID, who: 'Ada Lovelace', holders: [{ email_id: 7 }], kind: 'card' }, T0 + 1000);
      await publish(prefix, started, granted, granted);
      // Not JSON, an id that does not end in its seq, a hash that is not one: acknowledged and dropped.
      await agent.publishAsync(`${prefix}/doors/${DOOR_UUID}/events`, '{"type":', { qos: 1 });
      await publish(prefix, Object.assign({}, granted, { id: 'board-1-9' }), Object.assign({}, granted, { seq: 3, id: 'board-1-3', hash: 'zz' }));
      await waitUntil(() => taking.counts.dropped === 3, 10_000, 'three payloads dropped');
      expect(taking.counts).toEqual({ stored: 2, duplicates: 1, dropped: 3 });
      const rows = await db.all<Record<string, unknown>>('SELECT * FROM audit_events ORDER BY seq');
      expect(rows).toHaveLength(2);
      expect(rows[1]).toMatchObject({
        agent_id: 'board-1',
        chain_id: chain.chain,
        seq: 2,
        at: T0 + 1000,
        door_uuid: DOOR_UUID,
        type: 'access_granted',
        person_id: 7,
        person: 'Ada Lovelace',
        hash: granted.hash,
        prev_hash: started.hash,
      });
      expect(JSON.parse(rows[1]!.body as string)).toEqual(granted);
      expect(await db.get('SELECT contiguous_seq, last_seq, gap_since FROM audit_chains')).toEqual({ contiguous_seq: 2, last_seq: 2, gap_since: null });
    } finally {
      await taking.close();
      await db.close();
    }
  });

  it('acknowledges an event only once it is committed: a service that dies holding one gets it again', async () => {
    const db = await newDb();
    const prefix = newPrefix();
    const clientId = `svc-${prefix}`;
    // A store that never commits: the process "dies" while it holds the event.
    let held = 0;
    const dying = { store: () => ((held += 1), new Promise<never>(() => undefined)) } as unknown as AuditEventStore;
    const first = await ingest(db, prefix, clientId, { store: dying });
    const chain = new WireChain('board-2');
    await publish(prefix, chain.start(T0));
    await waitUntil(() => held === 1, 10_000, 'the event reaches the service');
    // Killed: the connection drops with no PUBACK sent and no DISCONNECT.
    (first as unknown as { client: MqttClient }).client.end(true);
    const second = await ingest(db, prefix, clientId);
    try {
      await waitUntil(async () => (await storedSeqs(db, 'board-2')).length === 1, 10_000, 'the broker sends the event again');
      expect(second.counts.stored).toBe(1);
    } finally {
      await second.close();
      await db.close();
    }
  });

  it('a service stopped while the agent publishes gets every event when it starts again (its session outlives it)', async () => {
    const db = await newDb();
    const prefix = newPrefix();
    const clientId = `svc-${prefix}`;
    const chain = new WireChain('board-3');
    const first = await ingest(db, prefix, clientId);
    await publish(prefix, chain.start(T0));
    await waitUntil(async () => (await storedSeqs(db, 'board-3')).length === 1, 10_000, 'the first event');
    await first.close();
    for (let i = 1; i <= 20; i++) await publish(prefix, chain.add({ type: 'access_denied', door: DOOR_UUID, reason: 'not_found' }, T0 + i * 60_000));
    const again = await ingest(db, prefix, clientId);
    try {
      await waitUntil(async () => (await storedSeqs(db, 'board-3')).length === 21, 10_000, 'the events published while it was stopped');
      expect(await storedSeqs(db, 'board-3')).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
      expect(await db.get('SELECT contiguous_seq, last_seq FROM audit_chains')).toEqual({ contiguous_seq: 21, last_seq: 21 });
    } finally {
      await again.close();
      await db.close();
    }
  });

  it('two service processes on one database each take every event and store it once', async () => {
    const db = await newDb();
    const prefix = newPrefix();
    const one = await ingest(db, prefix, `svc-${prefix}-1`);
    const two = await ingest(db, prefix, `svc-${prefix}-2`);
    try {
      const chain = new WireChain('board-4');
      await publish(prefix, chain.start(T0));
      for (let i = 1; i <= 30; i++) await publish(prefix, chain.add({ type: 'door_opened', door: DOOR_UUID }, T0 + i));
      await waitUntil(() => one.counts.stored + one.counts.duplicates === 31 && two.counts.stored + two.counts.duplicates === 31, 10_000, 'both took all');
      expect(one.counts.stored + two.counts.stored).toBe(31);
      expect(await storedSeqs(db, 'board-4')).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
      expect(await db.get('SELECT contiguous_seq, last_seq, gap_since FROM audit_chains')).toEqual({ contiguous_seq: 31, last_seq: 31, gap_since: null });
    } finally {
      await one.close();
      await two.close();
      await db.close();
    }
  });
});

/** A logger whose lines the test reads. */
function listeningLogger(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

describe('gaps and retention', () => {
  it('a seq missing for gapSeconds while later ones came is logged once and listed, and closes when it comes', async () => {
    const db = await newDb();
    const prefix = newPrefix();
    const time = new ManualTime({ wall: T0 });
    const taking = await ingest(db, prefix, `svc-${prefix}`, { clock: time });
    const { logger, lines } = listeningLogger();
    const watch = new GapWatch({ db, gapSeconds: 300, clock: time, timers: time, logger });
    const app = testService(db, { clock: time, audit: { gapSeconds: 300, maxReportDays: 366 } });
    const key = await new ApiKeys(db).create('ADMIN', 0, Date.now());
    const chains = async () =>
      (await app.inject({ url: '/audit/chains', headers: { authorization: `Bearer ${key}` } })).json() as { chains: Array<Record<string, unknown>> };
    try {
      const chain = new WireChain('board-5');
      const events = [chain.start(T0)];
      for (let i = 1; i <= 6; i++) events.push(chain.add({ type: 'access_denied', door: DOOR_UUID, reason: 'schedule' }, T0 + i));
      // 3 and 4 do not come (yet).
      await publish(prefix, ...events.filter((e) => e.seq !== 3 && e.seq !== 4));
      await waitUntil(async () => (await storedSeqs(db, 'board-5')).length === 5, 10_000, 'five events');
      expect(await watch.check()).toBe(0);
      expect((await chains()).chains[0]).toMatchObject({ contiguous_seq: 2, last_seq: 7, gaps: [] });
      time.wall += 299_000;
      expect(await watch.check()).toBe(0);
      time.wall += 2000;
      expect(await watch.check()).toBe(1);
      expect(await watch.check()).toBe(0); // once
      expect(lines.filter((l) => l.msg === 'audit gap')).toEqual([
        expect.objectContaining({ level: 40, agent: 'board-5', chain: chain.chain, from: 3, to: 4 }),
      ]);
      expect((await chains()).chains[0]).toMatchObject({
        agent: 'board-5',
        chain: chain.chain,
        contiguous_seq: 2,
        last_seq: 7,
        gaps: [{ from: 3, to: 4, since: new Date(T0).toISOString() }],
      });
      // The outbox's resend (the agent's link came back) fills it.
      await publish(prefix, events[2]!, events[3]!);
      await waitUntil(async () => (await storedSeqs(db, 'board-5')).length === 7, 10_000, 'the missing events');
      expect((await chains()).chains[0]).toMatchObject({ contiguous_seq: 7, last_seq: 7, gaps: [] });
      expect(await db.get('SELECT gap_since, gap_reported_at FROM audit_chains')).toEqual({ gap_since: null, gap_reported_at: null });
    } finally {
      watch.close();
      await app.close();
      await taking.close();
      await db.close();
    }
  });

  it("the publisher asks the agent for a gap's events, in pieces of 10,000 seqs, and again every gapSeconds while it stays open", async () => {
    const db = await newDb();
    const store = new AuditEventStore(db);
    const { parseWireEvent } = await import('../../src/service/audit/wireEvent.js');
    const time = new ManualTime({ wall: T0 });
    const { logger, lines } = listeningLogger();
    const sent: Array<[string, ResendRequest]> = [];
    const leadership = { leading: false, onChange: () => undefined, close: async () => undefined };
    const requests = new GapRequests({
      db,
      gapSeconds: 300,
      leadership,
      send: async (agentId, request) => (sent.push([agentId, request]), true),
      clock: time,
      logger,
    });
    try {
      // Seqs 2 to 25,001 never came: a gap of 25,000 seqs.
      const chain = new WireChain('board-7');
      const first = chain.start(T0);
      const late = chain.add({ type: 'door_opened', door: DOOR_UUID }, T0 + 1);
      Object.assign(late, { seq: 25_002, id: 'board-7-25002' });
      for (const event of [first, late]) await store.store(parseWireEvent(Buffer.from(JSON.stringify(event))), T0);
      time.wall += 301_000;
      // Another process publishes: this one does not ask.
      expect(await requests.ask()).toBe(0);
      leadership.leading = true;
      expect(await requests.ask()).toBe(3);
      expect(sent).toEqual([
        ['board-7', { chain: chain.chain, from: 2, to: 10_001 }],
        ['board-7', { chain: chain.chain, from: 10_002, to: 20_001 }],
        ['board-7', { chain: chain.chain, from: 20_002, to: 25_001 }],
      ]);
      expect(lines.filter((l) => l.level === 30).map((l) => [l.msg, l.from])).toEqual([
        ['audit gap: the agent is asked to send the missing events again', 2],
        ['audit gap: the agent is asked to send the missing events again', 10_002],
        ['audit gap: the agent is asked to send the missing events again', 20_002],
      ]);
      // Not again before gapSeconds; then again, while the gap stays open.
      time.wall += 299_000;
      expect(await requests.ask()).toBe(0);
      time.wall += 1000;
      expect(await requests.ask()).toBe(3);
      expect(sent).toHaveLength(6);
    } finally {
      await db.close();
    }
  });

  it('retention deletes the events older than retentionDays once a day, and records it in the chain', async () => {
    const db = await newDb();
    const store = new AuditEventStore(db);
    const DAY = 86_400_000;
    const time = new ManualTime({ wall: T0 + 40 * DAY });
    const chain = new WireChain('board-6');
    const events = [chain.start(T0)];
    // One event a day for 40 days, an hour into each.
    for (let i = 1; i < 40; i++) events.push(chain.add({ type: 'door_opened', door: DOOR_UUID }, T0 + i * DAY + 3_600_000));
    const { parseWireEvent } = await import('../../src/service/audit/wireEvent.js');
    for (const event of events) await store.store(parseWireEvent(Buffer.from(JSON.stringify(event))), T0);
    const retention = new Retention({ db, store, retentionDays: 30, leadership: new SoleLeader(), clock: time, timers: time, logger: silent });
    try {
      retention.start();
      time.advance(1); // the run at start
      await waitUntil(async () => (await storedSeqs(db, 'board-6')).length < 40, 10_000, 'the first run');
      // Older than 30 days at T0 + 40 days: the events of days 0-9.
      expect((await storedSeqs(db, 'board-6'))[0]).toBe(11);
      expect(await db.get('SELECT pruned_through_seq, contiguous_seq FROM audit_chains')).toEqual({ pruned_through_seq: 10, contiguous_seq: 40 });
      // A resend of a deleted event is not kept again.
      expect((await store.store(parseWireEvent(Buffer.from(JSON.stringify(events[0]))), time.wall)).stored).toBe(false);
      // A day later, the next run: day 10 goes too.
      await waitUntil(() => time.pendingCount === 1, 10_000, 'the next run scheduled');
      time.advance(DAY);
      await waitUntil(async () => (await storedSeqs(db, 'board-6'))[0] === 12, 10_000, 'the next day');
      expect(await db.value('SELECT pruned_through_seq FROM audit_chains')).toBe(11);
    } finally {
      retention.close();
      await db.close();
    }
  });
});

describe('the API', () => {
  it('GET /events filters by door, person, type, reason, agent, area and time, newest first, a page at a time', async () => {
    const db = await newDb();
    const store = new AuditEventStore(db);
    const { parseWireEvent } = await import('../../src/service/audit/wireEvent.js');
    const a = new WireChain('board-a');
    const b = new WireChain('board-b');
    const made = [
      a.start(T0),
      a.add({ type: 'access_granted', door: DOOR_UUID, who: 'Ada', holders: [{ email_id: 7 }], passages: [{ area: 'lab' }] }, T0 + 1000),
      a.add({ type: 'access_denied', door: DOOR_UUID, reason: 'schedule', holders: [{ email_id: 7 }] }, T0 + 2000),
      b.start(T0 + 500),
      b.add({ type: 'access_denied', door: OTHER_DOOR, reason: 'not_found' }, T0 + 86_400_000),
      b.add({ type: 'access_granted', door: OTHER_DOOR, who: 'Grace', holders: [{ email_id: 8 }] }, T0 + 86_400_000 + 1000),
    ];
    for (const event of made) await store.store(parseWireEvent(Buffer.from(JSON.stringify(event))), T0);
    const app = testService(db);
    const keys = new ApiKeys(db);
    const admin = `Bearer ${await keys.create('ADMIN', 0, Date.now())}`;
    const door = `Bearer ${await keys.create('DOOR', 0, Date.now())}`;
    const regular = `Bearer ${await keys.create('REGULAR', 0, Date.now())}`;
    const get = async (url: string, authorization = admin) => {
      const answer = await app.inject({ url, headers: { authorization } });
      return { status: answer.statusCode, body: answer.json() as Record<string, unknown> & { events: Array<Record<string, unknown>> } };
    };
    const ids = async (query: string) => (await get(`/events?${query}`)).body.events.map((e) => e.id);
    try {
      const all = await get('/events');
      expect(all.body.events.map((e) => e.id)).toEqual(['board-b-3', 'board-b-2', 'board-a-3', 'board-a-2', 'board-b-1', 'board-a-1']);
      expect(all.body.events[0]).toMatchObject(Object.assign({}, made[5], { agent: 'board-b', event_id: expect.any(Number) }));
      expect(all.body.next_before).toBeNull();
      expect(await ids(`door=${DOOR_UUID.toUpperCase()}`)).toEqual(['board-a-3', 'board-a-2']);
      expect(await ids('person=7')).toEqual(['board-a-3', 'board-a-2']);
      expect(await ids('type=access_denied')).toEqual(['board-b-2', 'board-a-3']);
      expect(await ids('type=access_denied,access_granted&agent=board-b')).toEqual(['board-b-3', 'board-b-2']);
      expect(await ids('reason=not_found')).toEqual(['board-b-2']);
      expect(await ids('area=lab')).toEqual(['board-a-2']);
      expect(await ids('from=2026-11-03')).toEqual(['board-b-3', 'board-b-2']);
      expect(await ids('to=2026-11-02')).toHaveLength(4); // a date as `to` takes the whole day
      expect(await ids(`from=${encodeURIComponent(new Date(T0 + 1000).toISOString())}&to=${encodeURIComponent(new Date(T0 + 2000).toISOString())}`)).toEqual([
        'board-a-2',
      ]);
      // Paging: two at a time, each page from where the last stopped.
      const seen: unknown[] = [];
      let before: number | null = null;
      do {
        const page = await get(`/events?limit=2${before === null ? '' : `&before=${before}`}`);
        expect(page.body.events.length).toBeLessThanOrEqual(2);
        seen.push(...page.body.events.map((e) => e.id));
        before = page.body.next_before as number | null;
      } while (before !== null);
      expect(seen).toEqual(all.body.events.map((e) => e.id));
      // Bad input: 400 naming the parameter.
      for (const [query, named] of [
        ['from=2026-11-05&to=2026-11-01', 'to'],
        ['limit=0', 'limit'],
        ['limit=1001', 'limit'],
        ['person=ada', 'person'],
        ['from=yesterday', 'from'],
        ['type=Access%20granted', 'type'],
        ['dor=x', 'dor'],
        ['before=999999', 'before'],
      ] as const) {
        const answer = await get(`/events?${query}`);
        expect(answer.status, query).toBe(400);
        expect(String(answer.body.error), query).toMatch(new RegExp(`^${named}\\b`));
      }
      expect((await get('/events', regular)).status).toBe(403);
      expect((await get('/events', door)).status).toBe(403);
      // The hashes a board's `audit verify` reads: a DOOR key or ADMIN, in seq order, a page at a time.
      const hashes = await get(`/audit/agents/board-a/hashes?chain=${a.chain}&limit=2`, door);
      expect(hashes.body).toEqual({
        agent: 'board-a',
        chain: a.chain,
        records: [
          { seq: 1, hash: made[0]!.hash },
          { seq: 2, hash: made[1]!.hash },
        ],
        next_after: 2,
      });
      expect((await get(`/audit/agents/board-a/hashes?chain=${a.chain}&after=2`)).body).toMatchObject({ records: [{ seq: 3 }], next_after: null });
      expect((await get(`/audit/agents/board-a/hashes?chain=${a.chain}&limit=10001`)).status).toBe(400);
      expect((await get(`/audit/agents/board-a/hashes?chain=${a.chain}`, regular)).status).toBe(403);
    } finally {
      await app.close();
      await db.close();
    }
  });
});

describe('door-agent service audit verify', () => {
  it('finds an edited and a deleted row of audit_events; retention and a gap not received are told apart', async () => {
    const dir = join(tmp.path, `verify-${++dirs}`);
    mkdirSync(dir, { recursive: true });
    const { db, location } = await newServiceDb(dir, 'service'); // SQLite: dataDir/service.db, as the service opens it
    const store = new AuditEventStore(db);
    const { parseWireEvent } = await import('../../src/service/audit/wireEvent.js');
    const front = new WireChain('front');
    const back = new WireChain('back');
    const events = [front.start(T0), back.start(T0)];
    for (let i = 1; i <= 9; i++) {
      events.push(front.add({ type: 'access_granted', door: DOOR_UUID, who: `person ${i}`, holders: [{ email_id: i }] }, T0 + i * 1000));
      events.push(back.add({ type: 'door_opened', door: OTHER_DOOR }, T0 + i * 1000));
    }
    // back's seq 10 never comes (a gap, not a deletion).
    for (const event of events.filter((e) => !(e.id === 'back-10'))) await store.store(parseWireEvent(Buffer.from(JSON.stringify(event))), T0);
    const config = join(dir, 'config.yaml');
    writeFileSync(
      config,
      `server:\n  listen: 127.0.0.1:0\n  dataDir: ${dir}\n${
        location.engine === 'postgres' ? `  database: { url: "${location.url}", passwordFile: ${location.passwordFile} }\n` : ''
      }`,
    );
    const verify = (...args: string[]) => runCliAsync(['service', 'audit', 'verify', '--config', config, ...args]);
    try {
      const whole = await verify('--agent', 'front');
      expect(whole.stdout).toBe('intact: 10 records of agent front checked, 0 deleted by retention\n');
      expect(whole.status).toBe(0);
      // A gap at the service is said as one, not as a deletion.
      await store.store(parseWireEvent(Buffer.from(JSON.stringify(back.add({ type: 'door_closed', door: OTHER_DOOR }, T0 + 20_000)))), T0);
      const gap = await verify('--agent', 'back', '--json');
      expect(gap.status).toBe(1);
      expect((JSON.parse(gap.stdout) as { findings: unknown[] }).findings).toEqual([
        expect.objectContaining({ kind: 'gap', agent: 'back', seq: 10, toSeq: 10 }),
      ]);

      // Someone with the database's password changes who went through and deletes a passage.
      const body5 = await db.value<string>("SELECT body FROM audit_events WHERE agent_id = 'front' AND seq = 5");
      await db.run("UPDATE audit_events SET body = ? WHERE agent_id = 'front' AND seq = 5", [body5!.replace('person 4', 'person 99')]);
      await db.run("DELETE FROM audit_events WHERE agent_id = 'front' AND seq = 7");
      const edited = await verify('--agent', 'front');
      expect(edited.status).toBe(1);
      const lines = edited.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^edited: seq 5 \(2026-11-02T08:00:04\.000Z\), agent front, chain [0-9a-f-]+: /);
      expect(lines[1]).toMatch(/^deleted: seq 7, agent front, chain [0-9a-f-]+: /);
      expect(lines.at(-1)).toMatch(/^\d+ findings: 9 records of agent front checked/);

      // Retention's deletions are not findings: they are recorded in the chain (pruned_through_seq). Records older
      // than 30 days at T0 + 30 days + 5.5 s: seqs 1-6 of each chain (the edited seq 5 with them); seq 7, deleted
      // although younger, is still one.
      const time = new ManualTime({ wall: T0 + 30 * 86_400_000 + 5500 });
      const retention = new Retention({ db, store, retentionDays: 30, leadership: new SoleLeader(), clock: time, timers: time, logger: silent });
      expect(await retention.prune()).toBe(12);
      const pruned = await verify();
      expect(pruned.status).toBe(1);
      expect(pruned.stdout.trim().split('\n')).toEqual([
        expect.stringMatching(/^gap: seq 10, agent back, chain /),
        expect.stringMatching(/^deleted: seq 7, agent front, chain /),
        '2 findings: 7 records of 2 agents checked, 12 deleted by retention',
      ]);
    } finally {
      await db.close();
    }
  });
});

/**
 * The service as `door-agent service` starts it (service/root.ts), on the test's database, with the file's broker and
 * prefix, server.audit.gapSeconds at the schema's least (10), and an events session that outlives a restart.
 */
function startRestoredService(location: TestDbLocation, dataDir: string, prefix: string, logger: pino.Logger): Promise<RunningService> {
  return startService(
    {
      server: {
        listen: '127.0.0.1:0',
        dataDir,
        lockReplyTimeoutSeconds: 5,
        resources: [],
        ...(location.engine === 'postgres' ? { database: { url: location.url, passwordFile: location.passwordFile, maxConnections: 4 } } : {}),
        audit: { clientId: `svc-${prefix}`, gapSeconds: 10, maxReportDays: 366 },
      },
      mqtt: mqttOptions(prefix),
    },
    { clock: systemClock, logger, env: {} },
  );
}

describe('a real agent', () => {
  it('whose broker link was down for a week delivers its backlog in order, and the service has every seq, chained', async () => {
    const db = await newDb();
    const prefix = newPrefix();
    const dir = join(tmp.path, `agent-${++dirs}`);
    mkdirSync(dir, { recursive: true });
    const config = writeConfig(dir, {
      id: 'week',
      access: '{ groups: [Staff] }',
      extra: `mqtt:\n  url: "${broker.url}"\n  topicPrefix: ${prefix}\n  keepaliveSeconds: 5\n`,
    });
    expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
    // The week the broker was out of reach: 700 refusals in the agent's log, a hundred a day, none published.
    const weekAgo = Date.now() - 7 * 86_400_000;
    const state = openStateDatabase(statePath(join(dir, 'data')));
    const log = new EventLog(state, { agentId: 'week', maxEvents: 1000, keepUnpublished: true });
    state.transaction(() => {
      for (let i = 0; i < 700; i++)
        log.append({ type: 'access_denied', door: DOOR_UUID, at: weekAgo + i * 864_000, data: { reason: 'not_found', hint: `…${i}` } });
    })();
    state.close();
    const taking = await ingest(db, prefix, `svc-${prefix}`);
    const cleanups: Cleanups = [];
    try {
      // The link is back: the daemon's outbox sends the backlog, then its own events (start-up, link).
      await startDaemon(config, cleanups);
      await waitUntil(
        async () => ((await db.value<number>("SELECT count(*) FROM audit_events WHERE agent_id = 'week' AND type = 'access_denied'")) ?? 0) === 700,
        60_000,
        'the backlog',
      );
      const rows = await db.all<{ seq: number; chain_id: string; hash: string | null; at: number }>(
        "SELECT seq, chain_id, hash, at FROM audit_events WHERE agent_id = 'week' ORDER BY event_id",
      );
      // In the order the agent wrote them, every seq from its first.
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: rows.length }, (_, i) => rows[0]!.seq + i));
      expect(rows[0]!.seq).toBe(1);
      const denied = rows.filter((r) => r.at < weekAgo + 700 * 864_000);
      expect(denied[0]!.at).toBe(weekAgo);
      expect(new Set(rows.map((r) => r.chain_id)).size).toBe(1);
      expect(rows.every((r) => /^[0-9a-f]{64}$/.test(r.hash ?? ''))).toBe(true);
      const chain = await db.get<{ contiguous_seq: number; last_seq: number; gap_since: number | null }>(
        "SELECT contiguous_seq, last_seq, gap_since FROM audit_chains WHERE agent_id = 'week'",
      );
      // Read after the rows: the daemon may have published one more since (its start-up goes on), never a hole.
      expect(chain?.gap_since).toBeNull();
      expect(chain?.contiguous_seq).toBe(chain?.last_seq);
      expect(chain?.last_seq).toBeGreaterThanOrEqual(rows.at(-1)!.seq);
    } finally {
      for (const stop of cleanups.reverse()) await stop();
      await taking.close();
      await db.close();
    }
  }, 90_000);
  it('after a restore of its database the service asks for the events it lost, the agent sends them again, and the gap closes', async () => {
    const dir = join(tmp.path, `restore-${++dirs}`);
    mkdirSync(join(dir, 'agent'), { recursive: true });
    const { db, location } = await newServiceDb(dir, 'service'); // SQLite: dataDir/service.db, as the service opens it
    const prefix = newPrefix();
    const config = writeConfig(join(dir, 'agent'), {
      id: 'restored',
      access: '{ groups: [Staff] }',
      extra: `mqtt:\n  url: "${broker.url}"\n  topicPrefix: ${prefix}\n  keepaliveSeconds: 5\n`,
    });
    expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
    const { logger, lines } = listeningLogger();
    const cleanups: Cleanups = [];
    let service: RunningService | null = null;
    const chainRow = () => db.get<ChainRow>("SELECT * FROM audit_chains WHERE agent_id = 'restored'");
    const stored = () => db.column<number>("SELECT seq FROM audit_events WHERE agent_id = 'restored' ORDER BY seq");
    try {
      // The service with a short gapSeconds (the schema's least), its events session kept across its restart.
      const start = () => startRestoredService(location, dir, prefix, logger);
      service = await start();
      const daemon = await startDaemon(config, cleanups);
      const watcher = await connectOperator(broker.url, cleanups, [`${prefix}/doors/+/events`]);
      /** Unlocks and locks the front door `times` times over MQTT: two events each; resolves once the agent published them. */
      let toggles = 0;
      const toggle = async (times: number) => {
        for (let i = 0; i < times; i++) {
          toggles++;
          await agent.publishAsync(`${prefix}/doors/${DOOR_UUID}/set`, JSON.stringify({ lock_state: false, request_id: `u${toggles}` }), { qos: 1 });
          await agent.publishAsync(`${prefix}/doors/${DOOR_UUID}/set`, JSON.stringify({ lock_state: true, request_id: `l${toggles}` }), { qos: 1 });
        }
        await waitUntil(
          () =>
            watcher.received.filter((m) => {
              const event = m.json as { type?: string; cause?: string } | null;
              return event?.type === 'locked' && event.cause?.startsWith('remote command') === true;
            }).length === toggles,
          20_000,
          `${toggles} locks published`,
        );
      };
      await toggle(2);
      await waitUntil(async () => (await chainRow())?.contiguous_seq === (await stored()).at(-1), 20_000, 'the first events stored');
      // The backup: the database as it is now.
      const backup = (await chainRow())!;
      const backupSeq = backup.contiguous_seq;
      await toggle(3);
      await waitUntil(async () => ((await chainRow())?.contiguous_seq ?? 0) >= backupSeq + 6, 20_000, 'the events after the backup stored');
      const lostThrough = (await chainRow())!.contiguous_seq;
      await service.stop();
      service = null;
      // The restore: what was stored after the backup is gone, the chain's row is the backup's.
      await db.run("DELETE FROM audit_events WHERE agent_id = 'restored' AND seq > ?", [backupSeq]);
      await db.run(
        "UPDATE audit_chains SET contiguous_seq = ?, last_seq = ?, last_at = ?, gap_since = NULL, gap_reported_at = NULL WHERE agent_id = 'restored'",
        [backup.contiguous_seq, backup.last_seq, backup.last_at],
      );
      // The agent goes on while the service is down: its session at the broker keeps these.
      await toggle(2);
      service = await start();
      // The events kept by the broker come: seqs past the hole, a gap from the backup's last to the restore.
      await waitUntil(async () => ((await chainRow())?.last_seq ?? 0) >= lostThrough + 4, 20_000, 'the events sent during the restore');
      expect((await chainRow())?.contiguous_seq).toBe(backupSeq);
      // gapSeconds later: the gap is reported, the agent asked, its events sent again; the gap closes.
      await waitUntil(async () => (await chainRow())?.gap_since === null, 40_000, 'the gap closes');
      const gap = { agent: 'restored', from: backupSeq + 1, to: lostThrough };
      expect(lines.filter((l) => l.msg === 'audit gap')).toEqual([expect.objectContaining(Object.assign({ level: 40 }, gap))]);
      expect(lines.filter((l) => l.msg === 'audit gap: the agent is asked to send the missing events again')).toEqual([
        expect.objectContaining(Object.assign({ level: 30, chain: backup.chain_id }, gap)),
      ]);
      expect(lines.filter((l) => l.msg === 'audit gap closed')).toEqual([expect.objectContaining({ agent: 'restored', chain: backup.chain_id })]);
      await daemon.waitForMessage('the service asked for audit events again: they are sent again');
      // Every seq of the agent, each stored once, chained as the agent wrote it.
      const last = (await chainRow())!;
      expect(last.contiguous_seq).toBe(last.last_seq);
      expect(await stored()).toEqual(Array.from({ length: last.last_seq }, (_, i) => i + 1));
      const hashes = await db.all<{ prev_hash: string; hash: string }>("SELECT prev_hash, hash FROM audit_events WHERE agent_id = 'restored' ORDER BY seq");
      for (let i = 1; i < hashes.length; i++) expect(hashes[i]!.prev_hash).toBe(hashes[i - 1]!.hash);
    } finally {
      for (const stop of cleanups.reverse()) await stop();
      await service?.stop();
      await db.close();
    }
  }, 120_000);
});
