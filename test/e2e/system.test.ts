import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOOR_UUID, runCli, tempDir } from '../support/cli.js';
import { startServiceProcess, type ServiceProcess } from '../support/serviceProcess.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';
import { Mosquitto } from '../support/mosquitto.js';
import { freePort } from '../support/net.js';
import { SmtpSink } from '../support/smtpSink.js';
import { PtyPair } from '../support/socat.js';
import { Operator } from '../support/operator.js';
import { auditEvents } from '../support/agentSite.js';
import { localTimeIn } from '../../src/core/schedule.js';

// The whole system on one machine with real processes: mosquitto, the reference service (with an SMTP
// server receiving its mail), and a door agent with a socat reader on simulated GPIO.
const tmp = tempDir('door-agent-e2e-');
const smtp = new SmtpSink();
const mail = smtp.mail;
let broker: Mosquitto;
let service: ServiceProcess | undefined;
let pty: PtyPair;
let agent: Daemon | undefined;
let base: string;
let key: string;
let serviceConfig: string;
let agentConfig: string;
const relay = join(tmp.path, 'gpio/gpio17/value');

beforeAll(async () => {
  const smtpUrl = await smtp.start();
  broker = new Mosquitto(join(tmp.path, 'broker'), undefined, true);
  await broker.start();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  mkdirSync(join(tmp.path, 'svc'), { recursive: true });
  serviceConfig = join(tmp.path, 'svc', 'config.yaml');
  writeFileSync(
    serviceConfig,
    `server:
  listen: 127.0.0.1:${port}
  dataDir: ${tmp.path}/svc/data
  lockReplyTimeoutSeconds: 2
  resources: [ { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door } ]
  smtp: { url: "${smtpUrl}", from: doors@example.org }
mqtt: { url: "${broker.url}", topicPrefix: site }
`,
  );
  key = runCli(['service', 'key', 'create', '--rank', 'ADMIN', '--config', serviceConfig]).stdout.trim();
  service = await startServiceProcess(serviceConfig, { ready: 'connected to the broker' });
  writeFileSync(join(tmp.path, 'api-key'), `${key}\n`);
  pty = new PtyPair(join(tmp.path, 'reader'), join(tmp.path, 'terminal'));
  await pty.plugIn();
  agentConfig = join(tmp.path, 'agent.yaml');
  writeFileSync(
    agentConfig,
    `agent: { id: front, dataDir: ${tmp.path}/agent, timezone: Europe/Berlin }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${tmp.path}/gpio }
mqtt: { url: "${broker.url}", topicPrefix: site }
service: { baseUrl: "${base}", apiKeyFile: ${tmp.path}/api-key, syncIntervalSeconds: 3600, startDelaySeconds: 0 }
doors:
  - { uuid: ${DOOR_UUID}, resourceId: 12, name: Front door, relay: { pin: 17 }, unlockSeconds: 1, reader: { path: ${tmp.path}/reader } }
`,
  );
});

afterAll(async () => {
  await agent?.stop('SIGKILL');
  await service?.stop();
  await pty.unplug();
  await broker.stop();
  await smtp.stop();
  tmp.cleanup();
});

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & Array<Record<string, unknown>> };
}

async function syncDoor(): Promise<void> {
  const r = runCli(['sync', '--config', agentConfig]);
  expect(r.status, r.stderr).toBe(0);
}

describe('the whole system', () => {
  /** The user group the door admits (access.groups: [Staff]): made by the first test, one per name. */
  let staffGroupId: number;

  it('invite, card, provision, tap; unlock over POST /setlockstatus; a guest link at the door; 504 without the door', async () => {
    const staff = await call('POST', '/groups', { type: 'users', name: 'Staff', add_ids: [] });
    expect(staff.status).toBe(200);
    staffGroupId = staff.body.group_id as number;
    const invite = await call('POST', '/invites', { emails: ['alice@example.org'], groups: [{ id: staff.body.group_id, name: 'Staff' }] });
    expect(invite.body.added).toEqual(['alice@example.org']);
    const cards = await call('PUT', '/modifysmartcard', {
      email_id: (invite.body.add_ids as number[])[0],
      smartcards: '[{"number":"4213578","label":"badge"}]',
    });
    expect(cards.status).toBe(200);
    await waitUntil(() => mail.some((m) => m.to === 'alice@example.org'), 5000, 'the invitation e-mail over SMTP');

    await syncDoor();
    agent = new Daemon(agentConfig);
    await agent.waitForMessage('connected to the broker');
    await agent.waitForMessage('reader connected');

    pty.write('4213578\r\n');
    await waitUntil(() => readLevel(relay) === '1', 5000, 'Alice taps: granted');
    await waitUntil(() => readLevel(relay) === '0', 5000, 'relock');

    // Suspended at the service: after a sync the door refuses her.
    const alice = (await call('GET', '/multipleusers')).body.find((u) => u.email === 'alice@example.org')!;
    await call('PUT', '/togglesuspension', { email_id: alice.email_id });
    await syncDoor();
    pty.write('4213578\r\n');
    await waitUntil(() => runCli(['events', '--config', agentConfig]).stdout.includes('user_suspended'), 5000, 'denied after suspension');
    expect(readLevel(relay)).toBe('0');

    const unlock = await call('POST', '/setlockstatus', { uuid: DOOR_UUID, lock_state: false, unlock_time: 3 });
    expect(unlock).toEqual({ status: 200, body: { success: 'Front door unlocked for 3 s' } });
    expect(readLevel(relay)).toBe('1');
    await waitUntil(() => readLevel(relay) === '0', 6000, 'relock after 3 s');

    // A lockdown from the service (POST /lockdown): the door refuses remote unlocks, through the service too, until
    // it is lifted.
    const down = await call('POST', '/lockdown', { uuid: DOOR_UUID, active: true, reason: 'drill' });
    expect(down).toEqual({ status: 200, body: { success: 'lockdown started for Front door' } });
    await agent.waitForMessage('lockdown started', 10_000);
    expect(await call('POST', '/setlockstatus', { uuid: DOOR_UUID, lock_state: false, unlock_time: 3 })).toEqual({
      status: 409,
      body: { error: 'Front door is in lockdown: unlock refused' },
    });
    expect(readLevel(relay)).toBe('0');
    expect((await call('POST', '/lockdown', { uuid: DOOR_UUID, active: false })).status).toBe(200);
    await agent.waitForMessage('lockdown ended', 10_000);

    // Two guest links: one whose schedule allows this very hour (Berlin time), one that opens only on another day
    // (a link that never opens is refused).
    const { weekday, hour } = localTimeIn('Europe/Berlin')(Date.now());
    const mapping = (open: boolean) => Array.from({ length: 7 }, (_, d) => (d === (open ? weekday : (weekday + 3) % 7) ? [[hour, hour + 1]] : []));
    const closed = await call('POST', '/magiclinkadmin', {
      email_list: ['late@example.org'],
      resource_id_list: [12],
      name: 'Late visitor',
      time_mapping: mapping(false),
      smartcards: [{ number: '7700002' }],
    });
    const link = await call('POST', '/magiclinkadmin', {
      email_list: ['visitor@example.org'],
      resource_id_list: [12],
      name: 'Visitor',
      time_mapping: mapping(true),
      smartcards: [{ number: '7700001', label: 'visitor' }],
    });
    expect(closed.status, JSON.stringify(closed.body)).toBe(200);
    expect(link.status).toBe(200);
    await agent.waitForLog((l) => l.msg === 'guest link received' && l.guestLink === link.body.magic_link_id);
    await agent.waitForLog((l) => l.msg === 'guest link received' && l.guestLink === closed.body.magic_link_id);
    pty.write('7700002\r\n');
    await waitUntil(() => runCli(['events', '--config', agentConfig]).stdout.includes('outside_schedule'), 5000, 'outside its schedule: denied');
    expect(readLevel(relay)).toBe('0');
    pty.write('7700001\r\n');
    await waitUntil(() => readLevel(relay) === '1', 5000, 'inside its schedule: the guest card opens');
    await waitUntil(() => mail.some((m) => m.to === 'visitor@example.org' && m.text.includes(String(link.body.magic_token))), 5000, 'guest mail');

    // The guest is removed at the service: the link is revoked at the door, the card no longer opens.
    const visitor = (await call('GET', '/multipleusers?user_tag=GUEST')).body.find((u) => u.email === 'visitor@example.org')!;
    expect((await call('DELETE', `/user?email_id=${visitor.email_id}`)).status).toBe(200);
    await agent.waitForLog((l) => l.msg === 'guest link revoked' && l.guestLink === link.body.magic_link_id);
    await waitUntil(() => readLevel(relay) === '0', 5000, 'relocked');
    expect(JSON.parse(runCli(['check', '7700001', '--config', agentConfig]).stdout).reason).toBe('unknown_credential');

    // The broker restarts while the door keeps deciding: no event is lost.
    const watcher = await Operator.connect(broker.url, { clientId: 'e2e-watcher' });
    await watcher.subscribe('site/doors/+/events');
    const seenBefore = JSON.parse(runCli(['status', '--json', '--config', agentConfig]).stdout).events.lastSeq as number;
    await broker.stop();
    await agent.waitForLog((l) => l.msg === 'broker connection lost; doors keep working, events are kept');
    pty.write('4213579\r\n7700001\r\n');
    await waitUntil(() => runCli(['events', '--config', agentConfig]).stdout.split('\n').filter(Boolean).length >= 2, 5000, 'decided offline');
    await broker.start();
    const all = () =>
      runCli(['events', '--since', String(seenBefore), '--config', agentConfig])
        .stdout.trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { id: string }).id);
    await waitUntil(
      () => JSON.parse(runCli(['status', '--json', '--config', agentConfig]).stdout).events.unpublished === 0,
      20_000,
      'outbox drained after the restart',
    );
    await waitUntil(() => all().every((id) => watcher.received.some((m) => (m.json as { id: string }).id === id)), 10_000, 'every event delivered');
    expect(all().length).toBeGreaterThanOrEqual(2);
    await watcher.end();

    await agent.stop('SIGTERM');
    agent = undefined;
    const noDoor = await call('POST', '/setlockstatus', { uuid: DOOR_UUID, lock_state: true });
    expect(noDoor.status).toBe(504);
    expect(noDoor.body.error).toContain('did not answer within 2 s');
  }, 90_000); // several processes and CLI starts: room for a loaded machine

  it('pushed: suspend, delete, card removed, card added and group change reach a running door within seconds (periodic sync hourly)', async () => {
    const staff = (await call('GET', '/multipleusers')).body; // the organization as the first test left it
    expect(Array.isArray(staff)).toBe(true);
    // The Staff group the first test made (a second one of that name is refused: doors grant by its name).
    const group = { body: { group_id: staffGroupId } };
    const invite = await call('POST', '/invites', { emails: ['pushed@example.org'], groups: [{ id: staffGroupId, name: 'Staff' }], no_email: true });
    const emailId = (invite.body.add_ids as number[])[0]!;
    await call('PUT', '/modifysmartcard', { email_id: emailId, smartcards: '[{"number":"5550123","label":"badge"}]' });

    agent = new Daemon(agentConfig);
    await agent.waitForMessage('connected to the broker');
    const decision = () => JSON.parse(runCli(['check', '5550123', '--config', agentConfig]).stdout) as { granted: boolean; reason: string | null };
    const within = (what: string, expected: (d: { granted: boolean; reason: string | null }) => boolean) => waitUntil(() => expected(decision()), 10_000, what);
    await within('the new user reaches the door', (d) => d.granted);
    await agent.waitForLog((l) => l.msg === 'directory revisions are pushed: changes reach this door within seconds');

    await call('PUT', '/modifysmartcard', { email_id: emailId, smartcards: '[]' });
    await within('card removed', (d) => d.reason === 'unknown_credential');
    await call('PUT', '/modifysmartcard', { email_id: emailId, smartcards: '[{"number":"5550123","label":"badge"}]' });
    await within('card added', (d) => d.granted);
    await call('PUT', '/groups', { type: 'users', group_id: group.body.group_id, del_ids: [emailId] });
    await within('taken out of Staff', (d) => d.reason === 'not_authorized');
    await call('PUT', '/groups', { type: 'users', group_id: group.body.group_id, add_ids: [emailId] });
    await within('back in Staff', (d) => d.granted);
    await call('PUT', '/togglesuspension', { email_id: emailId });
    await within('suspended', (d) => d.reason === 'user_suspended');
    await call('PUT', '/togglesuspension', { email_id: emailId });
    await within('active again', (d) => d.granted);
    await call('DELETE', `/user?email_id=${emailId}`);
    await within('deleted', (d) => d.reason === 'unknown_credential');

    const status = runCli(['status', '--config', agentConfig]).stdout;
    expect(status).toMatch(/directory: revision \d+ held; push active/);
    // Each change was fetched as a delta: one request, not 1 + N.
    expect(agent.logs.some((l) => l.msg === 'sync done')).toBe(true);
    await agent.stop('SIGTERM');
    agent = undefined;
  }, 90_000); // several processes and CLI starts: room for a loaded machine

  it('an access level defined at the service opens the door by its name; removed, it stops opening a running door within seconds', async () => {
    // A user outside Staff (the agent's every-door group): only the service's level lets them in.
    const invite = await call('POST', '/invites', { emails: ['level@example.org'], no_email: true });
    const emailId = (invite.body.add_ids as number[])[0]!;
    await call('PUT', '/modifysmartcard', { email_id: emailId, smartcards: '[{"number":"5550456","label":"badge"}]' });
    const level = await call('POST', '/policies', { name: 'Front desk', email_ids: [emailId], resource_ids: [12] });
    expect(level.status, JSON.stringify(level.body)).toBe(200);

    agent = new Daemon(agentConfig);
    await agent.waitForMessage('connected to the broker');
    await agent.waitForMessage('reader connected');
    await agent.waitForLog((l) => l.msg === 'directory revisions are pushed: changes reach this door within seconds');
    // The first sync brought the level (created while no daemon ran) and compiled it.
    await agent.waitForLog((l) => l.msg === 'access levels changed: compiled again' && (l as { levels?: string[] }).levels?.includes('Front desk') === true);
    const decisions = () => auditEvents(agentConfig).filter((e) => e.type === 'access_granted' || e.type === 'access_denied');
    const before = decisions().length;
    pty.write('5550456\r\n');
    await waitUntil(() => readLevel(relay) === '1', 10_000, 'the level from the service opens the door');
    await waitUntil(() => readLevel(relay) === '0', 5000, 'relock');
    await waitUntil(() => decisions().length > before, 5000, 'the grant is audited');
    expect(decisions().at(-1)).toMatchObject({ type: 'access_granted', level: 'Front desk', holders: [{ email_id: emailId, reason: null }] });

    const from = agent.logs.length;
    const removed = await call('DELETE', `/policies?policy_id=${level.body.policy_id as number}`);
    expect(removed.status).toBe(200);
    await agent.waitForLog((l) => l.msg === 'access levels changed: compiled again', 10_000, from);
    const count = decisions().length;
    pty.write('5550456\r\n');
    await waitUntil(() => decisions().length > count, 5000, 'the refusal is audited');
    expect(decisions().at(-1)).toMatchObject({ type: 'access_denied', reason: 'not_authorized' });
    expect(readLevel(relay)).toBe('0');
    await agent.stop('SIGTERM');
    agent = undefined;
  }, 90_000);
});
