import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { parseServiceConfig } from '../../src/config/load.js';
import { parseRevisionMessage } from '../../src/protocol/directory.js';
import { isRetainedRefusal, type RetainedMessage } from '../../src/protocol/retainedMessages.js';
import { parseHolidaysMessage, parseLockdownMessage, type HolidaysMessage, type LockdownMessage, type LockdownScope } from '../../src/protocol/lockdown.js';
import type { MqttOptions } from '../../src/protocol/options.js';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { startService, type RunningService } from '../../src/service/root.js';
import { issueRetained, LockdownStore } from '../../src/service/lockdowns.js';
import { InputError } from '../../src/util/errors.js';
import { DOOR_UUID, SECOND_DOOR_UUID, tempDir } from '../support/cli.js';
import { Mosquitto } from '../support/mosquitto.js';
import { newServiceDb } from '../support/serviceDb.js';
import { sleep } from '../support/wait.js';

// The reference service (its composition root, in this process) against a real mosquitto: POST/GET /lockdown and
// server.holidaysFile, checked on what the broker holds retained, as a door connecting later would see it.

const tmp = tempDir('door-agent-service-lockdown-');
afterAll(tmp.cleanup);

const SECRET = 'a-lockdown-secret-of-at-least-32-bytes';
const COMPUTER_UUID = '0c0ffee0-1234-4abc-9def-0123456789ab';
const DOOR: LockdownScope = { kind: 'door', uuid: DOOR_UUID };
const LOBBY: LockdownScope = { kind: 'agent', id: 'lobby-pi' };
const START = Date.parse('2026-07-01T12:00:00.250Z');

/**
 * A wall clock that stands still unless a test moves it: every call "within the same second", and a clock set
 * back, are then certain rather than hoped for.
 */
function frozenClock(wall = START) {
  const clock = { wall, wallNow: (): number => clock.wall, monoNow: (): number => performance.now() };
  return clock;
}

interface Harness {
  service: RunningService;
  url: string;
  keys: { REGULAR: string; ADMIN: string };
  call(
    method: string,
    path: string,
    body?: Record<string, unknown>,
    options?: { key?: string; form?: boolean },
  ): Promise<{ status: number; body: Record<string, unknown> }>;
}

let dirs = 0;
function newDir(name: string): string {
  const dir = join(tmp.path, `${name}-${++dirs}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

function mqttOptions(broker: Mosquitto, prefix: string, signed: boolean): MqttOptions {
  let commandSecretFile: string | undefined;
  if (signed) {
    commandSecretFile = join(tmp.path, 'command-secret');
    writeFileSync(commandSecretFile, `${SECRET}\n`);
  }
  return {
    url: broker.url,
    topicPrefix: prefix,
    ...(commandSecretFile ? { commandSecretFile } : {}),
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

async function start(dataDir: string, options: { mqtt?: MqttOptions; holidaysFile?: string; clock?: ReturnType<typeof frozenClock> } = {}): Promise<Harness> {
  const clock = options.clock ?? frozenClock();
  const service = await startService(
    {
      server: {
        listen: '127.0.0.1:0',
        dataDir,
        lockReplyTimeoutSeconds: 5,
        resources: [
          { resourceId: 12, uuid: DOOR_UUID, type: 'DOOR', name: 'Front door' },
          { resourceId: 13, uuid: SECOND_DOOR_UUID, type: 'DOOR', name: 'Back door' },
          { resourceId: 40, uuid: COMPUTER_UUID, type: 'COMPUTER', name: 'Kiosk' },
        ],
        ...(options.holidaysFile ? { holidaysFile: options.holidaysFile } : {}),
      },
      ...(options.mqtt ? { mqtt: options.mqtt } : {}),
    },
    { clock, logger: pino({ level: 'silent' }), env: {} },
  );
  const apiKeys = new ApiKeys(service.db);
  const keys = { REGULAR: await apiKeys.create('REGULAR', 0, clock.wallNow()), ADMIN: await apiKeys.create('ADMIN', 0, clock.wallNow()) };
  const call: Harness['call'] = async (method, path, body, callOptions = {}) => {
    const headers: Record<string, string> = { authorization: `Bearer ${callOptions.key ?? keys.ADMIN}` };
    let payload: string | undefined;
    if (body !== undefined) {
      headers['content-type'] = callOptions.form ? 'application/x-www-form-urlencoded' : 'application/json';
      payload = callOptions.form ? new URLSearchParams(body as Record<string, string>).toString() : JSON.stringify(body);
    }
    const res = await fetch(`${service.url}${path}`, { method, headers, body: payload });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  return { service, url: service.url, keys, call };
}

/** The message a new subscriber gets retained on `topic` within `waitMs`, or null (also when the broker is away). */
async function retainedOnce(url: string, topic: string, waitMs = 2000): Promise<Buffer | null> {
  let client: mqtt.MqttClient | undefined;
  try {
    client = await mqtt.connectAsync(url, { reconnectPeriod: 0, connectTimeout: 5000 });
    const got = new Promise<Buffer | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), waitMs);
      client!.on('message', (t, payload, packet) => {
        if (t !== topic || !packet.retain) return;
        clearTimeout(timer);
        resolve(payload);
      });
    });
    await client.subscribeAsync(topic, { qos: 1 });
    return await got;
  } catch {
    return null;
  } finally {
    await client?.endAsync().catch(() => undefined);
  }
}

/** Polls what the broker holds retained on `topic` until `accept` holds (the service publishes asynchronously). */
async function retainedWhen(url: string, topic: string, accept: (payload: Buffer) => boolean, what: string, timeoutMs = 45_000): Promise<Buffer> {
  const started = Date.now();
  for (;;) {
    const payload = await retainedOnce(url, topic);
    if (payload !== null && accept(payload)) return payload;
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms (last seen: ${payload?.toString() ?? 'nothing retained'})`);
    await sleep(200);
  }
}

function lockdownOf(scope: LockdownScope, payload: Buffer, secret: string | null): RetainedMessage<LockdownMessage> & { kind: 'set' } {
  const parsed = parseLockdownMessage(scope, payload, secret);
  if (isRetainedRefusal(parsed)) throw new Error(`lockdown message refused: ${parsed.refused} (${payload.toString()})`);
  if (parsed.kind !== 'set') throw new Error('an empty lockdown message');
  return parsed;
}

function holidaysOf(payload: Buffer, secret: string | null): RetainedMessage<HolidaysMessage> & { kind: 'set' } {
  const parsed = parseHolidaysMessage(payload, secret);
  if (isRetainedRefusal(parsed)) throw new Error(`holidays message refused: ${parsed.refused} (${payload.toString()})`);
  if (parsed.kind !== 'set') throw new Error('an empty holidays message');
  return parsed;
}

/** Accepts a signed lockdown message with this state whose issued_at is after `after`. */
const signedLockdown =
  (scope: LockdownScope, active: boolean, after = 0) =>
  (payload: Buffer) => {
    const parsed = parseLockdownMessage(scope, payload, SECRET);
    return !isRetainedRefusal(parsed) && parsed.kind === 'set' && parsed.body.lockdown === active && (parsed.issuedAt ?? 0) > after;
  };

const signedHolidaysAfter = (after: number) => (payload: Buffer) => {
  const parsed = parseHolidaysMessage(payload, SECRET);
  return !isRetainedRefusal(parsed) && parsed.kind === 'set' && (parsed.issuedAt ?? 0) > after;
};

function holidaysFile(dir: string, text: string): string {
  const file = join(dir, 'holidays.txt');
  writeFileSync(file, text);
  return file;
}

describe('POST /lockdown publishes retained, signed, with issued_at strictly increasing per scope', () => {
  const broker = new Mosquitto(join(tmp.path, 'broker-signed'));
  afterAll(() => broker.stop());

  it('starts and ends a door lockdown: stored, signed on P/doors/<uuid>/lockdown, issued_at increasing within one second and across a restart', async () => {
    await broker.start();
    const dataDir = newDir('signed');
    const clock = frozenClock();
    const topic = `sa/doors/${DOOR_UUID}/lockdown`;
    const file = holidaysFile(dataDir, '2026-12-25\n');
    let h = await start(dataDir, { mqtt: mqttOptions(broker, 'sa', true), holidaysFile: file, clock });
    try {
      await retainedWhen(broker.url, 'sa/holidays', signedHolidaysAfter(0), 'the holidays published at connect (the service is connected)');

      const started = await h.call('POST', '/lockdown', { active: true, uuid: DOOR_UUID.toUpperCase(), reason: 'police operation', by: 'Front desk' });
      expect(started).toEqual({ status: 200, body: { success: 'lockdown started for Front door' } });
      const first = lockdownOf(DOOR, await retainedWhen(broker.url, topic, signedLockdown(DOOR, true), 'the lockdown retained'), SECRET);
      expect(first.body).toEqual({ lockdown: true, by: 'Front desk', reason: 'police operation' });
      expect(first.issuedAt).toBe(Math.floor(START / 1000));
      // Signed for this door only: the same message is refused on another door's topic.
      const payload = (await retainedOnce(broker.url, topic))!;
      expect(parseLockdownMessage({ kind: 'door', uuid: SECOND_DOOR_UUID }, payload, SECRET)).toEqual({ refused: 'signature does not match' });
      expect(parseLockdownMessage(DOOR, payload, 'another-secret')).toEqual({ refused: 'signature does not match' });

      // The same (frozen) second: the end is still strictly newer, so a replay of the start is stale at the doors.
      const ended = await h.call('POST', '/lockdown', { active: false, uuid: DOOR_UUID });
      expect(ended).toEqual({ status: 200, body: { success: 'lockdown ended for Front door' } });
      const second = lockdownOf(DOOR, await retainedWhen(broker.url, topic, signedLockdown(DOOR, false), 'the end retained'), SECRET);
      expect(second.body).toEqual({ lockdown: false, by: 'API key (ADMIN)' });
      expect(second.issuedAt!).toBeGreaterThan(first.issuedAt!);

      // A restart on the same data, its clock set back an hour: the republish at connect is newer still.
      await h.service.stop();
      clock.wall = START - 3600_000;
      h = await start(dataDir, { mqtt: mqttOptions(broker, 'sa', true), holidaysFile: file, clock });
      const again = lockdownOf(
        DOOR,
        await retainedWhen(broker.url, topic, signedLockdown(DOOR, false, second.issuedAt!), 'the end published again after the restart'),
        SECRET,
      );
      expect(again.body).toEqual(second.body);
      const restarted = await h.call('POST', '/lockdown', { active: true, uuid: DOOR_UUID });
      expect(restarted.status).toBe(200);
      const third = lockdownOf(DOOR, await retainedWhen(broker.url, topic, signedLockdown(DOOR, true, again.issuedAt!), 'the next start'), SECRET);
      expect(third.issuedAt!).toBeGreaterThan(again.issuedAt!);
      expect(third.body).toEqual({ lockdown: true, by: 'API key (ADMIN)' });

      const listed = await h.call('GET', '/lockdown');
      expect(listed).toEqual({
        status: 200,
        body: {
          lockdowns: [{ scope: `door:${DOOR_UUID}`, active: true, by: 'API key (ADMIN)', reason: null, changed_at: new Date(clock.wall).toISOString() }],
        },
      });
    } finally {
      await h.service.stop();
    }
  }, 180_000);

  it('every stored lockdown and the holidays are published again when the broker comes back without its retained messages', async () => {
    await broker.start();
    const dataDir = newDir('reconnect');
    const file = holidaysFile(dataDir, '# public holidays\n2026-12-26\n\n2026-12-25   # Christmas\n2026-12-25\n');
    const h = await start(dataDir, { mqtt: mqttOptions(broker, 'sb', true), holidaysFile: file });
    const doorTopic = `sb/doors/${DOOR_UUID}/lockdown`;
    const agentTopic = 'sb/agents/lobby-pi/lockdown';
    try {
      const holidays = holidaysOf(await retainedWhen(broker.url, 'sb/holidays', signedHolidaysAfter(0), 'the holidays retained'), SECRET);
      expect(holidays.body).toEqual({ dates: ['2026-12-25', '2026-12-26'] });
      // A form, as curl -d sends it.
      expect((await h.call('POST', '/lockdown', { active: 'true', agent_id: 'lobby-pi', reason: 'fire drill' }, { form: true })).body).toEqual({
        success: 'lockdown started for agent lobby-pi',
      });
      expect((await h.call('POST', '/lockdown', { active: 'false', agent_id: 'lobby-pi' }, { form: true })).body).toEqual({
        success: 'lockdown ended for agent lobby-pi',
      });
      expect((await h.call('POST', '/lockdown', { active: true, uuid: DOOR_UUID, reason: 'intruder' })).body).toEqual({
        success: 'lockdown started for Front door',
      });
      const agentBefore = lockdownOf(LOBBY, await retainedWhen(broker.url, agentTopic, signedLockdown(LOBBY, false), 'the agent lockdown ended'), SECRET);
      const doorBefore = lockdownOf(DOOR, await retainedWhen(broker.url, doorTopic, signedLockdown(DOOR, true), 'the door lockdown'), SECRET);

      await broker.stop(); // not persistent: it comes back empty, as a broker replaced or wiped would
      await broker.start();
      const agentAfter = lockdownOf(
        LOBBY,
        await retainedWhen(broker.url, agentTopic, signedLockdown(LOBBY, false, agentBefore.issuedAt!), 'the ended agent lockdown again'),
        SECRET,
      );
      const doorAfter = lockdownOf(
        DOOR,
        await retainedWhen(broker.url, doorTopic, signedLockdown(DOOR, true, doorBefore.issuedAt!), 'the door lockdown again'),
        SECRET,
      );
      const holidaysAfter = holidaysOf(await retainedWhen(broker.url, 'sb/holidays', signedHolidaysAfter(holidays.issuedAt!), 'the holidays again'), SECRET);
      expect(agentAfter.body).toEqual({ lockdown: false, by: 'API key (ADMIN)' });
      expect(doorAfter.body).toEqual({ lockdown: true, by: 'API key (ADMIN)', reason: 'intruder' });
      expect(holidaysAfter.body).toEqual(holidays.body);
    } finally {
      await h.service.stop();
    }
  }, 180_000);

  it('changes of one scope asked for at once, in one second: each message has an issued_at of its own', async () => {
    await broker.start();
    const dataDir = newDir('at-once');
    const topic = 'sd/agents/lobby-pi/lockdown';
    const h = await start(dataDir, { mqtt: mqttOptions(broker, 'sd', true), holidaysFile: holidaysFile(dataDir, '') });
    const watcher = await mqtt.connectAsync(broker.url);
    const issued: number[] = [];
    watcher.on('message', (_t, payload) => issued.push(lockdownOf(LOBBY, payload, SECRET).issuedAt!));
    try {
      await watcher.subscribeAsync(topic, { qos: 1 });
      await retainedWhen(broker.url, 'sd/holidays', signedHolidaysAfter(0), 'the holidays published at connect (the service is connected)');
      expect((await h.call('POST', '/lockdown', { active: false, agent_id: 'lobby-pi' })).body).toEqual({ success: 'agent lobby-pi was not in lockdown' });
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => h.call('POST', '/lockdown', { active: i % 2 === 0, agent_id: 'lobby-pi', by: `guard ${i}` })),
      );
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
      const started = Date.now();
      while (issued.length < 7) {
        if (Date.now() - started > 30_000) throw new Error(`7 lockdown messages: only ${issued.length} within 30 s`);
        await sleep(100);
      }
      // The clock stands still: each change still went out strictly after the one before (none shares one).
      const first = Math.floor(START / 1000);
      expect([...issued].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => first + i));
    } finally {
      await watcher.endAsync();
      await h.service.stop();
    }
  }, 120_000);

  it('the holidays issued_at survives a restart: never older than one already published', async () => {
    await broker.start();
    const dataDir = newDir('holidays-restart');
    const file = holidaysFile(dataDir, '2027-01-01\n');
    const clock = frozenClock();
    let h = await start(dataDir, { mqtt: mqttOptions(broker, 'sc', true), holidaysFile: file, clock });
    let first: number;
    try {
      first = holidaysOf(await retainedWhen(broker.url, 'sc/holidays', signedHolidaysAfter(0), 'the holidays'), SECRET).issuedAt!;
    } finally {
      await h.service.stop();
    }
    h = await start(dataDir, { mqtt: mqttOptions(broker, 'sc', true), holidaysFile: file, clock });
    try {
      const next = holidaysOf(await retainedWhen(broker.url, 'sc/holidays', signedHolidaysAfter(first), 'the holidays after the restart, newer'), SECRET);
      expect(next.body).toEqual({ dates: ['2027-01-01'] });
    } finally {
      await h.service.stop();
    }
  }, 120_000);
});

describe('POST /lockdown without signing', () => {
  const broker = new Mosquitto(join(tmp.path, 'broker-unsigned'));
  afterAll(() => broker.stop());

  it('publishes the plain message (no issued_at, no signature) the doors accept without a secret', async () => {
    await broker.start();
    const dataDir = newDir('unsigned');
    const h = await start(dataDir, { mqtt: mqttOptions(broker, 'ua', false), holidaysFile: holidaysFile(dataDir, '2026-05-01\n') });
    try {
      const holidays = holidaysOf(await retainedWhen(broker.url, 'ua/holidays', () => true, 'the holidays retained'), null);
      expect(holidays).toEqual({ kind: 'set', body: { dates: ['2026-05-01'] }, issuedAt: null });
      expect((await h.call('POST', '/lockdown', { active: true, agent_id: 'lobby-pi', by: '  Night guard ' })).body).toEqual({
        success: 'lockdown started for agent lobby-pi',
      });
      const payload = await retainedWhen(broker.url, 'ua/agents/lobby-pi/lockdown', (p) => p.length > 0, 'the lockdown retained');
      expect(JSON.parse(payload.toString())).toEqual({ lockdown: true, by: 'Night guard' });
      expect(lockdownOf(LOBBY, payload, null)).toEqual({ kind: 'set', body: { lockdown: true, by: 'Night guard' }, issuedAt: null });
      // A door that requires signatures refuses it.
      expect(parseLockdownMessage(LOBBY, payload, SECRET)).toMatchObject({ refused: expect.stringContaining('unsigned') });
    } finally {
      await h.service.stop();
    }
  }, 120_000);

  it('unsigned: an ended lockdown is not sent again at connect, so it never lifts one started on the broker since', async () => {
    await broker.start();
    const dataDir = newDir('unsigned-shared');
    const topic = 'ub/agents/lobby-pi/lockdown';
    const options = { mqtt: mqttOptions(broker, 'ub', false), holidaysFile: holidaysFile(dataDir, '2026-05-01\n') };
    let h = await start(dataDir, options);
    const client = await mqtt.connectAsync(broker.url);
    try {
      await h.call('POST', '/lockdown', { active: true, agent_id: 'lobby-pi' });
      await h.call('POST', '/lockdown', { active: false, agent_id: 'lobby-pi' });
      await retainedWhen(broker.url, topic, (p) => JSON.parse(p.toString()).lockdown === false, 'the end retained');
      await h.service.stop();
      // Home Assistant's switch starts a lockdown on the shared topic while the service is away.
      await client.publishAsync(topic, JSON.stringify({ lockdown: true, by: 'Home Assistant' }), { qos: 1, retain: true });
      await client.publishAsync('ub/holidays', '', { qos: 1, retain: true });
      h = await start(dataDir, options);
      // The holidays come back with the service's connect, after its lockdowns.
      await retainedWhen(broker.url, 'ub/holidays', (p) => p.length > 0, 'the holidays again');
      expect(JSON.parse((await retainedWhen(broker.url, topic, () => true, 'the lockdown')).toString())).toEqual({ lockdown: true, by: 'Home Assistant' });
    } finally {
      await client.endAsync();
      await h.service.stop();
    }
  }, 120_000);
});

describe('POST and GET /lockdown: ranks, parameters, answers', () => {
  const broker = new Mosquitto(join(tmp.path, 'broker-api'));
  afterAll(() => broker.stop());

  it('403 for a REGULAR key; 400 naming the parameter; 404 for an unknown door; nothing stored by a refusal', async () => {
    await broker.start();
    const dataDir = newDir('api');
    const h = await start(dataDir, { mqtt: mqttOptions(broker, 'pa', true), holidaysFile: holidaysFile(dataDir, '') });
    try {
      await retainedWhen(broker.url, 'pa/holidays', signedHolidaysAfter(0), 'connected (an empty holidays file publishes no dates)');
      expect(holidaysOf((await retainedOnce(broker.url, 'pa/holidays'))!, SECRET).body).toEqual({ dates: [] });

      const regular = { key: h.keys.REGULAR };
      expect(await h.call('POST', '/lockdown', { active: true, uuid: DOOR_UUID }, regular)).toEqual({
        status: 403,
        body: { error: 'this needs an API key of rank ADMIN or higher (this key: REGULAR)' },
      });
      expect((await h.call('GET', '/lockdown', undefined, regular)).status).toBe(403);

      const refused = async (body: Record<string, unknown>, status: number, error: RegExp) => {
        const r = await h.call('POST', '/lockdown', body);
        expect(r.status, JSON.stringify(body)).toBe(status);
        expect(r.body.error, JSON.stringify(body)).toMatch(error);
      };
      await refused({ uuid: DOOR_UUID }, 400, /^active: required/);
      await refused({ active: 'maybe', uuid: DOOR_UUID }, 400, /^active: /);
      await refused({ active: true }, 400, /^uuid, agent_id: give exactly one/);
      await refused({ active: true, uuid: DOOR_UUID, agent_id: 'lobby-pi' }, 400, /^uuid, agent_id: give exactly one/);
      await refused({ active: true, agent_id: 'lobby/pi' }, 400, /^agent_id: an agent id/);
      await refused({ active: true, agent_id: 'x'.repeat(65) }, 400, /^agent_id: /);
      await refused({ active: true, agent_id: 'lobby-pi', reason: 'r'.repeat(257) }, 400, /^reason: at most 256/);
      await refused({ active: true, agent_id: 'lobby-pi', by: 'b'.repeat(129) }, 400, /^by: at most 128/);
      await refused({ active: true, agent_id: 'lobby-pi', by: '   ' }, 400, /^by: /);
      await refused({ active: true, uuid: 42 }, 400, /^uuid: /);
      await refused({ active: true, uuid: 'a6d1c7e2-0000-4000-8000-000000000000' }, 404, /^no resource with uuid a6d1c7e2-0000-4000-8000-000000000000$/);
      await refused({ active: true, uuid: COMPUTER_UUID }, 400, /^uuid: Kiosk is a COMPUTER, not a door$/);
      expect(await h.call('GET', '/lockdown')).toEqual({ status: 200, body: { lockdowns: [] } });

      // Ending what is not in lockdown is fine (and published: it also clears a lockdown set on the broker directly).
      expect(await h.call('POST', '/lockdown', { active: false, uuid: SECOND_DOOR_UUID })).toEqual({
        status: 200,
        body: { success: 'Back door was not in lockdown' },
      });
      await retainedWhen(
        broker.url,
        `pa/doors/${SECOND_DOOR_UUID}/lockdown`,
        signedLockdown({ kind: 'door', uuid: SECOND_DOOR_UUID }, false),
        'the end retained',
      );
      expect((await h.call('POST', '/lockdown', { active: true, agent_id: 'lobby-pi', reason: 'drill', by: 'Ops' })).body).toEqual({
        success: 'lockdown started for agent lobby-pi',
      });
      expect((await h.call('POST', '/lockdown', { active: true, agent_id: 'lobby-pi', reason: 'real this time' })).body).toEqual({
        success: 'agent lobby-pi was already in lockdown',
      });
      expect((await h.call('POST', '/lockdown?active=false&agent_id=lobby-pi')).body).toEqual({ success: 'lockdown ended for agent lobby-pi' });
      expect((await h.call('POST', '/lockdown', { active: false, agent_id: 'lobby-pi' })).body).toEqual({ success: 'agent lobby-pi was not in lockdown' });
      expect(await h.call('GET', '/lockdown')).toEqual({
        status: 200,
        body: {
          lockdowns: [
            { scope: 'agent:lobby-pi', active: false, by: 'API key (ADMIN)', reason: null, changed_at: new Date(START).toISOString() },
            { scope: `door:${SECOND_DOOR_UUID}`, active: false, by: 'API key (ADMIN)', reason: null, changed_at: new Date(START).toISOString() },
          ],
        },
      });
    } finally {
      await h.service.stop();
    }
  }, 120_000);

  it('a lockdown does not move the directory revision (agents are not sent to sync); a user change does', async () => {
    await broker.start();
    const dataDir = newDir('revision');
    const h = await start(dataDir, { mqtt: mqttOptions(broker, 'pb', true), holidaysFile: holidaysFile(dataDir, '') });
    // What the agents are sent to sync by: the revision retained on the broker.
    const published = async () => {
      const payload = await retainedOnce(broker.url, 'pb/directory/revision');
      return payload === null ? null : parseRevisionMessage(payload)?.revision;
    };
    try {
      const invited = await h.call('POST', '/invites', { emails: ['rev@example.org'], no_email: true });
      const emailId = (invited.body.add_ids as number[])[0]!;
      const before = (await h.call('GET', '/directory')).body.revision as number;
      await retainedWhen(broker.url, 'pb/directory/revision', (p) => parseRevisionMessage(p)?.revision === before, 'the revision published');
      // A change the service has not been told about: only a change the service makes the directory's would give it
      // its revision (a GET /directory would too: none is made until the control below).
      await h.service.db.run("UPDATE users SET first_name = 'Changed' WHERE email_id = ?", [emailId]);
      expect((await h.call('POST', '/lockdown', { active: true, uuid: DOOR_UUID })).status).toBe(200);
      await sleep(1000);
      expect(await published()).toBe(before);
      // The control: any other successful change gives the directory its revision, and the agents are told.
      expect((await h.call('POST', '/groups', { type: 'users', name: 'Control', add_ids: [] })).status).toBe(200);
      await retainedWhen(broker.url, 'pb/directory/revision', (p) => (parseRevisionMessage(p)?.revision ?? 0) > before, 'the next revision published');
      expect((await h.call('GET', '/directory')).body.revision as number).toBeGreaterThan(before);
    } finally {
      await h.service.stop();
    }
  }, 120_000);

  it('503 without an mqtt section, and nothing stored', async () => {
    const h = await start(newDir('no-mqtt'));
    try {
      expect(await h.call('POST', '/lockdown', { active: true, uuid: DOOR_UUID })).toEqual({
        status: 503,
        body: { error: 'no MQTT broker is configured for the service (mqtt section): a lockdown cannot reach the doors' },
      });
      expect(await h.call('GET', '/lockdown')).toEqual({ status: 200, body: { lockdowns: [] } });
      // Bad input is still named first.
      expect((await h.call('POST', '/lockdown', { active: true })).status).toBe(400);
    } finally {
      await h.service.stop();
    }
  });

  it('stores a lockdown while the broker is away, says so, and publishes it when the broker comes', async () => {
    await broker.start();
    const dataDir = newDir('away');
    const options = mqttOptions(broker, 'pc', true); // the broker's port, kept for its return
    await broker.stop();
    const h = await start(dataDir, { mqtt: options });
    try {
      const r = await h.call('POST', '/lockdown', { active: true, uuid: DOOR_UUID, reason: 'storm' });
      expect(r).toEqual({
        status: 200,
        body: {
          success: 'lockdown started for Front door',
          warning: 'the MQTT broker is not reachable now: the doors get this when the service reconnects to it',
        },
      });
      await broker.start();
      const message = lockdownOf(
        DOOR,
        await retainedWhen(broker.url, `pc/doors/${DOOR_UUID}/lockdown`, signedLockdown(DOOR, true), 'published at connect'),
        SECRET,
      );
      expect(message.body).toEqual({ lockdown: true, by: 'API key (ADMIN)', reason: 'storm' });
    } finally {
      await h.service.stop();
    }
  }, 120_000);
});

describe('the lockdowns and retained issued_at in the database (either engine)', () => {
  it('changes made at once never share an issued_at: each reads the last and writes the next in one transaction', async () => {
    const { db } = await newServiceDb(newDir('store'));
    try {
      const store = new LockdownStore(db);
      const first = Math.floor(START / 1000);
      const changes = await Promise.all(Array.from({ length: 6 }, (_, i) => store.set(LOBBY, { active: i % 2 === 0, by: `guard ${i}`, reason: null }, START)));
      expect(changes.map((c) => c.stored.issuedAt).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5].map((i) => first + i));
      expect((await store.get(LOBBY))?.issuedAt).toBe(first + 5);
      // A reconnect's reissue at once with a change: both newer than anything before, never the same.
      const [reissued, changed] = await Promise.all([store.reissueAll(START), store.set(LOBBY, { active: true, by: 'x', reason: null }, START)]);
      expect(new Set([reissued[0]!.issuedAt, changed.stored.issuedAt, first + 5]).size).toBe(3);
      const holidays = await Promise.all([0, 1, 2, 3].map(() => issueRetained(db, 'holidays', START)));
      expect(holidays.sort((a, b) => a - b)).toEqual([0, 1, 2, 3].map((i) => first + i));
    } finally {
      await db.close();
    }
  });
});

describe('server.holidaysFile', () => {
  it('is a configuration key of the server section', () => {
    const options = parseServiceConfig('server: { dataDir: /tmp/x, holidaysFile: /etc/door-agent/holidays.txt }\n', 'service.yaml');
    expect(options.server.holidaysFile).toBe('/etc/door-agent/holidays.txt');
    expect(() => parseServiceConfig('server: { holidaysFile: "" }\n', 'service.yaml')).toThrow(/server\.holidaysFile/);
  });

  it('a line that is not a date stops the start: a configuration error (exit 78) naming the file and the line; nothing opened', async () => {
    const dir = newDir('bad-holidays');
    const file = holidaysFile(dir, '# holidays\n2026-12-25\n2026-02-30\nChristmas\n2026-13-01 # month 13\n');
    const dataDir = join(dir, 'data');
    const error = await start(dataDir, { holidaysFile: file }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).exitCode).toBe(78);
    expect((error as InputError).message).toBe(
      `${file} (server.holidaysFile) is invalid:\n` +
        '  line 3: "2026-02-30" is not a date YYYY-MM-DD (one date per line; # starts a comment)\n' +
        '  line 4: "Christmas" is not a date YYYY-MM-DD (one date per line; # starts a comment)\n' +
        '  line 5: "2026-13-01" is not a date YYYY-MM-DD (one date per line; # starts a comment)',
    );
    expect(existsSync(join(dataDir, 'service.db'))).toBe(false);
  });

  it('a missing file is a configuration error too', async () => {
    const dir = newDir('missing-holidays');
    const error = await start(join(dir, 'data'), { holidaysFile: join(dir, 'nope.txt') }).then(
      () => null,
      (err: unknown) => err as { exitCode: number; message: string },
    );
    expect(error?.exitCode).toBe(78);
    expect(error?.message).toBe(`cannot read the holidays file ${join(dir, 'nope.txt')} (server.holidaysFile): no such file`);
  });
});
