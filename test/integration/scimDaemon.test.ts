import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOOR_UUID, runCli, tempDir } from '../support/cli.js';
import { Daemon } from '../support/daemon.js';
import { Mosquitto } from '../support/mosquitto.js';
import { freePort } from '../support/net.js';
import { PATCH_OP } from '../support/scimService.js';
import { startServiceProcess, type ServiceProcess } from '../support/serviceProcess.js';
import { PtyPair } from '../support/socat.js';

// Issue 56: a SCIM deactivation revokes at the doors as a suspension does, within 2 s. Real processes: mosquitto,
// `door-agent service` with server.identity.scim, and `door-agent run` with a socat reader on simulated GPIO. People
// and their group come over SCIM as Okta and Entra ID send them; each deactivation is timed from the PATCH's answer
// until the door refuses the person's card.

const tmp = tempDir('door-agent-scim-door-');
const REVOKED_WITHIN_MS = 2000;
let broker: Mosquitto;
let service: ServiceProcess | undefined;
let agent: Daemon | undefined;
let pty: PtyPair;
let base: string;
let adminKey: string;
let scimToken: string;

beforeAll(async () => {
  broker = new Mosquitto(join(tmp.path, 'broker'));
  await broker.start();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  mkdirSync(join(tmp.path, 'svc'), { recursive: true });
  const serviceConfig = join(tmp.path, 'svc', 'config.yaml');
  writeFileSync(
    serviceConfig,
    `server:
  listen: 127.0.0.1:${port}
  dataDir: ${tmp.path}/svc/data
  resources: [ { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door } ]
  identity: { scim: { enabled: true } }
mqtt: { url: "${broker.url}", topicPrefix: site }
`,
  );
  const key = (args: string[]) => {
    const made = runCli(['service', 'key', 'create', ...args, '--config', serviceConfig]);
    if (made.status !== 0) throw new Error(`service key create ${args.join(' ')} failed: ${made.stderr}`);
    return made.stdout.trim();
  };
  adminKey = key(['--rank', 'ADMIN']);
  scimToken = key(['--rank', 'ADMIN', '--scope', 'scim']);
  writeFileSync(join(tmp.path, 'door-key'), `${key(['--rank', 'DOOR'])}\n`);
  service = await startServiceProcess(serviceConfig, { ready: 'connected to the broker' });
  pty = new PtyPair(join(tmp.path, 'reader'), join(tmp.path, 'terminal'));
  await pty.plugIn();
});

afterAll(async () => {
  await agent?.stop('SIGKILL');
  await service?.stop();
  await pty?.unplug();
  await broker?.stop();
  tmp.cleanup();
});

async function http(method: string, path: string, key: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': path.startsWith('/scim/') ? 'application/scim+json' : 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}
const scim = (method: string, path: string, body?: unknown) => http(method, `/scim/v2${path}`, scimToken, body);

/** A person made over SCIM with a card given at the service: their SCIM id. */
async function person(body: Record<string, unknown>, card: string): Promise<string> {
  const made = await scim('POST', '/Users', body);
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  const email = (made.body.emails as Array<{ value: string }>)[0]!.value;
  const users = (await http('GET', '/multipleusers', adminKey)).body as unknown as Array<{ email: string; email_id: number }>;
  const emailId = users.find((u) => u.email === email)!.email_id;
  expect((await http('PUT', '/modifysmartcard', adminKey, { email_id: emailId, smartcards: [{ number: card, label: 'badge' }] })).status).toBe(200);
  return made.body.id as string;
}

/** Taps `card` at the reader; the door's decision (its log line), and whether it was refused as suspended. */
async function tap(card: string): Promise<{ granted: boolean; reason?: unknown }> {
  const from = agent!.logs.length;
  pty.write(`${card}\r\n`);
  const line = await agent!.waitForLog((l) => l.msg === 'access granted' || l.msg === 'access denied', 10_000, from);
  return line.msg === 'access granted' ? { granted: true } : { granted: false, reason: line.reason };
}

/** From `answered` (the PATCH's answer), taps every 100 ms until the door refuses `card` as suspended: the time it took. */
async function refusedAfter(card: string, answered: number): Promise<number> {
  for (;;) {
    const decision = await tap(card);
    if (!decision.granted) {
      expect(decision.reason).toBe('user_suspended');
      return performance.now() - answered;
    }
    if (performance.now() - answered > 10_000) throw new Error(`the door still granted ${card} 10 s after the deactivation`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('a SCIM deactivation at a real door', () => {
  it("Okta's and Entra ID's deactivations refuse the person's card within 2 s of the PATCH's answer", async () => {
    // Okta, "SCIM 2.0 Protocol Reference", Create the User.
    const okta = await person(
      {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: 'test.user@okta.local',
        name: { givenName: 'Test', familyName: 'User' },
        emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }],
        displayName: 'Test User',
        locale: 'en-US',
        externalId: '00ujl29u0le5T6Aj10h7',
        groups: [],
        password: '1mz050nq',
        active: true,
      },
      '4213578',
    );
    // Microsoft Entra ID, "Tutorial: Develop and plan provisioning for a SCIM endpoint", Create User.
    const entra = await person(
      {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
        externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
        userName: 'Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee',
        active: true,
        emails: [{ primary: true, type: 'work', value: 'Test_User_11bb11bb-cc22-dd33-ee44-55ff55ff55ff@testuser.com' }],
        meta: { resourceType: 'User' },
        name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
        roles: [],
      },
      '5550123',
    );
    // The group the door lets in (agent access.groups), pushed as Okta pushes one (Create Groups), with both.
    const staff = await scim('POST', '/Groups', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'Staff',
      members: [{ value: okta }, { value: entra }],
    });
    expect(staff.status, JSON.stringify(staff.body)).toBe(201);

    const agentConfig = join(tmp.path, 'agent.yaml');
    writeFileSync(
      agentConfig,
      `agent: { id: front, dataDir: ${tmp.path}/agent, timezone: Europe/Berlin }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${tmp.path}/gpio }
mqtt: { url: "${broker.url}", topicPrefix: site }
service: { baseUrl: "${base}", apiKeyFile: ${tmp.path}/door-key, syncIntervalSeconds: 3600, startDelaySeconds: 0 }
doors:
  - { uuid: ${DOOR_UUID}, resourceId: 12, name: Front door, relay: { pin: 17 }, unlockSeconds: 1, reader: { path: ${tmp.path}/reader } }
`,
    );
    agent = new Daemon(agentConfig);
    await agent.waitForMessage('reader connected', 30_000);
    await agent.waitForLog((l) => l.msg === 'directory revisions are pushed: changes reach this door within seconds', 30_000);
    await agent.waitForMessage('sync done', 30_000);
    expect(await tap('4213578')).toEqual({ granted: true });
    expect(await tap('5550123')).toEqual({ granted: true });

    // Okta, Update a specific User (PATCH): "When a user is deactivated, Okta sends this request".
    const oktaPatch = await scim('PATCH', `/Users/${okta}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] });
    const oktaAnswered = performance.now();
    expect(oktaPatch.status).toBe(200);
    const oktaMs = await refusedAfter('4213578', oktaAnswered);

    // Entra ID, Disable User.
    const entraPatch = await scim('PATCH', `/Users/${entra}`, { Operations: [{ op: 'Replace', path: 'active', value: false }], schemas: [PATCH_OP] });
    const entraAnswered = performance.now();
    expect(entraPatch.status).toBe(200);
    const entraMs = await refusedAfter('5550123', entraAnswered);

    expect(oktaMs, `Okta's deactivation reached the door after ${Math.round(oktaMs)} ms`).toBeLessThan(REVOKED_WITHIN_MS);
    expect(entraMs, `Entra ID's deactivation reached the door after ${Math.round(entraMs)} ms`).toBeLessThan(REVOKED_WITHIN_MS);
  }, 90_000); // three processes and a few CLI starts: room for a loaded machine
});
