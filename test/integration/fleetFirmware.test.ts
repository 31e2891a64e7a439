import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SerialPort } from 'serialport';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetTaskSchema, fleetTasksAnswerSchema } from '../../src/api/fleetUpdates.js';
import { firmwareImage } from '../../src/readers/osdp/emulatorFiles.js';
import { OsdpEmulator } from '../../src/readers/osdp/readerEmulator.js';
import { ApiKeys, keyDigest } from '../../src/service/apiKeys.js';
import { openServiceDatabase } from '../../src/service/database.js';
import { SqliteDb } from '../../src/service/sql/sqliteDb.js';
import { DOOR_UUID, runCliAsync, tempDir } from '../support/cli.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';
import { freePort } from '../support/net.js';
import { startServiceProcess, type ServiceProcess } from '../support/serviceProcess.js';
import { PtyPair } from '../support/socat.js';

// Issue 54 item 4 end to end: a real `door-agent service` with server.fleet, a real `door-agent run` adopted as
// agent `hall` (its fleet section, its own DOOR key), an RS-485 line as a socat pty pair with the OSDP reader
// emulator (in this process) at address 3 (the Front door's entry reader) and 4 (its exit reader). An operator
// uploads a firmware file and creates a task through the API; the agent takes it from its exchange, sends it reader
// by reader, and reports. The relay's value file is sampled throughout: the door stays locked.

const tmp = tempDir('door-agent-fleet-firmware-');
const dir = tmp.path;
const config = join(dir, 'config.yaml');
const relay = join(dir, 'gpio/gpio17/value');

let service: ServiceProcess | null = null;
let daemon: Daemon | null = null;
let pty: PtyPair;
let port: SerialPort;
let pd: OsdpEmulator;
let base = '';
let admin = '';
const levels = new Set<string>();
let sampling: ReturnType<typeof setInterval> | null = null;

async function api(method: 'GET' | 'POST', path: string, body?: unknown, type = 'application/json'): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = { authorization: `Bearer ${admin}` };
  if (body !== undefined) headers['content-type'] = type;
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: Buffer.isBuffer(body) ? body : JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.json() };
}

/** A firmware file uploaded and a task created for `readers`: the task's id. */
async function task(name: string, bytes: Buffer, readers: string[]): Promise<number> {
  const file = await api('POST', `/fleet/files?name=${name}`, bytes, 'application/octet-stream');
  expect(file.status, JSON.stringify(file.body)).toBe(200);
  const made = await api('POST', '/fleet/agents/hall/reader-firmware', { readers, file_id: (file.body as { file_id: number }).file_id });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  return fleetTaskSchema.parse(made.body).task_id;
}

async function ended(taskId: number) {
  let found: ReturnType<typeof fleetTaskSchema.parse> | undefined;
  await waitUntil(
    async () => {
      const tasks = fleetTasksAnswerSchema.parse((await api('GET', '/fleet/agents/hall/tasks')).body).tasks;
      found = tasks.find((t) => t.task_id === taskId);
      return found?.state === 'done' || found?.state === 'failed';
    },
    60_000,
    `task ${taskId} reported done or failed`,
  );
  return found!;
}

beforeAll(async () => {
  mkdirSync(join(dir, 'data'));
  const identity = generateKeyPairSync('ed25519');
  writeFileSync(join(dir, 'identity.pem'), identity.privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  writeFileSync(join(dir, 'service.pub'), identity.publicKey.export({ format: 'pem', type: 'spki' }));
  const listen = await freePort();
  base = `http://127.0.0.1:${listen}`;
  writeFileSync(
    join(dir, 'service.yaml'),
    `server:\n  listen: 127.0.0.1:${listen}\n  publicUrl: ${base}\n  dataDir: ${join(dir, 'service')}\n  fleet: { identityKeyFile: ${join(dir, 'identity.pem')} }\n`,
  );
  service = await startServiceProcess(join(dir, 'service.yaml'), { captureStderr: true });
  // The agent as adoption leaves it at the service (its own DOOR key), and an operator's key.
  const db = new SqliteDb(openServiceDatabase(join(dir, 'service/service.db')));
  try {
    const keys = new ApiKeys(db);
    admin = await keys.create('ADMIN', 0, Date.now());
    const agentKey = await keys.create('DOOR', 0, Date.now());
    const keyId = await db.value<number>('SELECT key_id FROM api_keys WHERE key_hash = ?', [keyDigest(agentKey)]);
    await db.run("INSERT INTO fleet_agents (enrolment_id, agent_id, state, facts, enrolled_at, key_id) VALUES (?, 'hall', 'adopted', '{}', ?, ?)", [
      randomUUID(),
      Date.now(),
      Number(keyId),
    ]);
    writeFileSync(join(dir, 'api-key'), `${agentKey}\n`, { mode: 0o600 });
  } finally {
    await db.close();
  }
  writeFileSync(
    config,
    `agent: { id: hall, dataDir: ${dir}/data, timezone: Europe/Berlin, controlSocket: ${dir}/control.sock }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${dir}/gpio }
service: { baseUrl: "${base}", apiKeyFile: ${join(dir, 'api-key')}, timeoutSeconds: 5 }
fleet: { servicePublicKeyFile: ${join(dir, 'service.pub')}, pollSeconds: 1 }
doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    name: Front door
    relay: { pin: 17 }
    readers:
      entry: { type: osdp, path: ${dir}/bus, address: 3 }
      exit: { type: osdp, path: ${dir}/bus, address: 4 }
`,
  );
  expect((await runCliAsync(['import', 'examples/snapshot.json', '--config', config])).status).toBe(0);
  pty = new PtyPair(join(dir, 'bus'), join(dir, 'reader-side'));
  await pty.plugIn();
  port = new SerialPort({ path: join(dir, 'reader-side'), baudRate: 9600, autoOpen: false });
  await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
  pd = new OsdpEmulator([3, 4], (bytes) => port.write(bytes));
  port.on('data', (chunk: Buffer) => pd.receive(chunk));
  daemon = new Daemon(config);
  await daemon.waitForMessage('door-agent ready', 60_000);
  await waitUntil(() => daemon!.logs.filter((l) => l.msg === 'OSDP reader online').length === 2, 30_000, 'both readers online');
  sampling = setInterval(() => {
    try {
      levels.add(readLevel(relay));
    } catch {
      levels.add('absent');
    }
  }, 20);
}, 120_000);

afterAll(async () => {
  if (sampling) clearInterval(sampling);
  await daemon?.stop('SIGKILL');
  await service?.stop();
  if (port?.isOpen) await new Promise<void>((r) => port.close(() => r()));
  await pty?.unplug();
  tmp.cleanup();
});

describe('reader firmware from the service', () => {
  it('a task sends the file to each reader named, one at a time, confirmed on the new firmware, and is reported done', async () => {
    for (const address of [3, 4]) pd.reader(address).rebootMs = 200;
    const id = await task('reader-3.5.0.fw', firmwareImage('3.5.0', Buffer.alloc(300, 0xa5)), ['Front door', 'Front door:exit']);
    const done = await ended(id);
    expect(done.state).toBe('done');
    expect(done.detail).toBe('Front door runs firmware 3.5.0 (was 3.4.5); Front door:exit runs firmware 3.5.0 (was 3.4.5)');
    expect([pd.reader(3).firmware, pd.reader(4).firmware]).toEqual(['3.5.0', '3.5.0']);
    const audit = (await runCliAsync(['events', '--config', config])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((e) => e.type === 'reader_firmware' && e.state === 'done');
    expect(audit.map((e) => [e.reader, e.firmware, e.origin, e.task_id, e.file])).toEqual([
      ['entry', '3.5.0', 'fleet', id, 'reader-3.5.0.fw'],
      ['exit', '3.5.0', 'fleet', id, 'reader-3.5.0.fw'],
    ]);
  }, 120_000);

  it('a file the reader refuses: the task failed with its reason, the reader on its old firmware, the readers after it untouched', async () => {
    const fragments = pd.reader(4).fragments.length;
    const id = await task('notes.txt', Buffer.from('not a firmware\n'.repeat(20)), ['Front door', 'Front door:exit']);
    const failed = await ended(id);
    expect(failed.state).toBe('failed');
    expect(failed.detail).toBe(
      'Front door: the reader does not recognize the file (FtStatusDetail -2: not a firmware for this reader) (it runs firmware 3.5.0); not sent to Front door:exit',
    );
    expect(pd.reader(3).firmware).toBe('3.5.0');
    expect(pd.reader(4).fragments).toHaveLength(fragments);
    expect([...levels]).toEqual(['0']);
  }, 120_000);
});
