import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { holidaysPayload, lockdownPayload } from '../../src/protocol/lockdown.js';
import { DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { type Daemon, readLevel, waitUntil } from '../support/daemon.js';
import { Mosquitto } from '../support/mosquitto.js';
import type { Operator } from '../support/operator.js';
import { PtyPair } from '../support/socat.js';
import { auditEvents, connectOperator, startDaemon } from '../support/agentSite.js';

// Door operations (issue 14) over MQTT: the real daemon, a real mosquitto, a pty reader, simulated GPIO.
const tmp = tempDir('door-agent-operations-');
afterAll(tmp.cleanup);

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const P = 'da';
const AGENT = 'ops';
const SET = `${P}/doors/${DOOR_UUID}/set`;
const REPLY = `${P}/doors/${DOOR_UUID}/reply`;
const STATE = `${P}/doors/${DOOR_UUID}/state`;
const ALARM = `${P}/doors/${DOOR_UUID}/alarm`;
const AGENT_LOCKDOWN = `${P}/agents/${AGENT}/lockdown`;
const AGENT_LOCKDOWN_STATE = `${P}/agents/${AGENT}/lockdown/state`;
const DOOR_LOCKDOWN = `${P}/doors/${DOOR_UUID}/lockdown`;
const SECRET = 'test-command-secret-0123456789-abcdef';
const ALICE_CARD = '4213578';

let n = 0;
interface Site {
  dir: string;
  config: string;
  broker: Mosquitto;
  relay: string;
  exit: string;
  pty: PtyPair;
}

async function site(options: { signed?: boolean; access?: string; doorExtra?: string; agent?: string } = {}): Promise<Site> {
  const dir = join(tmp.path, `s${n++}`);
  mkdirSync(dir);
  const broker = new Mosquitto(join(dir, 'broker'));
  await broker.start();
  cleanups.push(() => broker.stop());
  if (options.signed) writeFileSync(join(dir, 'secret'), `${SECRET}\n`);
  const config = writeConfig(dir, {
    id: AGENT,
    agent: options.agent,
    access: options.access ?? '{ groups: [Staff] }',
    extra: `mqtt:
  url: "${broker.url}"
  topicPrefix: ${P}
  keepaliveSeconds: 5
${options.signed ? `  commandSecretFile: ${dir}/secret\n` : ''}`,
    doorExtra: `    unlockSeconds: 30
    exitButton: { pin: 22, debounceMs: 20 }
    reader: { path: ${dir}/reader }
${options.doorExtra ?? ''}`,
  });
  expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
  const pty = new PtyPair(join(dir, 'reader'), join(dir, 'terminal'));
  await pty.plugIn();
  cleanups.push(() => pty.unplug());
  return { dir, config, broker, relay: join(dir, 'gpio/gpio17/value'), exit: join(dir, 'gpio/gpio22/value'), pty };
}

const agent = (s: Site, waitConnected = true): Promise<Daemon> =>
  startDaemon(s.config, cleanups, { waitConnected, timeoutMs: 30_000, waitFor: ['reader connected'] });

const operator = (s: Site, ...topics: string[]): Promise<Operator> => connectOperator(s.broker.url, cleanups, topics);

const events = (s: Site) => auditEvents(s.config);

const decisions = (s: Site) => events(s).filter((e) => e.type === 'access_granted' || e.type === 'access_denied');

async function tap(s: Site, credential: string, count: number): Promise<Record<string, unknown>> {
  s.pty.write(`${credential}\r\n`);
  await waitUntil(() => decisions(s).length >= count, 10_000, `decision ${count}`);
  return decisions(s)[count - 1]!;
}

describe('lockdown over MQTT', () => {
  it('refuses cards and remote unlocks, ends an unlock at once, keeps the exit button', async () => {
    const s = await site();
    await agent(s);
    const op = await operator(s, REPLY, STATE, AGENT_LOCKDOWN_STATE);

    // A remote hold-open in progress ends the moment the lockdown begins.
    await op.publish(SET, 'UNLOCK');
    await waitUntil(() => readLevel(s.relay) === '1', 10_000, 'held open');
    await op.publish(AGENT_LOCKDOWN, JSON.stringify({ lockdown: true, by: 'security desk', reason: 'drill' }), { retain: true });
    await waitUntil(() => readLevel(s.relay) === '0', 10_000, 'locked by the lockdown');
    const agentState = await op.waitFor((m) => m.topic === AGENT_LOCKDOWN_STATE && (m.json as { lockdown: boolean }).lockdown, 10_000, 'agent lockdown state');
    expect(agentState.json).toMatchObject({ lockdown: true, by: 'security desk', reason: 'drill' });
    await op.waitFor((m) => m.topic === STATE && (m.json as { lockdown?: boolean }).lockdown === true, 10_000, 'door state in lockdown');

    op.clear();
    await op.publish(SET, JSON.stringify({ lock_state: false, unlock_time: 5, request_id: 'r-lockdown' }));
    expect((await op.waitFor((m) => m.topic === REPLY, 10_000)).json).toEqual({
      status: 409,
      error: 'Front door is in lockdown: unlock refused',
      request_id: 'r-lockdown',
    });
    expect(readLevel(s.relay)).toBe('0');

    expect(await tap(s, ALICE_CARD, 1)).toMatchObject({ type: 'access_denied', reason: 'lockdown' });
    expect(readLevel(s.relay)).toBe('0');
    // Egress is life safety: the exit button still releases the door.
    writeFileSync(s.exit, '0\n');
    await waitUntil(() => readLevel(s.relay) === '1', 10_000, 'exit button in lockdown');
    writeFileSync(s.exit, '1\n');
    await op.publish(SET, 'LOCK');
    await waitUntil(() => readLevel(s.relay) === '0', 10_000, 'locked again');
    expect(events(s).find((e) => e.type === 'lockdown_started')).toMatchObject({ door: DOOR_UUID, scope: 'agent', by: 'security desk', reason: 'drill' });
  }, 120_000); // several daemon starts and CLI calls: room for a loaded machine

  it('is kept across a restart with the broker away, and ends with lockdown false', async () => {
    const s = await site();
    const first = await agent(s);
    const op = await operator(s, AGENT_LOCKDOWN_STATE);
    await op.publish(DOOR_LOCKDOWN, JSON.stringify({ lockdown: true, by: 'ops' }), { retain: true });
    await first.waitForMessage('lockdown started', 10_000);
    await first.stop();
    await s.broker.stop();
    await agent(s, false);
    expect(await tap(s, ALICE_CARD, 1)).toMatchObject({ type: 'access_denied', reason: 'lockdown' });
    expect(JSON.parse(runCli(['status', '--json', '--config', s.config]).stdout).doors[0].lockdown).toMatchObject({ active: true, scope: 'door', by: 'ops' });
    // The offline decision knows the lockdown too.
    const check = runCli(['check', ALICE_CARD, '--config', s.config]);
    expect(check.status).toBe(1);
    expect(JSON.parse(check.stdout)).toMatchObject({ granted: false, reason: 'lockdown', lockdown: true });

    await s.broker.start();
    const again = await operator(s);
    await again.publish(DOOR_LOCKDOWN, JSON.stringify({ lockdown: false, by: 'ops' }), { retain: true });
    await waitUntil(() => events(s).some((e) => e.type === 'lockdown_ended'), 60_000, 'lockdown ended (the agent reconnects with backoff)');
    expect(await tap(s, ALICE_CARD, 2)).toMatchObject({ type: 'access_granted' });
    expect(readLevel(s.relay)).toBe('1');
  }, 120_000); // several daemon starts and CLI calls: room for a loaded machine

  it('admits the responders configured for a lockdown', async () => {
    const s = await site({ access: '{ groups: [Staff, Facilities], responders: { groups: [Facilities] } }' });
    await agent(s);
    const op = await operator(s);
    await op.publish(AGENT_LOCKDOWN, JSON.stringify({ lockdown: true, by: 'ops' }), { retain: true });
    await waitUntil(() => events(s).some((e) => e.type === 'lockdown_started'), 10_000, 'lockdown started');
    expect(await tap(s, ALICE_CARD, 1)).toMatchObject({ type: 'access_denied', reason: 'lockdown' });
    // 4213581 belongs to user 105, in Facilities.
    expect(await tap(s, '4213581', 2)).toMatchObject({ type: 'access_granted' });
  }, 120_000); // several daemon starts and CLI calls: room for a loaded machine

  it('signed mode: an unsigned or replayed older message cannot start or lift a lockdown', async () => {
    const s = await site({ signed: true });
    const daemon = await agent(s);
    const op = await operator(s);
    const scope = { kind: 'agent' as const, id: AGENT };
    await op.publish(AGENT_LOCKDOWN, JSON.stringify({ lockdown: true, by: 'mallory' }), { retain: true });
    await daemon.waitForLog((l) => l.msg === 'lockdown message refused', 10_000);
    expect(await tap(s, ALICE_CARD, 1)).toMatchObject({ type: 'access_granted' });

    const start = lockdownPayload(scope, { lockdown: true, by: 'security desk' }, SECRET, 2_000_000_000);
    const end = lockdownPayload(scope, { lockdown: false, by: 'security desk' }, SECRET, 1_900_000_000);
    await op.publish(AGENT_LOCKDOWN, start, { retain: true });
    await waitUntil(() => events(s).some((e) => e.type === 'lockdown_started'), 10_000, 'signed lockdown');
    // An older "end" (captured earlier and replayed) is refused: the lockdown stays.
    await op.publish(AGENT_LOCKDOWN, end, { retain: true });
    await daemon.waitForLog((l) => l.msg === 'lockdown message refused: older than the one in force (a replay?)', 10_000);
    expect(await tap(s, ALICE_CARD, 2)).toMatchObject({ type: 'access_denied', reason: 'lockdown' });
    // A message signed for another door's or agent's topic is refused too.
    const otherScope = lockdownPayload({ kind: 'agent', id: 'elsewhere' }, { lockdown: false, by: 'x' }, SECRET, 2_100_000_000);
    await op.publish(AGENT_LOCKDOWN, otherScope, { retain: true });
    await daemon.waitForLog((l) => l.msg === 'lockdown message refused' && String(l.reason) === 'signature does not match', 10_000);
    expect(await tap(s, ALICE_CARD, 3)).toMatchObject({ type: 'access_denied', reason: 'lockdown' });
  }, 120_000); // several daemon starts and CLI calls: room for a loaded machine
});

describe('alarms and holidays over MQTT', () => {
  it('a duress PIN opens as usual and raises the alarm at once', async () => {
    const s = await site({ access: '{ groups: [Staff], duressPin: lastDigitPlusOne }' });
    await agent(s);
    const op = await operator(s, ALARM);
    s.pty.write('1235#\r\n'); // Alice's PIN is 1234
    await waitUntil(() => readLevel(s.relay) === '1', 10_000, 'the door opens');
    const alarm = await op.waitFor((m) => m.topic === ALARM, 10_000, 'duress alarm');
    expect(alarm.json).toMatchObject({ event_type: 'duress', door: DOOR_UUID, kind: 'pin', hint: 'PIN', holders: [{ email_id: 101 }] });
    expect(JSON.stringify(alarm.json)).not.toMatch(/123[45]/);
    const duress = events(s).find((e) => e.type === 'duress');
    expect(duress).toMatchObject({ id: (alarm.json as { id: string }).id });
    expect(decisions(s).at(-1)).toMatchObject({ type: 'access_granted', kind: 'pin' });
  }, 120_000); // several daemon starts and CLI calls: room for a loaded machine

  it('a duress PIN during a lockdown is refused as her own PIN would be, and the alarm still goes out at once', async () => {
    const s = await site({ access: '{ groups: [Staff], duressPin: lastDigitPlusOne }' });
    const daemon = await agent(s);
    const op = await operator(s, ALARM);
    await op.publish(DOOR_LOCKDOWN, JSON.stringify({ lockdown: true, by: 'security desk' }), { retain: true });
    await daemon.waitForMessage('lockdown started', 10_000);
    s.pty.write('1235#\r\n'); // Alice's PIN is 1234
    const alarm = await op.waitFor((m) => m.topic === ALARM, 10_000, 'duress alarm in lockdown');
    expect(alarm.json).toMatchObject({ event_type: 'duress', door: DOOR_UUID, kind: 'pin', hint: 'PIN', holders: [{ email_id: 101 }] });
    expect(JSON.stringify(alarm.json)).not.toMatch(/123[45]/);
    await waitUntil(() => decisions(s).length >= 1, 10_000, 'the decision');
    expect(decisions(s).at(-1)).toMatchObject({ type: 'access_denied', kind: 'pin', reason: 'lockdown', holders: [{ email_id: 101, reason: 'lockdown' }] });
    expect(readLevel(s.relay)).toBe('0');
    const types = events(s).map((e) => e.type);
    expect(types.indexOf('duress')).toBeLessThan(types.indexOf('access_denied'));
  }, 120_000); // several daemon starts and CLI calls: room for a loaded machine

  it('holidays published by the service stop the unlock schedule, and are kept across a restart', async () => {
    // Unlocked every hour of the week: only a holiday can keep the door locked. The board keeps time (agent.rtc):
    // without it, on a machine whose clock is not synchronized, the schedule would wait for the clock.
    const s = await site({ agent: 'rtc: true', doorExtra: `    unlockSchedule: [[[0,24]],[[0,24]],[[0,24]],[[0,24]],[[0,24]],[[0,24]],[[0,24]]]\n` });
    const first = await agent(s);
    await waitUntil(() => readLevel(s.relay) === '1', 10_000, 'unlocked by the schedule');
    const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Berlin' }).format(new Date());
    const tomorrow = new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Berlin' }).format(new Date(Date.now() + 86_400_000));
    const op = await operator(s, STATE);
    await op.publish(`${P}/holidays`, holidaysPayload({ dates: [today, tomorrow] }, null, 0), { retain: true });
    await waitUntil(() => readLevel(s.relay) === '0', 10_000, 'locked on the holiday');
    await op.waitFor((m) => m.topic === STATE && (m.json as { schedule?: { state: string } }).schedule?.state === 'holiday', 10_000, 'schedule state holiday');
    expect(
      events(s)
        .filter((e) => e.type === 'locked')
        .at(-1),
    ).toMatchObject({ cause: 'unlock schedule ended' });

    await first.stop();
    await s.broker.stop();
    await agent(s, false);
    expect(readLevel(s.relay)).toBe('0');
    const status = JSON.parse(runCli(['status', '--json', '--config', s.config]).stdout) as { doors: Array<{ schedule: { state: string } }> };
    expect(status.doors[0]!.schedule.state).toBe('holiday');
  }, 120_000); // several daemon starts and CLI calls: room for a loaded machine
});
