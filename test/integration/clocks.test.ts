import { join } from 'node:path';
import type { IPublishPacket, MqttClient } from 'mqtt';
import { pino, type Logger } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { guestLinkSchema } from '../../src/api/shapes.js';
import { parseConfig } from '../../src/config/load.js';
import { CLOCK_TRUSTED_FROM } from '../../src/core/decision.js';
import type { Level } from '../../src/core/relay.js';
import { AccessChecker } from '../../src/door/accessChecker.js';
import { LockController } from '../../src/door/lockController.js';
import { Lockdowns } from '../../src/door/lockdowns.js';
import { BrokerRefusals } from '../../src/mqtt/brokerRefusals.js';
import type { MqttHandler } from '../../src/mqtt/handler.js';
import { HandlerList } from '../../src/mqtt/handlerList.js';
import { DoorCommandsHandler } from '../../src/mqtt/handlers/doorCommands.js';
import { ReplyTopics } from '../../src/mqtt/replyTopic.js';
import { GuestLinkIndexHandler } from '../../src/mqtt/handlers/guestLinkIndex.js';
import { GuestLinksHandler } from '../../src/mqtt/handlers/guestLinks.js';
import { OperationsHandler } from '../../src/mqtt/handlers/operations.js';
import { RetainedClock } from '../../src/mqtt/retainedClock.js';
import { resetOnSwitchToSigned } from '../../src/mqtt/signingMode.js';
import { guestLinkIndexPayload } from '../../src/protocol/guestLinkIndex.js';
import { guestLinkPayload, guestLinkRevocationPayload } from '../../src/protocol/guestLinks.js';
import { holidaysPayload, lockdownPayload } from '../../src/protocol/lockdown.js';
import { sign, signedString } from '../../src/protocol/signing.js';
import { Topics } from '../../src/protocol/topics.js';
import { CredentialCache } from '../../src/store/credentialCache.js';
import { openDatabase, openStateDatabase } from '../../src/store/database.js';
import { DoorStateStore } from '../../src/store/doorState.js';
import { EventLog } from '../../src/store/eventLog.js';
import { GuestLinkStore } from '../../src/store/guestLinkStore.js';
import { readLockdown, writeLockdown } from '../../src/store/operationsState.js';
import { PendingWrites } from '../../src/store/pendingWrites.js';
import { ReplayCache } from '../../src/store/replayCache.js';
import { ClockMark } from '../../src/store/clockMark.js';
import { ForwardClock } from '../../src/util/forwardClock.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { ManualTime } from '../support/manualTime.js';
import { ScriptedClient } from '../support/scriptedClient.js';

// Issue 32, items 5 and 6: the agent's clocks against a service whose clock runs ahead, a system clock set back,
// and signed retained messages (maximum age, future skew, the switch to signed mode, the guest-link index).
// The real MQTT handlers, stores and SQLite files, driven by a scripted broker client and an injected clock.

const tmp = tempDir('door-agent-clocks-');
afterAll(tmp.cleanup);

const SECRET = 'a-command-secret-of-at-least-32-bytes';
const P = 'da';
const AGENT = 'c';
const DAY = 86_400;
const SKEW = 300;

/** A logger whose lines the test reads. */
function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

let n = 0;
function site(options: { secret?: string | null; time?: ManualTime } = {}) {
  const secret = options.secret === undefined ? SECRET : options.secret;
  const time = options.time ?? new ManualTime({ wall: Date.parse('2026-11-24T12:00:00Z') });
  const clock = new ForwardClock(time, { skewMs: SKEW * 1000, trustedFrom: CLOCK_TRUSTED_FROM });
  const config = parseConfig(
    `agent: { id: ${AGENT}, timezone: UTC }
access: { groups: [Staff] }
doors: [ { uuid: ${DOOR_UUID}, resourceId: 12, name: Front door, relay: { pin: 17 }, unlockSeconds: 5 } ]`,
    'test',
  );
  const door = config.doors[0]!;
  const id = n++;
  const db = openDatabase(join(tmp.path, `cache${id}.db`));
  const state = openStateDatabase(join(tmp.path, `state${id}.db`));
  const { logger, lines } = capturingLogger();
  const events = new EventLog(state, { agentId: AGENT, maxEvents: 1000 });
  const writes = new PendingWrites({ timers: time, logger });
  const relay: Level[] = [];
  const controller = new LockController(
    door,
    { pin: 17, write: (l) => void relay.push(l), read: () => relay.at(-1) ?? 0 },
    {
      clock,
      timers: time,
      persistence: new DoorStateStore(join(tmp.path, `doors${id}`)),
    },
  );
  const client = new ScriptedClient();
  const topics = new Topics(P, AGENT);
  const guestLinks = new GuestLinkStore(db, new Set([12]));
  const lockdowns = new Lockdowns({
    doorUuids: [DOOR_UUID],
    load: (scope) => readLockdown(state, scope),
    save: (scope, record) => writeLockdown(state, scope, record),
    record: (event) => events.append(event),
    wallNow: () => clock.wallNow(),
    logger,
  });
  const clockMark = new ClockMark({ clock, store: { events, state, writes }, timers: time, logger });
  clockMark.start();
  const times = new RetainedClock({ clock, futureSkewSeconds: SKEW, record: (event) => events.append(event), logger });
  let holidays: { dates: string[]; issuedAt: number | null } = { dates: [], issuedAt: null };
  const mqttClient = client as unknown as MqttClient;
  const refusals = new BrokerRefusals({ logger, wallNow: () => clock.wallNow() });
  const handlers: MqttHandler[] = [
    new DoorCommandsHandler({
      client: mqttClient,
      topics,
      doors: [{ door, controller, contact: () => null, lockdown: () => lockdowns.isLockedDown(DOOR_UUID) }],
      events,
      replay: new ReplayCache(state, undefined, () => clock.monoNow()),
      secret,
      maxAgeSeconds: 30,
      clock,
      timers: time,
      logger,
      refusals,
      replyTopics: new ReplyTopics({ own: { prefix: P, agentId: AGENT, discoveryPrefix: 'homeassistant' }, logger }),
    }),
    new GuestLinksHandler({ topics, guestLinks, secret, guestLinkMaxAgeSeconds: 7 * DAY, times, clock, logger, connected: () => client.connected }),
    new OperationsHandler({
      client: mqttClient,
      topics,
      doorUuids: [DOOR_UUID],
      lockdowns,
      secret,
      onHolidays: (dates, issuedAt) => void (holidays = { dates, issuedAt }),
      heldHolidaysIssuedAt: () => holidays.issuedAt,
      times,
      retainedMaxAgeSeconds: 3 * DAY,
      logger,
      refusals,
    }),
  ];
  if (secret !== null) handlers.push(new GuestLinkIndexHandler({ prefix: P, secret, guestLinks, writes, times, maxAgeSeconds: 7 * DAY, logger }));
  new HandlerList(handlers, { client: mqttClient, refusals, logger }).attach();
  const deliver = (topic: string, payload: string, packet: Partial<IPublishPacket> = {}) =>
    client.emit('message', topic, Buffer.from(payload), { cmd: 'publish', qos: 1, retain: false, dup: false, ...packet });
  const nowS = () => Math.floor(time.wall / 1000);
  const agentLockdown = (lockdown: boolean, issuedAt: number, s: string | null = secret) =>
    deliver(topics.agentLockdown, lockdownPayload({ kind: 'agent', id: AGENT }, { lockdown, by: 'service' }, s, issuedAt), { retain: true });
  const skewEvents = () => events.since(0, 1000).filter((e) => e.type === 'clock_skew');
  const checker = new AccessChecker(new CredentialCache(db), config);
  const tapLink = (number: string) => checker.check({ door, kind: 'card', credential: number, now: clock.wallNow() });
  const command = (issuedAt: number, requestId: string) => {
    const body = { uuid: DOOR_UUID, lock_state: false, unlock_time: 5, request_id: requestId, issued_at: issuedAt };
    const signature = sign(SECRET, signedString({ uuid: DOOR_UUID, lockState: false, unlockTime: 5, requestId, issuedAt }));
    deliver(topics.set(DOOR_UUID), JSON.stringify({ ...body, signature }));
    const replies = client.published.filter((p) => p.topic === topics.reply(DOOR_UUID));
    return JSON.parse(replies.at(-1)!.message) as { status: number; error?: string };
  };
  return {
    clockMark,
    time,
    clock,
    db,
    state,
    events,
    lockdowns,
    guestLinks,
    holidays: () => holidays,
    lines,
    deliver,
    nowS,
    agentLockdown,
    skewEvents,
    tapLink,
    command,
    topics,
    writes,
  };
}

const LINK = {
  magic_link_id: '41',
  magic_token: 'token-0123456789abcdef',
  name: 'Visitor',
  email_list: ['v@example.com'],
  resource_id_list: [12],
  start_time: '2026-11-20 00:00:00',
  end_time: '2026-11-24 12:30:00',
  smartcards: [{ number: '5551234', label: 'visitor' }],
};

describe('the service clock a day ahead', () => {
  it('a lockdown end signed now overtakes a start stamped a day ahead; clock_skew is recorded once', () => {
    const s = site();
    s.agentLockdown(true, s.nowS() + DAY);
    expect(s.lockdowns.isLockedDown(DOOR_UUID)).toBe(true);
    s.agentLockdown(true, s.nowS() + DAY + 1); // still ahead: counted, not recorded again
    expect(s.skewEvents()).toHaveLength(1);
    expect(s.skewEvents()[0]).toMatchObject({ source: 'lockdown', skew_seconds: SKEW });
    expect(s.lines.filter((l) => String(l.msg).startsWith('clock skew'))).toHaveLength(1);

    s.time.advance((SKEW + 1) * 1000); // the service's clock put right; an operator ends the lockdown
    s.agentLockdown(false, s.nowS());
    expect(s.lockdowns.isLockedDown(DOOR_UUID)).toBe(false);
    // The future-stamped start replayed while its stamp is still ahead is not new again.
    s.agentLockdown(true, s.nowS() - SKEW - 1 + DAY + 1);
    expect(s.lockdowns.isLockedDown(DOOR_UUID)).toBe(false);
  });

  it('the reference service, still ahead, overtakes its own earlier message at once (issued_at strictly increasing)', () => {
    const s = site();
    const ahead = s.nowS() + DAY;
    s.agentLockdown(true, ahead);
    s.agentLockdown(false, ahead + 1); // the same second here: equal once clamped, the later stamp wins
    expect(s.lockdowns.isLockedDown(DOOR_UUID)).toBe(false);
  });

  it('a guest link stamped a day ahead is revoked by a revocation signed now, and its signature ages from now + skew', () => {
    const s = site();
    const future = s.nowS() + DAY;
    s.deliver(s.topics.guestLink('41'), guestLinkPayload({ ...LINK, end_time: '2026-12-24 12:00:00' }, SECRET, future), { retain: true });
    expect(s.guestLinks.versionOf('41')).toEqual({ issuedAt: s.nowS() + SKEW, future });
    expect(s.tapLink('5551234')?.granted).toBe(true);
    s.time.advance((SKEW + 1) * 1000);
    s.deliver(s.topics.guestLink('41'), guestLinkRevocationPayload('41', SECRET, s.nowS()), { retain: true });
    expect(s.tapLink('5551234')?.reason).toBe('unknown_credential');
    // A copy of the future-stamped link, replayed: refused, not stored again.
    s.deliver(s.topics.guestLink('41'), guestLinkPayload({ ...LINK, end_time: '2026-12-24 12:00:00' }, SECRET, future), { retain: true });
    expect(s.tapLink('5551234')?.reason).toBe('unknown_credential');
  });
});

describe("the agent's clock set back an hour", () => {
  it('does not make an expired guest link valid again', () => {
    const s = site();
    s.deliver(s.topics.guestLink('41'), guestLinkPayload(LINK, SECRET, s.nowS()), { retain: true });
    expect(s.tapLink('5551234')?.granted).toBe(true); // 12:00, the link ends 12:30
    s.time.advance(3600_000); // 13:00
    expect(s.tapLink('5551234')?.reason).toBe('link_expired');
    s.time.wall -= 3600_000; // the system clock says 12:00 again
    expect(s.time.wallNow()).toBeLessThan(Date.parse('2026-11-24T12:30:00Z'));
    expect(s.tapLink('5551234')?.reason).toBe('link_expired');
    expect(s.skewEvents()).toEqual([expect.objectContaining({ source: 'system_clock', behind_seconds: 3600 })]);
    expect(s.tapLink('5551234')?.reason).toBe('link_expired');
    expect(s.skewEvents()).toHaveLength(1); // once per step
  });

  it('does not let a replayed command through', () => {
    const s = site();
    const issued = s.nowS();
    expect(s.command(issued, 'req-1').status).toBe(200);
    s.time.advance(3600_000); // an hour: the id is long pruned from the replay window
    expect(s.command(s.nowS(), 'req-2').status).toBe(200); // a command prunes the window
    s.time.wall -= 3600_000; // the system clock is back where req-1 was fresh
    const replay = s.command(issued, 'req-1');
    expect(replay.status).toBe(409);
    expect(replay.error).toMatch(/older than 30 s/);
  });

  it('nor after a restart: the high-water mark is kept in state.db', () => {
    const s = site();
    s.time.advance(3600_000);
    s.clockMark.stop(); // saved at stop (and each minute)
    s.writes.flush();
    const time = new ManualTime({ wall: Date.parse('2026-11-24T12:00:00Z'), mono: 5 }); // a restart, an hour back
    const clock = new ForwardClock(time, { skewMs: SKEW * 1000, trustedFrom: CLOCK_TRUSTED_FROM });
    new ClockMark({ clock, store: { events: s.events, state: s.state, writes: s.writes }, timers: time, logger: pino({ level: 'silent' }) }).start();
    expect(clock.wallNow()).toBe(Date.parse('2026-11-24T13:00:00Z'));
    expect(s.skewEvents()).toEqual([expect.objectContaining({ source: 'system_clock', behind_seconds: 3600 })]);
    time.advance(10_000);
    expect(clock.wallNow()).toBe(Date.parse('2026-11-24T13:00:10Z'));
  });

  it('is taken as it is when it is not trusted at all (before 2024): decisions refuse time-bound access then', () => {
    const time = new ManualTime({ wall: Date.parse('2026-11-24T12:00:00Z') });
    const clock = new ForwardClock(time, { skewMs: SKEW * 1000, trustedFrom: CLOCK_TRUSTED_FROM });
    clock.wallNow();
    time.wall = Date.parse('1970-01-01T00:00:10Z');
    expect(clock.wallNow()).toBe(time.wall);
  });
});

describe('signed retained messages: maximum age', () => {
  it('a lockdown signed 30 days ago is refused with a logged reason; one signed a day ago is taken', () => {
    const s = site();
    s.agentLockdown(true, s.nowS() - 30 * DAY);
    expect(s.lockdowns.isLockedDown(DOOR_UUID)).toBe(false);
    expect(s.lines).toContainEqual(
      expect.objectContaining({ level: 40, msg: 'lockdown message refused: signed longer ago than mqtt.retainedMaxAgeSeconds (a replay?)' }),
    );
    s.agentLockdown(true, s.nowS() - DAY);
    expect(s.lockdowns.isLockedDown(DOOR_UUID)).toBe(true);
  });

  it('holidays signed 4 days ago are refused; unsigned mode has no maximum age', () => {
    const s = site();
    s.deliver(`${P}/holidays`, holidaysPayload({ dates: ['2026-12-25'] }, SECRET, s.nowS() - 4 * DAY), { retain: true });
    expect(s.holidays().dates).toEqual([]);
    s.deliver(`${P}/holidays`, holidaysPayload({ dates: ['2026-12-25'] }, SECRET, s.nowS() - 2 * DAY), { retain: true });
    expect(s.holidays().dates).toEqual(['2026-12-25']);
    const u = site({ secret: null });
    u.deliver(`${P}/holidays`, JSON.stringify({ dates: ['2026-12-26'], issued_at: u.nowS() - 30 * DAY }), { retain: true });
    expect(u.holidays().dates).toEqual(['2026-12-26']);
  });
});

describe('the switch to signed mode', () => {
  it('forgets the issued_at of unsigned messages: an unsigned far-future one cannot block signed ones', () => {
    const u = site({ secret: null });
    const farFuture = u.nowS() + 10 * 365 * DAY;
    u.deliver(u.topics.agentLockdown, JSON.stringify({ lockdown: true, by: 'HA', issued_at: farFuture }), { retain: true });
    u.deliver(u.topics.guestLink('41'), JSON.stringify({ ...LINK, issued_at: farFuture }), { retain: true });
    expect(u.lockdowns.isLockedDown(DOOR_UUID)).toBe(true);
    expect(
      resetOnSwitchToSigned({
        state: u.state,
        signed: false,
        lockdowns: u.lockdowns,
        guestLinks: u.guestLinks,
        forgetHolidaysIssuedAt: () => undefined,
        logger: pino({ level: 'silent' }),
      }),
    ).toBe(false);

    // The same files, now with a command secret.
    const reset = () =>
      resetOnSwitchToSigned({
        state: u.state,
        signed: true,
        lockdowns: u.lockdowns,
        guestLinks: u.guestLinks,
        forgetHolidaysIssuedAt: () => undefined,
        logger: pino({ level: 'silent' }),
      });
    expect(u.lockdowns.apply('agent', { active: false, by: 'service', issuedAt: u.nowS() })).toBe('stale'); // without the reset
    expect(reset()).toBe(true);
    expect(u.lockdowns.get('agent')).toMatchObject({ active: true, issuedAt: null });
    expect(u.guestLinks.versionOf('41')).toEqual({ issuedAt: null, future: null });
    expect(u.lockdowns.apply('agent', { active: false, by: 'service', issuedAt: u.nowS() })).toBe('ended');
    expect(reset()).toBe(false); // once
  });
});

describe('the guest-link index (signed mode)', () => {
  it('drops the links a fresh, valid index no longer lists; keeps newer ones; refuses old or forged indexes', () => {
    const s = site();
    const t = s.nowS();
    for (const id of ['41', '42']) {
      s.deliver(s.topics.guestLink(id), guestLinkPayload({ ...LINK, magic_link_id: id, smartcards: [{ number: `55512${id}` }] }, SECRET, t - 100), {
        retain: true,
      });
    }
    expect(s.tapLink('5551242')?.granted).toBe(true);
    const index = (ids: string[], at: number, secret = SECRET) => s.deliver(`${P}/guest-link-index`, guestLinkIndexPayload(ids, secret, at), { retain: true });
    index(['41'], t - 8 * DAY); // too old
    index(['41'], t, 'another-secret-of-at-least-32-bytes!!'); // forged
    s.writes.flush();
    expect(s.tapLink('5551242')?.granted).toBe(true);
    index(['41'], t - 200); // older than link 42's own message: 42 was created after it
    s.writes.flush();
    expect(s.tapLink('5551242')?.granted).toBe(true);
    index(['41'], t);
    s.writes.flush();
    expect(s.tapLink('5551242')?.reason).toBe('unknown_credential');
    expect(s.tapLink('5551241')?.granted).toBe(true);
    expect(s.lines.filter((l) => l.msg === 'guest-link index refused')).toHaveLength(1);
  });
});

describe('JSON depth', () => {
  it('a signed retained message nested 7,000 deep is refused at warn naming the topic, not an error', () => {
    const s = site();
    const deep = `${'['.repeat(7000)}1${']'.repeat(7000)}`;
    s.deliver(s.topics.agentLockdown, `{"lockdown":true,"by":"x","issued_at":1,"signature":"${'0'.repeat(64)}","reason":${deep}}`, { retain: true });
    s.deliver(s.topics.guestLink('41'), `{"magic_link_id":"41","deep":${deep}}`, { retain: true });
    expect(s.lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
    expect(s.lines).toContainEqual(
      expect.objectContaining({ level: 40, topic: s.topics.agentLockdown, reason: 'nested deeper than 32 levels', msg: 'lockdown message refused' }),
    );
    expect(s.lines).toContainEqual(expect.objectContaining({ level: 40, topic: s.topics.guestLink('41'), reason: 'nested deeper than 32 levels' }));
    expect(guestLinkSchema.safeParse(LINK).success).toBe(true);
  });
});
