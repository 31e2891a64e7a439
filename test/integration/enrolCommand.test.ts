import { createHash, generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { fingerprint } from '../../src/protocol/fleetSigning.js';
import { listing } from '../support/boardListing.js';
import { ROOT, runCli, tempDir } from '../support/cli.js';
import { Mosquitto } from '../support/mosquitto.js';
import { freePort, rawRequest } from '../support/net.js';
import { startServiceProcess, type ServiceProcess } from '../support/serviceProcess.js';
import { startEnrol, type Enrolling } from '../support/enrolRun.js';

// `door-agent enrol` as an installer runs it on a new board (the built CLI), against a real `door-agent service`
// with server.fleet and agentMqtt and a real mosquitto run by its dynamic security plugin (docs/fleet.md,
// "Enrolment", "MQTT logins"; issue 54 item 1). The service's side on both engines: fleetEnrol.test.ts.

const tmp = tempDir('door-agent-enrol-command-');
const SERVICE_MQTT = { username: 'service', password: 'service-broker-password-1234' };
let broker: Mosquitto;
let service: ServiceProcess;
let serviceConfig: string;
let serviceUrl: string;
let adminKey: string;
let keysDir: string;

beforeAll(async () => {
  keysDir = join(tmp.path, 'keys');
  const keys = runCli(['service', 'fleet-keys', '--out', keysDir]);
  expect(keys.status, keys.stderr).toBe(0);
  broker = new Mosquitto(join(tmp.path, 'broker'), undefined, false, undefined, {
    admin: SERVICE_MQTT,
    // The agents' role, and the service's own use of the broker (its admin client also talks to the doors).
    roles: [
      {
        rolename: 'door-agent',
        acls: [
          { acltype: 'publishClientSend', topic: 'door-agent/#', allow: true },
          { acltype: 'subscribePattern', topic: 'door-agent/#', allow: true },
        ],
      },
      { rolename: 'doors', acls: [{ acltype: 'publishClientSend', topic: 'door-agent/#', allow: true }] },
    ],
    adminRoles: ['doors'],
  });
  await broker.start();
  const port = await freePort();
  serviceUrl = `http://127.0.0.1:${port}`;
  const dataDir = join(tmp.path, 'service');
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(join(tmp.path, 'service-mqtt.password'), `${SERVICE_MQTT.password}\n`, { mode: 0o600 });
  serviceConfig = join(tmp.path, 'service.yaml');
  writeFileSync(
    serviceConfig,
    `server:
  listen: 127.0.0.1:${port}
  publicUrl: ${serviceUrl}
  dataDir: ${dataDir}
  fleet:
    identityKeyFile: ${join(keysDir, 'identity.key')}
    releasePublicKeyFile: ${join(keysDir, 'release.pub')}
    agentMqtt: { url: "${broker.url}", role: door-agent }
mqtt:
  url: ${broker.url}
  username: ${SERVICE_MQTT.username}
  passwordFile: ${join(tmp.path, 'service-mqtt.password')}
`,
  );
  const key = runCli(['service', 'key', 'create', '--rank', 'ADMIN', '--config', serviceConfig]);
  expect(key.status, key.stderr).toBe(0);
  adminKey = key.stdout.trim();
  service = await startServiceProcess(serviceConfig, { captureStderr: true });
});

afterAll(async () => {
  await service?.stop();
  await broker?.stop();
  tmp.cleanup();
});

let boards = 0;
/** A blank directory for a board: its configuration goes to etc/config.yaml, its data to data/. */
function newBoard(): { dir: string; config: string; data: string } {
  const dir = join(tmp.path, `board-${++boards}`);
  mkdirSync(dir);
  return { dir, config: join(dir, 'etc', 'config.yaml'), data: join(dir, 'data') };
}

/** A new code from `door-agent service enrol-code`, as an operator makes one: the URL and the code of the line it prints. */
function cliCode(): { url: string; code: string } {
  const r = runCli(['service', 'enrol-code', '--config', serviceConfig]);
  expect(r.status, r.stderr).toBe(0);
  expect(r.stderr).toMatch(/^a single-use enrolment code, good until \S+ \(24 h\)/);
  expect(r.stdout.startsWith('door-agent enrol ')).toBe(true);
  const [, , url, code] = r.stdout.trim().split(' ');
  return { url: url!, code: code! };
}

/** A call of the service's API on a connection of its own (an ADMIN key unless `headers` say otherwise). */
async function api(method: 'GET' | 'POST', path: string, body?: object, headers: Record<string, string> = { authorization: `Bearer ${adminKey}` }) {
  const res = await rawRequest(
    Number(new URL(serviceUrl).port),
    method,
    path,
    Object.assign({ host: new URL(serviceUrl).host }, body ? { 'content-type': 'application/json' } : {}, headers),
    body ? JSON.stringify(body) : undefined,
  );
  return { status: res.status, body: JSON.parse(res.body.toString('utf8')) as Record<string, unknown> };
}

/** A new code from POST /fleet/enrol-codes, as the console makes one. */
async function newCode(): Promise<{ url: string; code: string }> {
  const res = await api('POST', '/fleet/enrol-codes', {});
  expect(res.status).toBe(200);
  const [, , url, code] = (res.body.command as string).split(' ');
  return { url: url!, code: code! };
}

/** `door-agent enrol ARGS` started on a board (test/support/enrolRun.ts). */
function enrolOn(board: ReturnType<typeof newBoard>, args: string[]): Enrolling {
  return startEnrol(args, board);
}

/** The command run to its end, without blocking this process (the service answers it from another). */
async function enrolToEnd(board: ReturnType<typeof newBoard>, args: string[]) {
  const run = enrolOn(board, args);
  const status = await run.exited;
  return { status, stdout: run.stdout(), stderr: run.stderr() };
}

let firstCode: { url: string; code: string };

describe('door-agent service fleet-keys', () => {
  it('wrote the two pairs with the private halves 0600, and refuses to overwrite one, naming it', () => {
    expect(listing(keysDir)).toEqual({ 'identity.key': '600', 'identity.pub': '644', 'release.key': '600', 'release.pub': '644' });
    const again = runCli(['service', 'fleet-keys', '--out', keysDir]);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain(`${join(keysDir, 'identity.key')} exists: door-agent service fleet-keys never overwrites a key`);
  });
});

describe('door-agent enrol', () => {
  // In order: the code the first test leaves unused is enrolled with by the second, and used again by the fourth.
  it('refuses at once, sending nothing, when the board has a configuration already', async () => {
    const board = newBoard();
    mkdirSync(join(board.dir, 'etc'));
    writeFileSync(board.config, 'agent: { id: old }\n');
    firstCode = cliCode();
    const r = await enrolToEnd(board, [firstCode.url, firstCode.code]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      `${board.config} exists: this board is configured already, and door-agent enrol never overwrites a configuration (nothing was sent)`,
    );
    expect(listing(board.dir)).toEqual({ etc: '755', 'etc/config.yaml': '644' });
    // The code was not sent: the next test enrols with it.
  });

  it('enrols a blank board: adopted in the console, it writes its secrets, keys and configuration; its broker login works', async () => {
    const board = newBoard();
    const run = enrolOn(board, [firstCode.url, firstCode.code]);
    const id = await run.waiting();
    // Pending, with what the board reported, until an operator decides.
    const listed = (await api('GET', '/fleet/agents')).body.agents as Array<{ enrolment_id: string; state: string; facts: { hostname: string; arch: string } }>;
    expect(listed.find((a) => a.enrolment_id === id)).toMatchObject({ state: 'pending', facts: { hostname: expect.any(String), arch: expect.any(String) } });
    expect(listing(board.dir)).toEqual({ data: '750', 'data/fleet': '750', 'data/fleet/enrolment.json': '600' });
    expect(existsSync(board.config)).toBe(false);

    expect((await api('POST', `/fleet/agents/${id}/adopt`, { agent_id: 'lobby' })).status).toBe(200);
    expect(await run.exited, run.stderr()).toBe(0);
    expect(run.stdout()).toContain(`enrolled as agent lobby of ${serviceUrl}: wrote ${board.config}`);
    expect(run.stdout()).toContain('next: systemctl enable --now door-agent');
    expect(listing(board.dir)).toEqual({
      data: '750',
      'data/fleet': '750',
      etc: '755',
      'etc/config.yaml': '640',
      'etc/fleet': '755',
      'etc/fleet/release.pub': '644',
      'etc/fleet/service.pub': '644',
      'etc/secrets': '700',
      'etc/secrets/mqtt.password': '600',
      'etc/secrets/service.key': '600',
    });
    const etc = join(board.dir, 'etc');
    expect(parseYaml(readFileSync(board.config, 'utf8'))).toEqual({
      agent: { id: 'lobby', dataDir: board.data },
      service: { baseUrl: serviceUrl, apiKeyFile: join(etc, 'secrets/service.key') },
      mqtt: { url: broker.url, username: 'lobby', passwordFile: join(etc, 'secrets/mqtt.password') },
      fleet: { servicePublicKeyFile: join(etc, 'fleet/service.pub'), releasePublicKeyFile: join(etc, 'fleet/release.pub') },
    });
    expect(readFileSync(join(etc, 'fleet/release.pub'), 'utf8')).toBe(readFileSync(join(keysDir, 'release.pub'), 'utf8'));
    expect(readFileSync(join(etc, 'fleet/service.pub'), 'utf8')).toBe(readFileSync(join(keysDir, 'identity.pub'), 'utf8'));

    // The configuration passes config check as written.
    const check = runCli(['config', 'check', '--config', board.config]);
    expect(check.status, check.stderr).toBe(0);
    expect(check.stdout).toContain('no doors yet: this agent takes its configuration from the service (docs/fleet.md)');

    // Its key reads the directory; its broker login is accepted, a wrong password is not.
    const apiKey = readFileSync(join(etc, 'secrets/service.key'), 'utf8').trim();
    expect((await api('GET', '/directory', undefined, { authorization: `Bearer ${apiKey}` })).status).toBe(200);
    const password = readFileSync(join(etc, 'secrets/mqtt.password'), 'utf8').trim();
    const client = await mqtt.connectAsync(broker.url, { username: 'lobby', password, reconnectPeriod: 0, connectTimeout: 10_000 });
    await client.publishAsync('door-agent/lobby/test', 'hello', { qos: 1 });
    await client.endAsync();
    await expect(mqtt.connectAsync(broker.url, { username: 'lobby', password: `${password}x`, reconnectPeriod: 0, connectTimeout: 10_000 })).rejects.toThrow();

    // Delivered: the poll secret is dead.
    const agent = ((await api('GET', '/fleet/agents')).body.agents as Array<{ enrolment_id: string; delivered: boolean }>).find((a) => a.enrolment_id === id);
    expect(agent?.delivered).toBe(true);
  });

  it("a board fresh from the installer: its unedited example configuration is set aside, kept, and the board enrolled; an edited one is a person's and refused", async () => {
    // As scripts/system-setup.sh writes it: the example with its first line pointing at the installed schema.
    const example = readFileSync(join(ROOT, 'config/door-agent.example.yaml'), 'utf8');
    const installed = example.replace(/^[^\n]*\n/, '# yaml-language-server: $schema=/opt/door-agent/schema/config.schema.json\n');
    const edited = newBoard();
    mkdirSync(join(edited.dir, 'etc'));
    writeFileSync(edited.config, installed.replace('id: lobby-pi', 'id: my-own-door'));
    const code = await newCode();
    const refused = await enrolToEnd(edited, [code.url, code.code]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`${edited.config} exists: this board is configured already`);

    const board = newBoard();
    mkdirSync(join(board.dir, 'etc'));
    writeFileSync(board.config, installed);
    const run = enrolOn(board, [code.url, code.code]);
    const id = await run.waiting();
    expect(readFileSync(board.config, 'utf8')).toBe(installed); // nothing set aside before the adoption
    expect((await api('POST', `/fleet/agents/${id}/adopt`, { agent_id: 'fresh-install' })).status).toBe(200);
    expect(await run.exited, run.stderr()).toBe(0);
    expect(run.stdout()).toContain(`the installer's example configuration, unedited, is kept as ${board.config}.example`);
    expect(readFileSync(`${board.config}.example`, 'utf8')).toBe(installed);
    expect(parseYaml(readFileSync(board.config, 'utf8'))).toMatchObject({ agent: { id: 'fresh-install' } });
  });

  it('refused by the operator: prints the reason and leaves the board as it was', async () => {
    const board = newBoard();
    const { url, code } = await newCode();
    const run = enrolOn(board, [url, code]);
    const id = await run.waiting();
    expect((await api('POST', `/fleet/agents/${id}/refuse`, { reason: 'not a board of this site' })).status).toBe(200);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain(`an operator refused this board (enrolment ${id}): not a board of this site; nothing was written`);
    expect(listing(board.dir)).toEqual({});
  });

  it('refuses a used, expired, unknown, forged or malformed code with the reason, writing nothing', async () => {
    const board = newBoard();
    // Expired: its row says so (the service's clock is the machine's).
    const expiring = await newCode();
    const secret = expiring.code.split('.')[1]!;
    const db = new Database(join(tmp.path, 'service', 'service.db'));
    db.pragma('busy_timeout = 10000');
    db.prepare('UPDATE fleet_enrol_codes SET expires_at = ? WHERE secret_sha256 = ?').run(Date.now() - 1000, createHash('sha256').update(secret).digest('hex'));
    db.close();
    const fp = firstCode.code.split('.')[2]!;
    // A code naming another service's key: whoever answers at the URL is not trusted.
    const other = fingerprint(generateKeyPairSync('ed25519').publicKey);
    const real = await newCode();
    // Each on the same blank board, at once (none may write anything).
    const [used, expired, unknown, forged, ...malformed] = await Promise.all(
      [
        [firstCode.url, firstCode.code],
        [expiring.url, expiring.code],
        [serviceUrl, `da1.${'a'.repeat(32)}.${fp}`],
        [real.url, `da1.${real.code.split('.')[1]}.${other}`],
        [serviceUrl, 'da1.tooshort.abc'],
        ['ftp://127.0.0.1', real.code],
        [serviceUrl],
      ].map((args) => enrolToEnd(board, args)),
    );
    expect(used!.status).toBe(1);
    expect(used!.stderr).toMatch(
      /refused the code: this enrolment code was used at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: ask the operator for a new one; nothing was written/,
    );
    expect(expired!.status).toBe(1);
    expect(expired!.stderr).toMatch(/refused the code: this enrolment code expired at .* UTC: ask the operator for a new one/);

    expect(unknown!.status).toBe(1);
    expect(unknown!.stderr).toContain('refused the code: this enrolment code is not known to this service (mistyped, or made by another service)');

    expect(forged!.status).toBe(1);
    expect(forged!.stderr).toContain(`the service at ${serviceUrl} signs with a key of fingerprint ${fp}, not the code's ${other}`);
    expect(forged!.stderr).toContain("the code's secret was not sent, nothing was written");
    // Refused at the challenge: the real service never saw the secret, and the code is still good.
    const facts = { hostname: 'x', version: '0.1.0', arch: 'amd64', node: 'v20', gpio_chips: [], serial_devices: [] };
    expect((await api('POST', '/fleet/enrol', { secret: real.code.split('.')[1], facts }, {})).status).toBe(200);

    // Malformed: usage errors naming what is wrong.
    expect(malformed.map((r) => r.status)).toEqual([2, 2, 2]);
    expect(malformed[0]!.stderr).toContain('CODE "da1.tooshort.abc" is not an enrolment code');
    expect(malformed[1]!.stderr).toContain('URL "ftp://127.0.0.1" is not the service\'s http:// or https:// address');
    expect(listing(board.dir)).toEqual({});
  });

  it('resumes after it was killed while waiting: run again without the code, it takes the same enrolment', async () => {
    const board = newBoard();
    const { url, code } = await newCode();
    const first = enrolOn(board, [url, code]);
    const id = await first.waiting();
    first.child.kill('SIGKILL');
    await first.exited;
    expect(listing(board.dir)['data/fleet/enrolment.json']).toBe('600');

    const second = enrolOn(board, []);
    expect(await second.waiting()).toBe(id);
    expect((await api('POST', `/fleet/agents/${id}/adopt`, {})).status).toBe(200);
    expect(await second.exited, second.stderr()).toBe(0);
    expect(existsSync(board.config)).toBe(true);
    expect(existsSync(join(board.data, 'fleet', 'enrolment.json'))).toBe(false);
  });

  it('holds the grant back (503, the reason) when the broker login cannot be made: a client the service did not make is left alone', async () => {
    const { code } = await newCode();
    const facts = { hostname: 'x', version: '0.1.0', arch: 'amd64', node: 'v20', gpio_chips: [], serial_devices: [] };
    const enrolled = await api('POST', '/fleet/enrol', { secret: code.split('.')[1], facts }, {});
    expect(enrolled.status).toBe(200);
    const { enrolment_id: id, poll_secret: poll } = enrolled.body.accepted as { enrolment_id: string; poll_secret: string };
    // The service's own broker user: not one of the fleet's logins.
    expect((await api('POST', `/fleet/agents/${id}/adopt`, { agent_id: SERVICE_MQTT.username })).status).toBe(200);
    const held = await api('GET', `/fleet/enrolments/${id}`, undefined, { authorization: `Bearer ${poll}` });
    expect(held.status).toBe(503);
    expect(held.body.error).toContain(
      `agent ${SERVICE_MQTT.username} is adopted, but the broker already has a client named ${SERVICE_MQTT.username} that this service did not make`,
    );
    // Its password was not changed: the service still talks to the broker as before.
    const client = await mqtt.connectAsync(broker.url, { ...SERVICE_MQTT, reconnectPeriod: 0, connectTimeout: 10_000 });
    await client.endAsync();
  });
});
