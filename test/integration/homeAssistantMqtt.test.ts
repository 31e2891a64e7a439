import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DOOR_UUID, runCli, tempDir, writeConfig } from '../support/cli.js';
import { readLevel } from '../support/daemon.js';
import { Mosquitto } from '../support/mosquitto.js';
import { connectOperator, startDaemon } from '../support/agentSite.js';
import { PtyPair } from '../support/socat.js';
import { sleep } from '../support/wait.js';

// What Home Assistant sees (issue 30 item 5): the real daemon against a real mosquitto, simulated GPIO.
const tmp = tempDir('door-agent-ha-');
afterAll(tmp.cleanup);

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const P = 'hap';
const AGENT = 'ha1';
const SET = `${P}/doors/${DOOR_UUID}/set`;
const REPLY = `${P}/doors/${DOOR_UUID}/reply`;
const HA_ACCESS = `${P}/doors/${DOOR_UUID}/ha/access`;
const HA_ALARM = `${P}/doors/${DOOR_UUID}/ha/alarm`;
const LOCK_CONFIG = `homeassistant/lock/${AGENT}_${DOOR_UUID}/config`;
const CODE = '4711';
const TAMPER_PIN = 23;

let n = 0;
async function site(options: { code?: boolean; reader?: boolean } = {}) {
  const dir = join(tmp.path, `s${n++}`);
  mkdirSync(dir);
  const broker = new Mosquitto(join(dir, 'broker'));
  await broker.start();
  cleanups.push(() => broker.stop());
  const codeFile = join(dir, 'ha-code');
  writeFileSync(codeFile, `${CODE}\n`);
  chmodSync(codeFile, 0o600);
  mkdirSync(join(dir, `gpio/gpio${TAMPER_PIN}`), { recursive: true });
  writeFileSync(join(dir, `gpio/gpio${TAMPER_PIN}/value`), '0\n');
  const config = writeConfig(dir, {
    id: AGENT,
    access: '{ groups: [Staff] }',
    extra: `mqtt:
  url: "${broker.url}"
  topicPrefix: ${P}
  keepaliveSeconds: 5
  homeAssistant: { ${options.code ? `codeFile: ${codeFile}, ` : ''}configurationUrl: "https://door.example.org/" }`,
    doorExtra: `    unlockSeconds: 1
    tamper: { pin: ${TAMPER_PIN}, activeLevel: 1, debounceMs: 0 }
${options.reader ? `    reader: { path: ${dir}/reader }\n` : ''}`,
  });
  expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
  return { dir, config, broker, codeFile, relay: join(dir, 'gpio/gpio17/value'), tamper: join(dir, `gpio/gpio${TAMPER_PIN}/value`) };
}

describe('Home Assistant sees what happened', () => {
  it('with a code file: Home Assistant asks for the code; a wrong or missing one is refused and shown as unlock_refused, the right one unlocks', async () => {
    const s = await site({ code: true });
    const daemon = await startDaemon(s.config, cleanups);
    const op = await connectOperator(s.broker.url, cleanups, [REPLY, HA_ACCESS, LOCK_CONFIG]);
    const lock = (await op.waitFor((m) => m.topic === LOCK_CONFIG && m.retain, 10_000, 'the lock discovery')).json as Record<string, unknown>;
    expect(lock).toMatchObject({
      code_format: '^\\d{4,}$',
      command_template: expect.stringContaining('code'),
      device: { configuration_url: 'https://door.example.org/' },
      origin: { name: 'door-agent', sw_version: expect.any(String) },
    });
    expect(new RegExp(lock.code_format as string).test(CODE)).toBe(true);

    // What Home Assistant's command template renders (discovery.test.ts renders the template itself).
    const ha = async (action: string, code: string | null) => {
      op.clear();
      await op.publish(SET, JSON.stringify({ action, code }));
      return (await op.waitFor((m) => m.topic === REPLY, 10_000, `the reply to ${action}`)).json as Record<string, unknown>;
    };
    expect(await ha('UNLOCK', '1234')).toEqual({ status: 401, error: 'wrong Home Assistant code' });
    expect((await op.waitFor((m) => m.topic === HA_ACCESS, 10_000, 'unlock_refused')).json).toMatchObject({
      event_type: 'unlock_refused',
      reason: 'wrong_code',
      error: 'wrong Home Assistant code',
    });
    expect(readLevel(s.relay)).toBe('0');
    expect(await ha('OPEN', null)).toEqual({ status: 401, error: 'a Home Assistant code is required to unlock' });
    op.clear();
    await op.publish(SET, 'UNLOCK'); // Home Assistant's plain payload: no code at all
    expect((await op.waitFor((m) => m.topic === REPLY, 10_000)).json).toMatchObject({ status: 401 });
    expect((await op.waitFor((m) => m.topic === HA_ACCESS, 10_000)).json).toMatchObject({ event_type: 'unlock_refused', reason: 'wrong_code' });
    expect(readLevel(s.relay)).toBe('0');
    // Three wrong codes within a minute: someone may be guessing.
    await daemon.waitForMessage('wrong Home Assistant codes for a remote unlock, several within a minute: someone may be guessing');

    expect(await ha('OPEN', CODE)).toEqual({ status: 200, success: 'Front door unlocked for 1 s' });
    expect(readLevel(s.relay)).toBe('1');
    expect(await ha('LOCK', null)).toEqual({ status: 200, success: 'Front door locked' }); // locking needs no code
    expect(readLevel(s.relay)).toBe('0');
    // The JSON commands (the service's path) are as they were: no code.
    op.clear();
    await op.publish(SET, JSON.stringify({ lock_state: false, unlock_time: 1 }));
    expect((await op.waitFor((m) => m.topic === REPLY, 10_000)).json).toMatchObject({ status: 200 });
    expect(daemon.rawOutput.join('\n')).not.toMatch(/1234|4711/);
  }, 60_000);

  it('a remote unlock refused by a lockdown is shown as unlock_refused with its reason, beside the 409 reply', async () => {
    const s = await site();
    await startDaemon(s.config, cleanups);
    const op = await connectOperator(s.broker.url, cleanups, [REPLY, HA_ACCESS]);
    await op.publish(`${P}/agents/${AGENT}/lockdown`, JSON.stringify({ lockdown: true, by: 'security desk' }), { retain: true });
    // The lockdown is in force once the agent has the retained message: a remote unlock is then refused.
    for (let tries = 0; ; tries++) {
      op.clear();
      await op.publish(SET, 'OPEN');
      const reply = (await op.waitFor((m) => m.topic === REPLY, 10_000)).json as { status: number };
      if (reply.status === 409) break;
      expect(tries, 'the lockdown in force').toBeLessThan(20);
      await op.publish(SET, 'LOCK');
      await sleep(200);
    }
    expect((await op.waitFor((m) => m.topic === HA_ACCESS, 10_000, 'unlock_refused')).json).toMatchObject({
      event_type: 'unlock_refused',
      reason: 'lockdown',
      error: 'Front door is in lockdown: unlock refused',
    });
    expect(readLevel(s.relay)).toBe('0');
    await op.publish(`${P}/agents/${AGENT}/lockdown`, '', { retain: true });
  }, 60_000);

  it("shows who opened the door, by which level, on the door's access entity, once per decision", async () => {
    const s = await site({ reader: true });
    const pty = new PtyPair(join(s.dir, 'reader'), join(s.dir, 'terminal'));
    await pty.plugIn();
    cleanups.push(() => pty.unplug());
    await startDaemon(s.config, cleanups, { waitFor: ['reader connected'] });
    const op = await connectOperator(s.broker.url, cleanups, [HA_ACCESS]);
    pty.write('4213578\r\n99999999\r\n');
    await op.waitFor((m) => (m.json as { event_type: string }).event_type === 'access_denied', 10_000, 'the refused card');
    await sleep(500);
    const shown = op.received.map((m) => m.json as Record<string, unknown>);
    expect(shown).toEqual([
      expect.objectContaining({ event_type: 'access_granted', kind: 'card', credential: expect.stringContaining('78'), reason: null, who: expect.any(String) }),
      expect.objectContaining({ event_type: 'access_denied', kind: 'card', reason: expect.any(String) }),
    ]);
    expect(JSON.stringify(shown)).not.toContain('4213578'); // the masked hint only
  }, 60_000);

  it('fires tamper when the switch opens and tamper_cleared when it closes: two event types, once each', async () => {
    const s = await site();
    await startDaemon(s.config, cleanups);
    const op = await connectOperator(s.broker.url, cleanups, [HA_ALARM, `homeassistant/event/${AGENT}_${DOOR_UUID}_alarm/config`]);
    const alarm = await op.waitFor((m) => m.topic.endsWith('_alarm/config'), 10_000, 'the alarm discovery');
    expect(alarm.json).toMatchObject({ state_topic: HA_ALARM, event_types: expect.arrayContaining(['tamper', 'tamper_cleared']) });
    writeFileSync(s.tamper, '1\n');
    const active = await op.waitFor((m) => m.topic === HA_ALARM, 10_000, 'tamper');
    expect(active.json).toMatchObject({ event_type: 'tamper', state: 'active', id: expect.any(String) });
    writeFileSync(s.tamper, '0\n');
    const cleared = await op.waitFor(
      (m) => m.topic === HA_ALARM && (m.json as { event_type: string }).event_type === 'tamper_cleared',
      10_000,
      'tamper_cleared',
    );
    expect(cleared.json).toMatchObject({ state: 'cleared' });
    await sleep(1000); // a second of either would have come by now
    expect(op.received.filter((m) => m.topic === HA_ALARM).map((m) => (m.json as { event_type: string }).event_type)).toEqual(['tamper', 'tamper_cleared']);
  }, 60_000);

  it('a code file others can read, or a code too short, is a configuration error naming the key', () => {
    const dir = join(tmp.path, 'bad-code');
    mkdirSync(dir);
    const file = join(dir, 'code');
    const config = writeConfig(dir, {
      id: AGENT,
      access: '{ groups: [Staff] }',
      extra: `mqtt: { url: "mqtt://127.0.0.1:1", homeAssistant: { codeFile: ${file} } }`,
    });
    writeFileSync(file, `${CODE}\n`);
    chmodSync(file, 0o644);
    const open = runCli(['config', 'check', '--config', config]);
    expect(open.status).toBe(78);
    expect(open.stderr).toContain(`mqtt.homeAssistant.codeFile: ${file} is readable by others (mode 644)`);
    writeFileSync(file, '12\n');
    chmodSync(file, 0o600);
    const short = runCli(['config', 'check', '--config', config]);
    expect(short.status).toBe(78);
    expect(short.stderr).toContain('mqtt.homeAssistant.codeFile');
    expect(short.stderr).toContain('holds a code of 2 characters');
    expect(`${open.stderr}${short.stderr}${open.stdout}${short.stdout}`).not.toMatch(/4711/);
  });
});
