import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ApiKeys } from '../../src/service/apiKeys.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { freePort } from '../support/net.js';
import { newServiceDb, type TestDbLocation } from '../support/serviceDb.js';
import { startServiceProcess, type ServiceProcess } from '../support/serviceProcess.js';
import { waitUntil } from '../support/wait.js';
import { WebhookReceiver } from '../support/webhookReceiver.js';

// At least once across a crash (docs/audit.md, "Webhooks"): `door-agent service` as deployed, on this run's engine,
// killed with SIGKILL while its delivery's request is open at the receiver, sends it again once restarted.

const tmp = tempDir('door-agent-webhooks-restart-');
const TIMEOUT_S = 10;
let db: SqlDb;
let config: string;
let base: string;
let adminKey: string;
let receiver: WebhookReceiver;
let service: ServiceProcess | undefined;

beforeAll(async () => {
  const port = await freePort();
  mkdirSync(join(tmp.path, 'data'));
  let location: TestDbLocation;
  ({ db, location } = await newServiceDb(join(tmp.path, 'data')));
  adminKey = await new ApiKeys(db).create('ADMIN', 0, Date.now());
  config = join(tmp.path, 'config.yaml');
  writeFileSync(
    config,
    `server:
  listen: 127.0.0.1:${port}
  dataDir: ${tmp.path}/data
${location.engine === 'postgres' ? `  database: { url: "${location.url}", passwordFile: ${location.passwordFile} }\n` : ''}  webhooks: { allowAddresses: [127.0.0.1/32], allowHttp: true, timeoutSeconds: ${TIMEOUT_S} }
  resources:
    - { resourceId: 12, uuid: ${DOOR_UUID}, type: DOOR, name: Front door }
`,
  );
  base = `http://127.0.0.1:${port}`;
  receiver = await WebhookReceiver.start({ hang: true });
  service = await startServiceProcess(config);
});
afterAll(async () => {
  await service?.stop();
  await receiver?.close();
  await db?.close();
  tmp.cleanup();
});

const call = async (method: string, path: string, body?: object) => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body ? { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' } : { authorization: `Bearer ${adminKey}` },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
};

it('a service killed mid-delivery sends the delivery again after its restart, and records it delivered', async () => {
  const made = await call('POST', '/webhooks', { url: receiver.url, types: ['door_forced'] });
  expect(made.status).toBe(201);
  const wire = { id: 'e-1', seq: 1, at: new Date().toISOString(), door: DOOR_UUID, type: 'door_forced' };
  await db.run(
    `INSERT INTO audit_events (agent_id, chain_id, seq, at, door_uuid, type, body, received_at) VALUES ('front-door-agent', '', 1, ?, ?, 'door_forced', ?, ?)`,
    [Date.now(), DOOR_UUID, JSON.stringify(wire), Date.now()],
  );
  // The leading process polls every second: the request comes, and stays open (the receiver does not answer).
  await waitUntil(() => receiver.received.length === 1, 20_000, 'the first request at the receiver');
  service!.child.kill('SIGKILL');
  await new Promise((resolve) => service!.child.once('exit', resolve));
  receiver.answerWith(200);

  service = await startServiceProcess(config);
  // Due again once its claim (the request's timeout and 5 s) has run out: sent once more, the same delivery.
  await waitUntil(() => receiver.received.length === 2, TIMEOUT_S * 1000 + 30_000, 'the delivery sent again after the restart');
  const [first, second] = receiver.received;
  expect(second!.headers['door-agent-webhook-id']).toBe(first!.headers['door-agent-webhook-id']);
  expect(JSON.parse(second!.body)).toEqual(JSON.parse(first!.body));
  expect(JSON.parse(second!.body).event).toEqual(wire);
  const id = made.json.webhook_id as number;
  await waitUntil(
    async () => ((await call('GET', `/webhooks/${id}/deliveries`)).json.deliveries as Array<{ state: string }>)[0]?.state === 'delivered',
    10_000,
    'recorded delivered',
  );
  const log = await call('GET', `/webhooks/${id}/deliveries`);
  // The killed attempt left no row: one attempt, the one that was answered.
  expect(log.json.deliveries).toMatchObject([{ state: 'delivered', attempts: 1, attempt_log: [{ attempt: 1, status: 200, error: null }] }]);
}, 90_000);
