import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sign, signedString } from '../../src/protocol/signing.js';
import { auditEvents } from '../support/agentSite.js';
import { DOOR_UUID, ROOT, runCli, SECOND_DOOR_UUID, tempDir } from '../support/cli.js';
import { Daemon, readLevel } from '../support/daemon.js';
import { makeTlsFiles } from '../support/mosquitto.js';
import { freePort } from '../support/net.js';
import { Operator } from '../support/operator.js';
import { startServiceProcess, type ServiceProcess } from '../support/serviceProcess.js';
import { ConfiguredMosquitto, fillExample, TcpRelay, writePasswords } from '../support/siteBrokers.js';
import { PtyPair } from '../support/socat.js';
import { sleep, waitUntil } from '../support/wait.js';

// A site with a broker of its own, bridged to the central broker with the shipped example
// (examples/mosquitto-bridge/): the reference service on the central broker (TLS, password, the example's ACL),
// the agent lobby-pi on the site's broker, and the link between the two brokers through a relay the test cuts.
// While it is down the door decides from its cache and takes a local command; a lockdown and a revocation made at
// the centre meanwhile reach it in order once the link returns, and the site's broker then holds the service's
// retained revision, lockdown and holidays.

const EXAMPLE = join(ROOT, 'examples/mosquitto-bridge');
const P = 'door-agent';
const SECRET = 'a-bridged-command-secret-of-32-bytes-or-more';
const ALICE_CARD = '4213578';
const UNKNOWN_CARD = '9990001';
const BRIDGE_PASSWORD = 'bridge-lobby-password';
const SERVICE_PASSWORD = 'door-service-password';
const READER_PASSWORD = 'test-reader-password';

const tmp = tempDir('door-agent-broker-bridge-');
const relayValue = join(tmp.path, 'agent/gpio/gpio17/value');
let central: ConfiguredMosquitto;
let site: ConfiguredMosquitto;
let link: TcpRelay;
let service: ServiceProcess;
let agent: Daemon;
let pty: PtyPair;
let base: string;
let key: string;
let agentConfig: string;
let ca: string;
/** A client of the site's broker (anonymous, as a site's own operator tools on its LAN). */
let siteOperator: Operator;
/** The console's view at the centre: the service's user on the central broker. */
let centre: mqtt.MqttClient;
const atCentre: Array<{ topic: string; json: Record<string, unknown> }> = [];

const centralUrl = () => `mqtts://127.0.0.1:${central.port}`;

/** A client of the central broker: as the service's user (what the console reads), or as the test's reader of everything. */
function centralClient(user: 'door-service' | 'test-reader'): Promise<mqtt.MqttClient> {
  return mqtt.connectAsync(centralUrl(), {
    ca: [readFileSync(ca)],
    username: user,
    password: user === 'door-service' ? SERVICE_PASSWORD : READER_PASSWORD,
    reconnectPeriod: 500,
  });
}

beforeAll(async () => {
  const tls = makeTlsFiles(join(tmp.path, 'tls'), 'central');
  ca = tls.ca;

  // The central broker: the shipped central.conf and central.acl, on a free port with the test's certificate.
  central = new ConfiguredMosquitto(join(tmp.path, 'central'), await freePort());
  const passwords = join(tmp.path, 'central/passwd');
  writePasswords(passwords, { 'bridge-lobby': BRIDGE_PASSWORD, 'door-service': SERVICE_PASSWORD, 'test-reader': READER_PASSWORD });
  const acl = join(tmp.path, 'central/door-agent.acl');
  // The example's door lines once more for the site's second door (as its comment says to do per door), and the
  // test's own reader of what the centre holds retained (the service's user only writes the service's topics).
  const exampleAcl = fillExample(join(EXAMPLE, 'central.acl'), {});
  const doorLines = exampleAcl.split('\n').filter((l) => l.includes(DOOR_UUID));
  const secondDoor = doorLines.map((l) => l.replaceAll(DOOR_UUID, SECOND_DOOR_UUID)).join('\n');
  writeFileSync(acl, `${exampleAcl}\n${secondDoor}\n\nuser test-reader\ntopic read ${P}/#\n`, { mode: 0o600 });
  await central.start(
    fillExample(join(EXAMPLE, 'central.conf'), {
      'listener 8883': `listener ${central.port} 127.0.0.1`,
      '/etc/mosquitto/certs/central.crt': tls.cert,
      '/etc/mosquitto/certs/central.key': tls.key,
      '/etc/mosquitto/passwd': passwords,
      '/etc/mosquitto/door-agent.acl': acl,
    }),
  );

  // The link between the sites, and the site's broker: its listener for the doors, then the shipped site.conf.
  link = new TcpRelay(central.port);
  await link.start();
  site = new ConfiguredMosquitto(join(tmp.path, 'site'), await freePort());
  await site.start(
    `listener ${site.port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n` +
      fillExample(join(EXAMPLE, 'site.conf'), {
        'central.example.org:8883': `127.0.0.1:${link.port}`,
        '/etc/mosquitto/ca_certificates/central-ca.crt': tls.ca,
        'remote_password CHANGE-ME': `remote_password ${BRIDGE_PASSWORD}`,
      }),
  );
  siteOperator = await Operator.connect(`mqtt://127.0.0.1:${site.port}`);
  await siteOperator.subscribe(`${P}/doors/+/reply`, '$SYS/broker/connection/+/state');

  // The reference service, on the central broker only, signing its commands and retained messages.
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const svc = join(tmp.path, 'svc');
  mkdirSync(svc, { recursive: true });
  writeFileSync(join(svc, 'command-secret'), `${SECRET}\n`, { mode: 0o600 });
  writeFileSync(join(svc, 'mqtt-password'), `${SERVICE_PASSWORD}\n`, { mode: 0o600 });
  writeFileSync(join(svc, 'holidays.txt'), '2026-12-25\n2026-12-26\n');
  const serviceConfig = join(svc, 'config.yaml');
  writeFileSync(
    serviceConfig,
    `server:
  listen: 127.0.0.1:${port}
  dataDir: ${svc}/data
  lockReplyTimeoutSeconds: 3
  holidaysFile: ${svc}/holidays.txt
  resources:
    - { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door }
    - { resourceId: 13, uuid: ${SECOND_DOOR_UUID}, type: DOOR, name: Back door }
mqtt:
  url: "${centralUrl()}"
  caFile: ${tls.ca}
  username: door-service
  passwordFile: ${svc}/mqtt-password
  topicPrefix: ${P}
  commandSecretFile: ${svc}/command-secret
`,
  );
  key = runCli(['service', 'key', 'create', '--rank', 'ADMIN', '--config', serviceConfig]).stdout.trim();
  service = await startServiceProcess(serviceConfig, { ready: 'connected to the broker' });

  centre = await centralClient('door-service');
  centre.on('message', (topic, payload) => {
    try {
      atCentre.push({ topic, json: JSON.parse(payload.toString('utf8')) as Record<string, unknown> });
    } catch {
      // not JSON (a status): not looked at
    }
  });
  await centre.subscribeAsync([`${P}/doors/+/events`, `${P}/doors/+/state`, `${P}/agents/+/status`], { qos: 1 });

  // Alice, with a card, in Staff.
  const staff = await call('POST', '/groups', { type: 'users', name: 'Staff', add_ids: [] });
  const invite = await call('POST', '/invites', {
    emails: ['alice@example.org'],
    groups: [{ id: staff.body.group_id, name: 'Staff' }],
    smartcards: [[{ number: ALICE_CARD, label: 'badge' }]],
    no_email: true,
  });
  expect(invite.body.added).toEqual(['alice@example.org']);

  // The agent lobby-pi, on the site's broker, syncing from the service over HTTP only when told to (the revision
  // message) or hourly: so a change reaches it through the bridge or not at all within the test.
  pty = new PtyPair(join(tmp.path, 'reader'), join(tmp.path, 'terminal'));
  await pty.plugIn();
  const dir = join(tmp.path, 'agent');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'api-key'), `${key}\n`, { mode: 0o600 });
  writeFileSync(join(dir, 'command-secret'), `${SECRET}\n`, { mode: 0o600 });
  agentConfig = join(dir, 'config.yaml');
  writeFileSync(
    agentConfig,
    `agent: { id: lobby-pi, dataDir: ${dir}/data, timezone: Europe/Berlin }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${dir}/gpio }
mqtt: { url: "mqtt://127.0.0.1:${site.port}", topicPrefix: ${P}, commandSecretFile: ${dir}/command-secret, keepaliveSeconds: 5 }
service: { baseUrl: "${base}", apiKeyFile: ${dir}/api-key, syncIntervalSeconds: 3600, startDelaySeconds: 0 }
doors:
  - { uuid: ${DOOR_UUID}, resourceId: 12, name: Front door, relay: { pin: 17 }, unlockSeconds: 1, reader: { path: ${tmp.path}/reader } }
  - { uuid: ${SECOND_DOOR_UUID}, resourceId: 13, name: Back door, relay: { pin: 18 }, unlockSeconds: 1 }
`,
  );
  agent = new Daemon(agentConfig);
  await agent.waitForMessage('connected to the broker', 30_000);
  await agent.waitForMessage('reader connected', 30_000);
  await agent.waitForMessage('sync done', 30_000);
}, 120_000);

afterAll(async () => {
  await agent?.stop('SIGKILL');
  await siteOperator?.end();
  await centre?.endAsync().catch(() => undefined);
  await service?.stop();
  await pty?.unplug();
  await site?.stop();
  await link?.cut();
  await central?.stop();
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

/** What `client`, subscribing now, gets retained on `topic` within 3 s (null: nothing). */
async function retained(client: mqtt.MqttClient, topic: string): Promise<string | null> {
  const got = new Promise<string | null>((resolve) => {
    const timer = setTimeout(() => resolve(null), 3000);
    client.on('message', (t, payload, packet) => {
      if (t !== topic || !packet.retain) return;
      clearTimeout(timer);
      resolve(payload.toString('utf8'));
    });
  });
  await client.subscribeAsync(topic, { qos: 1 });
  return got;
}

async function retainedAtSite(topic: string): Promise<string | null> {
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${site.port}`, { reconnectPeriod: 0 });
  try {
    return await retained(client, topic);
  } finally {
    await client.endAsync();
  }
}

async function retainedAtCentre(topic: string): Promise<string | null> {
  const client = await centralClient('test-reader');
  try {
    return await retained(client, topic);
  } finally {
    await client.endAsync();
  }
}

/** The revision the central broker holds retained, once it is past `after` (the service publishes after its commit). */
async function revisionAtCentreAfter(after: number): Promise<{ revision: number }> {
  let latest: { revision: number } | null = null;
  await waitUntilAsync(
    async () => {
      const text = await retainedAtCentre(`${P}/directory/revision`);
      latest = text === null ? null : (JSON.parse(text) as { revision: number });
      return latest !== null && latest.revision > after;
    },
    30_000,
    `a revision past ${after} retained at the centre`,
  );
  return latest!;
}

async function waitUntilAsync(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(200);
  }
}

/** The bridge's own news on the site's broker: both of its connections to the centre up ('1') or down ('0'). */
async function bridgeState(state: '0' | '1', timeoutMs: number): Promise<void> {
  const latest = (id: string) => siteOperator.received.filter((m) => m.topic === `$SYS/broker/connection/${id}/state`).at(-1)?.text;
  await waitUntil(
    () => latest('bridge-lobby') === state && latest('bridge-lobby-live') === state,
    timeoutMs,
    `both bridge connections ${state === '1' ? 'up' : 'down'}`,
  );
}

function tap(card: string): void {
  pty.write(`${card}\r\n`);
}

/** A command signed as docs/mqtt.md shows (the site's own tools hold the secret too). */
function signedUnlock(uuid: string, seconds: number, requestId: string): string {
  const issuedAt = Math.floor(Date.now() / 1000);
  const signature = sign(SECRET, signedString({ uuid, lockState: false, unlockTime: seconds, requestId, issuedAt }));
  return JSON.stringify({ lock_state: false, unlock_time: seconds, request_id: requestId, issued_at: issuedAt, signature });
}

describe('a site with a broker of its own, bridged to the central broker (examples/mosquitto-bridge)', () => {
  it('with the link up: the retained holidays cross to the site, a command from the centre and its reply cross both ways', async () => {
    await bridgeState('1', 60_000);
    let holidays: string | null = null;
    await waitUntilAsync(async () => (holidays = await retainedAtSite(`${P}/holidays`)) !== null, 30_000, 'the holidays retained at the site');
    expect(JSON.parse(holidays!)).toMatchObject({ dates: ['2026-12-25', '2026-12-26'] });
    expect(await call('POST', '/setlockstatus', { uuid: DOOR_UUID, lock_state: false, unlock_time: 1 })).toEqual({
      status: 200,
      body: { success: 'Front door unlocked for 1 s' },
    });
    await waitUntil(() => readLevel(relayValue) === '0', 10_000, 'relocked');
    // What the doors publish crosses the other way.
    await waitUntil(() => atCentre.some((m) => m.topic === `${P}/doors/${DOOR_UUID}/state`), 20_000, 'the door state at the centre');
  }, 90_000);

  it('the link down: the door decides and takes a local command; a lockdown and a revocation made at the centre arrive in order when it returns', async () => {
    const seqAtCut = Math.max(0, ...auditEvents(agentConfig).map((e) => e.seq as number));
    const revisionBefore = (await revisionAtCentreAfter(0)).revision;
    const logsAtCut = agent.logs.length;
    await link.cut();
    await bridgeState('0', 30_000);

    // The door keeps deciding from its cache: Alice is let in, an unknown card is not.
    tap(ALICE_CARD);
    await waitUntil(() => readLevel(relayValue) === '1', 10_000, 'Alice let in while the link is down');
    await waitUntil(() => readLevel(relayValue) === '0', 10_000, 'relocked');
    tap(UNKNOWN_CARD);
    await waitUntil(() => auditEvents(agentConfig).some((e) => e.type === 'access_denied' && (e.seq as number) > seqAtCut), 10_000, 'the unknown card refused');

    // A local command on the site's broker, signed, is obeyed and answered there.
    const local = randomUUID();
    const reply = await siteOperator.command(`${P}/doors/${DOOR_UUID}/reply`, `${P}/doors/${DOOR_UUID}/set`, signedUnlock(DOOR_UUID, 1, local), local);
    expect(reply).toMatchObject({ status: 200, success: 'Front door unlocked for 1 s', request_id: local });
    await waitUntil(() => readLevel(relayValue) === '0', 10_000, 'relocked after the local command');

    // At the centre meanwhile: a command cannot reach the door (504); the Back door is locked down, then Alice is
    // suspended.
    const late = await call('POST', '/setlockstatus', { uuid: DOOR_UUID, lock_state: false, unlock_time: 5 });
    expect(late.status).toBe(504);
    expect(await call('POST', '/lockdown', { uuid: SECOND_DOOR_UUID, active: true, reason: 'police on site', by: 'Reception' })).toEqual({
      status: 200,
      body: { success: 'lockdown started for Back door' },
    });
    const alice = (await call('GET', '/multipleusers')).body.find((u) => u.email === 'alice@example.org')!;
    expect((await call('PUT', '/togglesuspension', { email_id: alice.email_id })).status).toBe(200);
    const revisionAtCentre = await revisionAtCentreAfter(revisionBefore);
    await sleep(2000);
    const sinceCut = () => agent.logs.slice(logsAtCut);
    expect(sinceCut().filter((l) => l.msg === 'lockdown started' || l.msg === 'directory changed at the service: syncing')).toEqual([]);

    // The link returns: both reach the door, the lockdown first, as they were made.
    await link.restore();
    await bridgeState('1', 90_000);
    await agent.waitForLog((l) => l.msg === 'sync done' && (l.revision as number) >= revisionAtCentre.revision, 60_000, logsAtCut);
    const lockdownAt = sinceCut().findIndex((l) => l.msg === 'lockdown started');
    const syncAt = sinceCut().findIndex((l) => l.msg === 'directory changed at the service: syncing');
    expect(lockdownAt).toBeGreaterThanOrEqual(0);
    expect(syncAt).toBeGreaterThan(lockdownAt);
    expect(sinceCut()[lockdownAt]).toMatchObject({ by: 'Reception', reason: 'police on site' });

    // Alice is refused at the reader now; the Back door is in lockdown.
    tap(ALICE_CARD);
    await waitUntil(
      () => auditEvents(agentConfig).some((e) => e.type === 'access_denied' && e.reason === 'user_suspended' && (e.seq as number) > seqAtCut),
      10_000,
      'Alice refused: suspended',
    );
    expect(readLevel(relayValue)).toBe('0');
    const backState = JSON.parse((await retainedAtSite(`${P}/doors/${SECOND_DOOR_UUID}/state`))!) as { lockdown: boolean };
    expect(backState.lockdown).toBe(true);

    // The command the centre gave up on (504) never reaches the door late: the only remote command since the cut
    // is the local one.
    const events = auditEvents(agentConfig).filter((e) => (e.seq as number) > seqAtCut);
    const remote = events.filter((e) => typeof e.cause === 'string' && e.cause.startsWith('remote command'));
    expect([...new Set(remote.map((e) => e.cause))]).toEqual([`remote command ${local}`]);
    expect(events.filter((e) => e.type === 'command_rejected')).toEqual([]);

    // The site's broker holds the service's retained messages, as the centre does: a door connecting there now
    // gets the revision, the lockdown and the holidays.
    for (const topic of [`${P}/directory/revision`, `${P}/doors/${SECOND_DOOR_UUID}/lockdown`, `${P}/holidays`]) {
      const atSite = await retainedAtSite(topic);
      expect(atSite, topic).not.toBeNull();
      expect(atSite, topic).toBe(await retainedAtCentre(topic));
    }
    expect(JSON.parse((await retainedAtSite(`${P}/directory/revision`))!).revision).toBeGreaterThanOrEqual(revisionAtCentre.revision);
    expect(JSON.parse((await retainedAtSite(`${P}/doors/${SECOND_DOOR_UUID}/lockdown`))!)).toMatchObject({ lockdown: true, by: 'Reception' });

    // Every event the door recorded while the link was down reaches the centre, in order.
    const ids = events.map((e) => e.id as string);
    await waitUntil(() => ids.every((id) => atCentre.some((m) => m.json.id === id)), 30_000, 'the events of the outage at the centre');
    const arrived = [...new Set(atCentre.filter((m) => m.topic.endsWith('/events')).map((m) => m.json.id as string))].filter((id) => ids.includes(id));
    expect(arrived).toEqual(ids);
  }, 240_000);
});
