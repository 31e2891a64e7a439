import Database from 'better-sqlite3';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { sign, signedString } from '../../src/protocol/signing.js';
import { guestLinkPayload, guestLinkRevocationPayload } from '../../src/protocol/guestLinks.js';
import { DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';
import { Mosquitto, makeTlsFiles } from '../support/mosquitto.js';
import type { Operator } from '../support/operator.js';
import { PtyPair } from '../support/socat.js';
import { auditEvents, connectOperator, startDaemon } from '../support/agentSite.js';
import { sleep } from '../support/wait.js';

// The real daemon against a real mosquitto on a free loopback port.
const tmp = tempDir('door-agent-mqtt-');
afterAll(tmp.cleanup);

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const P = 'da';
const SET = `${P}/doors/${DOOR_UUID}/set`;
const REPLY = `${P}/doors/${DOOR_UUID}/reply`;
const STATE = `${P}/doors/${DOOR_UUID}/state`;
const STATUS = `${P}/agents/mq/status`;
const SECRET = 'test-command-secret-0123456789-abcdef';

let n = 0;
interface Site {
  dir: string;
  config: string;
  broker: Mosquitto;
  relay: string;
  exit: string;
}

async function site(options: { signed?: boolean; extraMqtt?: string; tls?: boolean; reader?: boolean } = {}): Promise<Site> {
  const dir = join(tmp.path, `s${n++}`);
  mkdirSync(dir);
  const broker = new Mosquitto(join(dir, 'broker'), options.tls ? makeTlsFiles(join(dir, 'tls'), 'broker') : undefined);
  await broker.start();
  cleanups.push(() => broker.stop());
  if (options.signed) writeFileSync(join(dir, 'secret'), `${SECRET}\n`);
  const config = writeConfig(dir, {
    id: 'mq',
    access: '{ groups: [Staff] }',
    extra: `mqtt:
  url: "${broker.url}"
  topicPrefix: ${P}
  keepaliveSeconds: 5
${options.signed ? `  commandSecretFile: ${dir}/secret\n` : ''}${options.extraMqtt ?? ''}`,
    doorExtra: `    unlockSeconds: 1
    contact: { pin: 27, debounceMs: 20 }
    exitButton: { pin: 22, debounceMs: 20 }
${options.reader ? `    reader: { path: ${dir}/reader }\n` : ''}`,
  });
  expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
  return { dir, config, broker, relay: join(dir, 'gpio/gpio17/value'), exit: join(dir, 'gpio/gpio22/value') };
}

const agent = (s: Site, waitConnected = true): Promise<Daemon> => startDaemon(s.config, cleanups, { waitConnected });

const operator = (s: Site, ...topics: string[]): Promise<Operator> => connectOperator(s.broker.url, cleanups, topics);

const events = (s: Site) => auditEvents(s.config);

describe('MQTT commands and replies', () => {
  it('unlocks, holds, opens and locks; replies name the door and its resulting state; state is retained', async () => {
    const s = await site();
    await agent(s);
    const op = await operator(s, REPLY, STATE, STATUS);
    await op.waitFor((m) => m.topic === STATUS && m.text === 'online' && m.retain, 5000, 'retained online');
    await op.waitFor((m) => m.topic === STATE && (m.json as { state: string }).state === 'LOCKED', 5000, 'retained state');

    expect(await op.command(REPLY, SET, { lock_state: false, unlock_time: 1 }, 'r1')).toEqual({
      status: 200,
      success: 'Front door unlocked for 1 s',
      request_id: 'r1',
    });
    expect(readLevel(s.relay)).toBe('1');
    await op.waitFor((m) => m.topic === STATE && (m.json as { state: string; cause: string }).cause === 'remote command r1');
    await waitUntil(() => readLevel(s.relay) === '0', 3000, 'relock after 1 s');
    await op.waitFor((m) => m.topic === STATE && (m.json as { cause: string }).cause === 'timer', 3000, 'state after relock');

    op.clear();
    await op.publish(SET, 'UNLOCK');
    expect((await op.waitFor((m) => m.topic === REPLY)).json).toEqual({ status: 200, success: 'Front door unlocked until locked (held open)' });
    op.clear();
    await op.publish(SET, 'LOCK');
    expect((await op.waitFor((m) => m.topic === REPLY)).json).toEqual({ status: 200, success: 'Front door locked' });
    expect(readLevel(s.relay)).toBe('0');
    op.clear();
    await op.publish(SET, 'OPEN');
    expect((await op.waitFor((m) => m.topic === REPLY)).json).toEqual({ status: 200, success: 'Front door unlocked for 1 s' });

    // MQTT 5 request/response: the reply goes to the response topic with the correlation data.
    await op.subscribe('ops/answers');
    await op.publish(SET, JSON.stringify({ lock_state: true }), {
      properties: { responseTopic: 'ops/answers', correlationData: Buffer.from('corr-42') },
    });
    const answer = await op.waitFor((m) => m.topic === 'ops/answers');
    expect(answer.json).toEqual({ status: 200, success: 'Front door locked' });
    expect(answer.correlationData?.toString()).toBe('corr-42');

    // A late subscriber gets the current state at once (retained), with the door position.
    const late = await operator(s, STATE);
    const state = (await late.waitFor((m) => m.topic === STATE && m.retain)).json as Record<string, unknown>;
    expect(state).toMatchObject({ state: 'LOCKED', relock_at: null, door: 'CLOSED', cause: 'remote command' });
  });

  it('bad commands get a 400 reply, never move the relay, and the next good command is answered', async () => {
    const s = await site();
    const daemon = await agent(s);
    const op = await operator(s, REPLY);
    const bad: Array<[string, string]> = [
      ['not json', 'neither JSON nor LOCK, UNLOCK or OPEN'],
      ['{"lock_state":"false"}', 'lock_state: expected boolean'],
      ['{"lock_state":false,"unlock_time":-5,"request_id":"b1"}', 'unlock_time: must be from 1 to 604800 s'],
      ['{"lock_state":false,"unlock_time":0}', 'unlock_time: must be from 1'],
      ['{"lock_state":false,"unlock_time":1.5}', 'unlock_time: must be a whole number of seconds'],
      ['{"lock_state":false,"unlock_time":1000000000000}', 'unlock_time: must be from 1'],
      ['{"lock_state":false,"unlock_time":"5"}', 'unlock_time: must be a whole number of seconds'],
      [`{"lock_state":false,"uuid":"0b7a1e55-3c2d-4e8f-9a10-22334455aabb"}`, 'does not match the door of this topic'],
      [JSON.stringify({ lock_state: false, pad: 'x'.repeat(1024 * 1024) }), 'bytes refused'],
      // Words that name properties of every JavaScript object: not commands either.
      ['constructor', 'neither JSON nor LOCK, UNLOCK or OPEN'],
      ['__proto__', 'neither JSON nor LOCK, UNLOCK or OPEN'],
      ['toString', 'neither JSON nor LOCK, UNLOCK or OPEN'],
    ];
    for (const [payload, message] of bad) {
      op.clear();
      await op.publish(SET, payload);
      const reply = (await op.waitFor((m) => m.topic === REPLY)).json as { status: number; error: string };
      expect(reply.status, payload.slice(0, 60)).toBe(400);
      expect(reply.error).toContain(message);
      expect(readLevel(s.relay)).toBe('0');
    }
    // A door this agent does not have: nobody here subscribes to it, nothing moves.
    await op.publish(`${P}/doors/0b7a1e55-3c2d-4e8f-9a10-22334455aabb/set`, '{"lock_state":false}');
    expect(await op.command(REPLY, SET, { lock_state: false, unlock_time: 1 }, 'good')).toMatchObject({ status: 200 });
    expect(daemon.logs.filter((l) => l.level >= 50)).toEqual([]);
    // Refusals are counted, not stored one by one: the first in full, the rest as one summary (at the end of
    // the minute, or at stop), so a flood of forged commands cannot push real events out of the audit log.
    const rejected = () => events(s).filter((e) => e.type === 'command_rejected');
    expect(rejected()).toHaveLength(1);
    expect(rejected()[0]).toMatchObject({ status: 400, error: expect.stringContaining('neither JSON') });
    expect(await daemon.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(rejected()).toHaveLength(2);
    expect(rejected()[1]).toMatchObject({ count: bad.length - 1, by_status: { 400: bad.length - 1 } });
  });

  it('a LOCK sent while another process holds the cache write lock is saved, and a restart does not resume the hold-open', async () => {
    const s = await site();
    const daemon = await agent(s);
    const op = await operator(s, REPLY);
    await op.publish(SET, 'UNLOCK');
    expect((await op.waitFor((m) => m.topic === REPLY)).json).toMatchObject({ status: 200 });
    const writer = new Database(join(s.dir, 'data/cache.db'));
    try {
      writer.exec('BEGIN IMMEDIATE'); // door-agent import holding the write lock
      op.clear();
      await op.publish(SET, 'LOCK');
      expect((await op.waitFor((m) => m.topic === REPLY)).json).toEqual({ status: 200, success: 'Front door locked' });
      expect(readLevel(s.relay)).toBe('0');
      const status = runCli(['status', '--config', s.config]);
      expect(status.stdout).toMatch(/Front door \(.*\): LOCKED \(relay GPIO 17 = 0\)/);
      await daemon.stop('SIGKILL');
    } finally {
      if (writer.inTransaction) writer.exec('ROLLBACK');
      writer.close();
    }
    const again = await agent(s);
    expect(again.logs.find((l) => l.msg === 'resumed an unlock from before the restart')).toBeUndefined();
    expect(readLevel(s.relay)).toBe('0');
  });

  it('a retained command published while the agent is connected is refused too (retain as published)', async () => {
    const s = await site();
    const daemon = await agent(s);
    const op = await operator(s, REPLY);
    await op.publish(SET, '{"lock_state":false,"unlock_time":60}', { retain: true });
    await daemon.waitForLog((l) => l.msg === 'command rejected' && l.error === 'retained command ignored');
    expect(readLevel(s.relay)).toBe('0');
    await op.publish(SET, '', { retain: true }); // clears the retained message for the tests after this one
  });

  it('never acts on a retained command that was waiting before the agent subscribed', async () => {
    const s = await site();
    const op = await operator(s);
    await op.publish(SET, '{"lock_state":false,"unlock_time":60}', { retain: true });
    const daemon = await agent(s);
    await daemon.waitForLog((l) => l.msg === 'command rejected' && l.error === 'retained command ignored');
    expect(readLevel(s.relay)).toBe('0');
  });
});

describe('signed commands', () => {
  const signed = (fields: { lock_state: boolean; unlock_time?: number; request_id: string; issued_at: number }, secret = SECRET) => ({
    ...fields,
    signature: sign(
      secret,
      signedString({ uuid: DOOR_UUID, lockState: fields.lock_state, unlockTime: fields.unlock_time, requestId: fields.request_id, issuedAt: fields.issued_at }),
    ),
  });
  const now = () => Math.floor(Date.now() / 1000);

  it('accepts a good signature once; refuses missing, wrong, stale and replayed ones, also after a restart', async () => {
    const s = await site({ signed: true });
    const first = await agent(s);
    const op = await operator(s, REPLY);
    const good = signed({ lock_state: false, unlock_time: 1, request_id: 's1', issued_at: now() });
    expect(await op.command(REPLY, SET, JSON.stringify(good), 's1')).toMatchObject({ status: 200 });
    expect(await op.command(REPLY, SET, JSON.stringify(good), 's1')).toMatchObject({ status: 409, error: 'request_id s1 was already executed' });
    expect(await op.command(REPLY, SET, { lock_state: false, unlock_time: 1 }, 's2')).toMatchObject({ status: 401 });
    const wrong = signed({ lock_state: false, unlock_time: 1, request_id: 's3', issued_at: now() }, 'another secret');
    expect(await op.command(REPLY, SET, JSON.stringify(wrong), 's3')).toMatchObject({ status: 401, error: 'signature does not match' });
    const tampered = { ...signed({ lock_state: false, unlock_time: 1, request_id: 's4', issued_at: now() }), unlock_time: 3600 };
    expect(await op.command(REPLY, SET, JSON.stringify(tampered), 's4')).toMatchObject({ status: 401 });
    const stale = signed({ lock_state: false, unlock_time: 1, request_id: 's5', issued_at: now() - 120 });
    expect(await op.command(REPLY, SET, JSON.stringify(stale), 's5')).toMatchObject({ status: 409 });
    op.clear();
    await op.publish(SET, 'UNLOCK');
    expect((await op.waitFor((m) => m.topic === REPLY)).json).toMatchObject({ status: 401 });

    await first.stop('SIGTERM');
    await agent(s);
    // (s1's 1 s unlock may resume after the restart until its deadline; wait for the door to be locked.)
    await waitUntil(() => readLevel(s.relay) === '0', 5000, 'locked');
    expect(await op.command(REPLY, SET, JSON.stringify(good), 's1')).toMatchObject({ status: 409 });
    expect(readLevel(s.relay)).toBe('0');
  });
});

describe('availability, durable events, TLS', () => {
  it('retained online; offline on a graceful stop and, by the last will, on a crash', async () => {
    const s = await site();
    const op = await operator(s, STATUS);
    const first = await agent(s);
    await op.waitFor((m) => m.topic === STATUS && m.text === 'online');
    op.clear();
    await first.stop('SIGTERM');
    await op.waitFor((m) => m.topic === STATUS && m.text === 'offline', 5000, 'offline on stop');
    const second = await agent(s);
    await op.waitFor((m) => m.topic === STATUS && m.text === 'online');
    op.clear();
    await second.stop('SIGKILL');
    await op.waitFor((m) => m.topic === STATUS && m.text === 'offline', 15_000, 'last will after a crash');
  });

  it('notices a broker that stopped answering within twice the keepalive (5 s) and keeps the door working', async () => {
    const s = await site();
    const daemon = await agent(s);
    const frozenAt = Date.now();
    s.broker.freeze();
    await daemon.waitForLog((l) => l.msg === 'broker connection lost; doors keep working, events are kept', 12_000);
    expect(Date.now() - frozenAt).toBeLessThanOrEqual(10_500);
    writeFileSync(s.exit, '0\n');
    await waitUntil(() => readLevel(s.relay) === '1', 5000, 'exit button while the broker is dead');
    s.broker.thaw();
  });

  it('cards decided while the broker is down, and events across a SIGKILL, are all delivered in order', async () => {
    const s = await site({ reader: true });
    const pty = new PtyPair(join(s.dir, 'reader'), join(s.dir, 'terminal'));
    await pty.plugIn();
    cleanups.push(() => pty.unplug());
    const first = await agent(s);
    await first.waitForMessage('reader connected');
    // The start's config_changed goes out at once; everything after it is recorded with the broker away.
    await waitUntil(() => JSON.parse(runCli(['status', '--json', '--config', s.config]).stdout).events.unpublished === 0, 5000, 'outbox drained');
    const publishedBefore = events(s).length;
    await s.broker.stop();
    await first.waitForLog((l) => l.msg === 'broker connection lost; doors keep working, events are kept');
    pty.write('4213578\r\n4213579\r\n99999999\r\n'); // the door keeps deciding meanwhile
    await waitUntil(() => events(s).filter((e) => String(e.type).startsWith('access_')).length === 3, 5000, 'decided offline');
    writeFileSync(s.exit, '0\n');
    await waitUntil(() => events(s).some((e) => e.type === 'exit_request'), 5000, 'exit request offline');
    await first.stop('SIGKILL'); // with all of it unpublished
    await s.broker.start();
    const op = await operator(s, `${P}/doors/+/events`);
    const second = await agent(s);
    writeFileSync(s.exit, '1\n');
    pty.write('4213578\r\n');
    await waitUntil(() => events(s).filter((e) => e.type === 'access_granted').length === 2, 5000, 'a card after the restart');
    const expected = events(s)
      .slice(publishedBefore)
      .map((e) => e.id);
    await waitUntil(() => new Set(op.received.map((m) => (m.json as { id: string }).id)).size >= expected.length, 10_000, 'all events');
    const firstSeen = [...new Set(op.received.map((m) => (m.json as { id: string }).id))];
    // Every event, in order, none lost (a QoS 1 duplicate keeps its id); the card's lock changes may follow them.
    expect(firstSeen.slice(0, expected.length)).toEqual(expected);
    expect(op.received.map((m) => (m.json as { reason?: string }).reason)).toContain('user_suspended');
    await waitUntil(() => JSON.parse(runCli(['status', '--json', '--config', s.config]).stdout).events.unpublished === 0, 5000, 'outbox drained');
    expect(second.logs.filter((l) => l.level >= 50)).toEqual([]);
  });
});

describe('stopping and starting safely', () => {
  it('SIGTERM with a broker that stopped answering: the door is locked at once and the agent exits 0', async () => {
    const s = await site();
    const daemon = await agent(s);
    const op = await operator(s, REPLY);
    await op.publish(SET, 'UNLOCK');
    await waitUntil(() => readLevel(s.relay) === '1', 5000, 'held open');
    s.broker.freeze();
    const stoppedAt = Date.now();
    const exit = daemon.stop('SIGTERM');
    await waitUntil(() => readLevel(s.relay) === '0', 1000, 'locked at once');
    expect(await exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - stoppedAt).toBeLessThan(6000);
    s.broker.thaw();
  });

  it('a graceful stop leaves the retained state LOCKED', async () => {
    const s = await site();
    const daemon = await agent(s);
    const op = await operator(s, REPLY);
    await op.publish(SET, 'UNLOCK');
    await waitUntil(() => readLevel(s.relay) === '1', 5000, 'held open');
    await daemon.stop('SIGTERM');
    const late = await operator(s, STATE);
    const state = (await late.waitFor((m) => m.topic === STATE && m.retain)).json as Record<string, unknown>;
    expect(state).toMatchObject({ state: 'LOCKED', cause: 'agent stopped' });
  });

  it('a missing TLS file is a configuration error (exit 78) before a persisted hold-open could resume', async () => {
    const s = await site();
    const first = await agent(s);
    const op = await operator(s, REPLY);
    await op.publish(SET, 'UNLOCK');
    await waitUntil(() => readLevel(s.relay) === '1', 5000, 'held open');
    // The hold-open's record is written behind, on the thread pool: killed once it is on disk, so a restart would resume it.
    const { existsSync, readFileSync: read } = await import('node:fs');
    const saved = join(s.dir, `data/doors/${DOOR_UUID}.json`);
    await waitUntil(() => existsSync(saved) && (JSON.parse(read(saved, 'utf8')) as { state: string }).state === 'UNLOCKED', 5000, 'the hold-open saved');
    await first.stop('SIGKILL');
    writeFileSync(s.relay, '0\n');
    const { readFileSync } = await import('node:fs');
    writeFileSync(s.config, readFileSync(s.config, 'utf8').replace('  keepaliveSeconds: 5', `  keepaliveSeconds: 5\n  caFile: ${s.dir}/no-such-ca.crt`));
    const second = new Daemon(s.config);
    cleanups.push(() => second.stop('SIGKILL'));
    const levels: string[] = [];
    const watch = setInterval(() => levels.push(readLevel(s.relay)), 2);
    const exited = await second.exited;
    clearInterval(watch);
    expect(exited.code).toBe(78);
    expect(levels).not.toContain('1');
    expect(second.rawOutput.join('\n')).toContain('mqtt.caFile: cannot read');
  });

  it('a guest link revoked while the agent was away is removed when it reconnects', async () => {
    const s = await site();
    const op = await operator(s);
    const link = JSON.stringify({
      magic_link_id: '950',
      magic_token: 'offline-revoke-token-01',
      name: 'x',
      resource_id_list: [12],
      smartcards: [{ number: '5550950' }],
    });
    await op.publish(`${P}/guest-links/950`, link, { retain: true });
    const first = await agent(s);
    await first.waitForLog((l) => l.msg === 'guest link received' && l.guestLink === '950');
    await first.stop('SIGTERM');
    await op.publish(`${P}/guest-links/950`, '', { retain: true }); // revoked while the agent is away
    expect(runCli(['check', '5550950', '--config', s.config]).status).toBe(0);
    const second = await agent(s);
    await second.waitForLog((l) => l.msg === 'guest links revoked while the agent was away removed', 8000);
    expect(runCli(['check', '5550950', '--config', s.config]).status).toBe(1);
  });
});

describe('TLS', () => {
  it('refuses a broker whose certificate it does not trust, with a clear log line and no plaintext retry', async () => {
    const trusted = makeTlsFiles(join(tmp.path, 'other-ca'), 'other');
    const s = await site({ tls: true, extraMqtt: `  caFile: ${trusted.ca}\n` });
    const daemon = await agent(s, false);
    await daemon.waitForLog((l) => l.msg === 'broker certificate not trusted: refusing to connect (set mqtt.caFile to the CA that signed it)', 10_000);
    await sleep(1500);
    expect(daemon.logs.some((l) => l.msg === 'connected to the broker')).toBe(false);
    // The door works regardless.
    writeFileSync(s.exit, '0\n');
    await waitUntil(() => readLevel(s.relay) === '1', 2000, 'exit button without a broker');
  });

  it('connects over TLS with the right CA', async () => {
    const s = await site({ tls: true });
    const config = join(s.dir, 'config.yaml');
    const { readFileSync } = await import('node:fs');
    writeFileSync(
      config,
      readFileSync(config, 'utf8').replace('  keepaliveSeconds: 5', `  keepaliveSeconds: 5\n  caFile: ${join(s.dir, 'tls/broker-ca.crt')}`),
    );
    await agent(s);
  });
});

describe('guest links, sync trigger, Home Assistant discovery', () => {
  const link = (over: Record<string, unknown> = {}) =>
    JSON.stringify({
      magic_link_id: '900',
      magic_token: 'mqtt-guest-token-0001',
      name: 'Visitor',
      email_list: ['v@example.org'],
      resource_id_list: [12],
      start_time: '2026-01-01 00:00:00',
      end_time: null,
      smartcards: [{ number: '5550001', label: 'visitor' }],
      ...over,
    });

  it('a retained guest link is stored and its card and token work; invalid ones are refused; empty revokes', async () => {
    const s = await site();
    const op = await operator(s);
    await op.publish(`${P}/guest-links/900`, link(), { retain: true });
    await op.publish(`${P}/guest-links/901`, link({ magic_link_id: '901', time_mapping: [[], [], [], [], [], []] }), { retain: true });
    await op.publish(`${P}/guest-links/902`, link({ magic_link_id: '902', start_time: '2026-13-01 00:00:00' }), { retain: true });
    const daemon = await agent(s);
    await daemon.waitForLog((l) => l.msg === 'guest link received' && l.guestLink === '900');
    const refused = await daemon.waitForLog((l) => l.msg === 'guest link refused' && l.guestLink === '901');
    expect(String(refused.reason)).toContain('time_mapping: expected exactly 7 elements');
    await daemon.waitForLog((l) => l.msg === 'guest link refused' && l.guestLink === '902');
    expect(runCli(['check', '5550001', '--config', s.config]).status).toBe(0);
    expect(runCli(['check', 'mqtt-guest-token-0001', '--kind', 'token', '--config', s.config]).status).toBe(0);

    await op.publish(`${P}/guest-links/900`, '', { retain: true });
    await daemon.waitForLog((l) => l.msg === 'guest link revoked' && l.guestLink === '900');
    const denied = runCli(['check', '5550001', '--config', s.config]);
    expect([denied.status, JSON.parse(denied.stdout).reason]).toEqual([1, 'unknown_credential']);
  });

  it('a guest link over 16 KiB is refused in any mode, and a cache full of links (mqtt.maxGuestLinks) takes no new one', async () => {
    const s = await site({ extraMqtt: '  maxGuestLinks: 2\n' });
    const daemon = await agent(s);
    const op = await operator(s);
    await op.publish(`${P}/guest-links/960`, link({ magic_link_id: '960', name: 'x'.repeat(17 * 1024) }), { retain: true });
    const big = await daemon.waitForLog((l) => l.msg === 'guest link refused' && l.guestLink === '960');
    expect(String(big.reason)).toMatch(/bytes, more than 16384/);
    for (const id of ['961', '962', '963']) {
      await op.publish(`${P}/guest-links/${id}`, link({ magic_link_id: id, smartcards: [{ number: `555${id}` }] }), { retain: true });
    }
    await daemon.waitForLog((l) => l.msg === 'guest link refused: the cache holds the most guest links allowed (mqtt.maxGuestLinks)' && l.guestLink === '963');
    expect(runCli(['check', '555962', '--config', s.config]).status).toBe(0);
    expect(runCli(['check', '555963', '--config', s.config]).status).toBe(1);
    for (const id of ['960', '961', '962', '963']) await op.publish(`${P}/guest-links/${id}`, '', { retain: true });
  });

  it('signed mode: an anonymous client cannot add, rewrite or revoke a guest link; signed links and tombstones work', async () => {
    const s = await site({ signed: true });
    const daemon = await agent(s);
    const op = await operator(s);
    const topic = `${P}/guest-links/900`;
    const now = Math.floor(Date.now() / 1000);
    const body = JSON.parse(link()) as Record<string, unknown>;

    // An attacker on the broker publishes a link with their own card: unsigned, then with a guessed signature.
    await op.publish(topic, link(), { retain: true });
    expect(String((await daemon.waitForLog((l) => l.msg === 'guest link refused' && l.guestLink === '900')).reason)).toContain('unsigned');
    const forged = guestLinkPayload(body, 'not-the-secret', now);
    const mark = daemon.logs.length;
    await op.publish(topic, forged, { retain: true });
    await daemon.waitForLog((l) => l.msg === 'guest link refused' && l.reason === 'signature does not match', 10_000, mark);
    expect(runCli(['check', '5550001', '--config', s.config]).status).toBe(1);

    // The service's signed link is taken; an unsigned empty payload does not revoke it.
    const genuine = guestLinkPayload(body, SECRET, now);
    await op.publish(topic, genuine, { retain: true });
    await daemon.waitForLog((l) => l.msg === 'guest link received' && l.result === 'stored');
    expect(runCli(['check', '5550001', '--config', s.config]).status).toBe(0);
    await op.publish(topic, '', { retain: true });
    await daemon.waitForLog((l) => l.msg === 'guest link refused' && String(l.reason).includes('revocations must be signed'));
    expect(runCli(['check', '5550001', '--config', s.config]).status).toBe(0);

    // A signed tombstone revokes; replaying the older signed link afterwards does not bring it back.
    await op.publish(topic, guestLinkRevocationPayload('900', SECRET, now + 1), { retain: true });
    await daemon.waitForLog((l) => l.msg === 'guest link revoked' && l.result === 'revoked');
    await op.publish(topic, genuine, { retain: true });
    await daemon.waitForLog((l) => l.msg === 'guest link received' && l.result === 'stale');
    expect(runCli(['check', '5550001', '--config', s.config]).status).toBe(1);
    await op.publish(topic, '', { retain: true });
  });

  it('signed mode: a signature is good for mqtt.guestLinkMaxAgeSeconds; an old signed link replayed to a door that missed its revocation is refused', async () => {
    const s = await site({ signed: true, extraMqtt: `  guestLinkMaxAgeSeconds: ${2 * 86_400}\n` });
    const daemon = await agent(s);
    const op = await operator(s);
    const now = Math.floor(Date.now() / 1000);
    const body = (id: string) => JSON.parse(link({ magic_link_id: id, smartcards: [{ number: `55500${id}` }] })) as Record<string, unknown>;
    // Captured three days ago, revoked since (the door was away): older than the window, refused.
    await op.publish(`${P}/guest-links/931`, guestLinkPayload(body('931'), SECRET, now - 3 * 86_400), { retain: true });
    const refused = await daemon.waitForLog((l) => l.guestLink === '931');
    expect(refused.msg).toBe('guest link refused: signed longer ago than mqtt.guestLinkMaxAgeSeconds (a replay?)');
    expect(runCli(['check', '55500931', '--config', s.config]).status).toBe(1);
    // Signed a day ago: taken, and it opens until two days after its signature unless the service signs it again.
    await op.publish(`${P}/guest-links/932`, guestLinkPayload(body('932'), SECRET, now - 86_400), { retain: true });
    await daemon.waitForLog((l) => l.msg === 'guest link received' && l.guestLink === '932');
    const at = (seconds: number) => new Date(seconds * 1000).toISOString();
    expect(runCli(['check', '55500932', '--config', s.config]).status).toBe(0);
    expect(runCli(['check', '55500932', '--at', at(now + 86_400 - 60), '--config', s.config]).status).toBe(0);
    const late = runCli(['check', '55500932', '--at', at(now + 86_400 + 60), '--config', s.config]);
    expect(late.status).toBe(1);
    // Signed again (the service's daily round): good for two more days.
    const mark = daemon.logs.length;
    await op.publish(`${P}/guest-links/932`, guestLinkPayload(body('932'), SECRET, now), { retain: true });
    await daemon.waitForLog((l) => l.msg === 'guest link received' && l.guestLink === '932', 10_000, mark);
    expect(runCli(['check', '55500932', '--at', at(now + 86_400 + 60), '--config', s.config]).status).toBe(0);
    for (const id of ['931', '932']) await op.publish(`${P}/guest-links/${id}`, '', { retain: true });
  });

  it('a sync request is logged while no service is configured', async () => {
    const s = await site();
    const daemon = await agent(s);
    const op = await operator(s);
    await op.publish(`${P}/agents/mq/sync`, 'now');
    await daemon.waitForLog((l) => l.msg === 'sync requested over MQTT, but no service is configured: nothing to sync');
  });

  it('publishes retained Home Assistant discovery for the lock and the door contact', async () => {
    const s = await site();
    await agent(s);
    const op = await operator(s, 'homeassistant/#');
    const lock = await op.waitFor((m) => m.topic === `homeassistant/lock/mq_${DOOR_UUID}/config` && m.retain);
    expect(lock.json).toMatchObject({
      name: null, // named after its door's device
      device: { name: 'Front door', model: 'door-agent door' },
      command_topic: SET,
      state_topic: STATE,
      value_template: "{{ value_json.get('ha_state') or value_json.state }}",
      payload_open: 'OPEN',
      availability_topic: STATUS,
    });
    const contact = await op.waitFor((m) => m.topic === `homeassistant/binary_sensor/mq_${DOOR_UUID}_door/config`);
    expect(contact.json).toMatchObject({ device_class: 'door', payload_on: 'OPEN', payload_off: 'CLOSED' });
  });
});
