import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectAsync } from 'mqtt';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { Mosquitto } from '../support/mosquitto.js';
import { connectOperator, startDaemon } from '../support/agentSite.js';
import { sleep } from '../support/wait.js';

// A locked-down broker: the agent against a real mosquitto with a password file and an acl_file, and another
// broker user who tries to take its session over or to have its replies published on the agent's own topics.
const tmp = tempDir('door-agent-client-ids-');
afterAll(tmp.cleanup);
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const P = 'da';
const AGENT = 'lobby';
const STATUS = `${P}/agents/${AGENT}/status`;
const SET = `${P}/doors/${DOOR_UUID}/set`;
const REPLY = `${P}/doors/${DOOR_UUID}/reply`;
const LOST = 'broker connection lost; doors keep working, events are kept';

let n = 0;
async function site() {
  const dir = join(tmp.path, `s${n++}`);
  mkdirSync(dir);
  const acl = 'user agent\ntopic readwrite da/#\ntopic readwrite homeassistant/#\n\nuser op\ntopic readwrite #\n';
  const broker = new Mosquitto(join(dir, 'broker'), undefined, false, { users: { agent: 'agent-secret', op: 'op-secret' }, acl });
  await broker.start();
  cleanups.push(() => broker.stop());
  writeFileSync(join(dir, 'mqtt-password'), 'agent-secret\n', { mode: 0o600 });
  const config = writeConfig(dir, {
    id: AGENT,
    extra: `mqtt:
  url: "${broker.url}"
  username: agent
  passwordFile: ${dir}/mqtt-password
  topicPrefix: ${P}
  keepaliveSeconds: 5
`,
  });
  expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
  return { broker, config, operatorUrl: broker.url.replace('mqtt://', 'mqtt://op:op-secret@') };
}

describe('the agent on a broker shared with other users', () => {
  it("another user connecting with the agent's old client id (door-agent-<id>) does not take its session: it stays online and answers", async () => {
    const s = await site();
    const op = await connectOperator(s.operatorUrl, cleanups, [STATUS, REPLY]);
    const daemon = await startDaemon(s.config, cleanups, { timeoutMs: 30_000 });
    await op.waitFor((m) => m.topic === STATUS && m.text === 'online', 15_000, 'availability online');
    const told = await daemon.waitForMessage('the broker knows this agent by this client id');
    expect(told.clientId).toMatch(/^door-agent-lobby-[0-9a-f]{12}$/);

    op.clear();
    const mark = daemon.logs.length;
    const intruder = await connectAsync(s.broker.url, {
      username: 'op',
      password: 'op-secret',
      clientId: `door-agent-${AGENT}`,
      protocolVersion: 5,
      reconnectPeriod: 1000,
    });
    cleanups.push(() => intruder.endAsync(true));
    await sleep(3000); // the old id alternated every second between the two clients
    expect(intruder.connected).toBe(true);
    expect(op.received.filter((m) => m.topic === STATUS)).toEqual([]); // no last will `offline`, no new `online`
    expect(daemon.logs.slice(mark).filter((l) => l.msg === LOST)).toEqual([]);
    const reply = await op.command(REPLY, SET, { lock_state: true }, 'still-here');
    expect(reply).toMatchObject({ status: 200, request_id: 'still-here' });
  }, 120_000);

  it("a command naming the agent's own status topic as its response topic is answered on the door's reply topic", async () => {
    const s = await site();
    const op = await connectOperator(s.operatorUrl, cleanups, [STATUS, REPLY]);
    const daemon = await startDaemon(s.config, cleanups, { timeoutMs: 30_000 });
    await op.waitFor((m) => m.topic === STATUS && m.text === 'online', 15_000, 'availability online');
    op.clear();
    await op.publish(SET, JSON.stringify({ lock_state: true, request_id: 'r-status' }), {
      properties: { responseTopic: STATUS, correlationData: Buffer.from('corr-7') },
    });
    const reply = await op.waitFor((m) => m.topic === REPLY, 10_000, 'the reply on the default reply topic');
    expect(reply.json).toMatchObject({ status: 200, request_id: 'r-status' });
    expect(reply.correlationData?.toString()).toBe('corr-7');
    const warning = await daemon.waitForMessage("a command's response topic refused: the reply goes to the default reply topic");
    expect(warning).toMatchObject({ level: 40, responseTopic: STATUS, replyTopic: REPLY });
    await sleep(500);
    expect(op.received.filter((m) => m.topic === STATUS)).toEqual([]); // the status topic carries nothing but the agent's own word
  }, 120_000);
});
