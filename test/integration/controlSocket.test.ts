import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgesOf, encodeCard } from '../../src/core/wiegand.js';
import { writeSimulatedEdges } from '../../src/hardware/simulatedEdges.js';
import { auditEvents } from '../support/agentSite.js';
import { CLI, DOOR_UUID, ROOT, SECOND_DOOR_UUID, runCli, runCliAsync, tempDir } from '../support/cli.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';
import { PtyPair } from '../support/socat.js';
import { rawControlRequest } from '../support/controlSocket.js';

// The local control socket (docs/local-control.md) of the real daemon, built (dist/), on simulated GPIO: the Front
// door's reader a socat pty, the Back door's a Wiegand reader on the simulated chip's edge FIFO; the Back door is
// released by the fire alarm input and interlocked with the Front door. The socket lives in a temporary directory
// (agent.controlSocket). Cards of examples/snapshot.json: 4213578 is Alice (Staff).

const tmp = tempDir('door-agent-control-');
const dir = tmp.path;
const SOCKET = join(dir, 'control.sock');
const FRONT_RELAY = join(dir, 'gpio/gpio17/value');
const BACK_RELAY = join(dir, 'gpio/gpio18/value');
const FIRE_LOOP = join(dir, 'gpio/gpio26/value');
const WIEGAND = { d0: 5, d1: 6 };
const ALICE = '4213578\r\n';
const USER = userInfo().username;

let config = '';
let daemon: Daemon;
let pty: PtyPair;

/** The socket file a run killed mid-way leaves behind: bound, nobody listening. */
function leaveStaleSocket(path: string): void {
  const script = `require('node:net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`;
  spawnSync(process.execPath, ['-e', script]);
  expect(statSync(path).isSocket()).toBe(true);
}

/** The CLI running, its output read as it comes (a learn session streams). */
class Running {
  stdout = '';
  stderr = '';
  readonly exited: Promise<number>;
  private readonly child: ChildProcess;

  constructor(args: string[]) {
    this.child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    this.child.stdout!.on('data', (d: Buffer) => (this.stdout += d.toString()));
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.exited = new Promise((resolve) => this.child.once('close', (code) => resolve(code ?? -1)));
  }

  waitFor(text: string, what: string): Promise<number> {
    return waitUntil(() => this.stdout.includes(text) || this.child.exitCode !== null, 60_000, what).then((ms) => {
      if (!this.stdout.includes(text)) throw new Error(`${what}: the command ended first:\n${this.stdout}\n${this.stderr}`);
      return ms;
    });
  }

  interrupt(): void {
    this.child.kill('SIGINT');
  }
}

/** One request on the raw socket, as any program could send it: the daemon's reply lines. */
const rawRequest = (bytes: string) => rawControlRequest(SOCKET, bytes);

beforeAll(async () => {
  mkdirSync(join(dir, 'data'));
  config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `agent: { id: ctl, dataDir: ${dir}/data, timezone: Europe/Berlin, controlSocket: ${SOCKET} }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${dir}/gpio }
emergency: { pin: 26, doors: [Back door] }
interlocks: [{ doors: [Front door, Back door] }]
doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    name: Front door
    relay: { pin: 17 }
    unlockSeconds: 3
    reader: { path: ${dir}/reader }
  - uuid: ${SECOND_DOOR_UUID}
    resourceId: 13
    name: Back door
    relay: { pin: 18 }
    reader: { type: wiegand, d0: ${WIEGAND.d0}, d1: ${WIEGAND.d1} }
`,
  );
  expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
  pty = new PtyPair(join(dir, 'reader'), join(dir, 'terminal'));
  await pty.plugIn();
  // A crashed run's socket file: replaced, since nothing answers on it.
  leaveStaleSocket(SOCKET);
  daemon = new Daemon(config);
  await daemon.waitForMessage('door-agent ready', 60_000);
  await daemon.waitForMessage('reader connected', 60_000);
}, 120_000);

afterAll(async () => {
  await daemon?.stop('SIGKILL');
  await pty?.unplug();
  tmp.cleanup();
});

describe('the control socket (door-agent unlock, lock, learn-card, reader learn)', () => {
  it("is a socket of mode 0660 in the daemon's group, made in place of a stale one", () => {
    const stat = statSync(SOCKET);
    expect(stat.isSocket()).toBe(true);
    expect(stat.mode & 0o777).toBe(0o660);
    expect(stat.gid).toBe(process.getgid!());
    expect(daemon.logs.some((l) => l.msg === 'control socket listening')).toBe(true);
  });

  it('a bad request gets an error naming what is wrong, and changes nothing', async () => {
    const before = auditEvents(config).length;
    expect(await rawRequest(`{"action":"unlock","door":"Front door","seconds":"ten","user":"${USER}"}\n`)).toEqual([
      { type: 'error', error: 'seconds: must be a whole number of seconds', field: 'seconds' },
    ]);
    expect(await rawRequest('{"action":"open-sesame","door":"Front door"}\n')).toEqual([
      // The list names every action (health among them; docs/local-control.md).
      { type: 'error', error: expect.stringMatching(/^action: must be one of unlock, lock, reader-learn, learn-card, .*\bhealth\b/), field: 'action' },
    ]);
    expect(await rawRequest(`{"action":"unlock","door":"Front door","user":"${USER}","force":true}\n`)).toEqual([
      { type: 'error', error: 'force: unknown key', field: 'force' },
    ]);
    const [notJson] = await rawRequest('unlock Front door\n');
    expect(notJson).toMatchObject({ type: 'error', error: expect.stringContaining('the request is not JSON') });
    expect(await rawRequest(`{"action":"unlock","door":"${'x'.repeat(5000)}`)).toEqual([{ type: 'error', error: 'the request is longer than 4096 bytes' }]);
    expect(readLevel(FRONT_RELAY)).toBe('0');
    expect(auditEvents(config)).toHaveLength(before);
  });

  it('an unknown door: the error lists the doors, exit 1', () => {
    const r = runCli(['unlock', '--door', 'Garage', '--config', config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`door-agent: no door "Garage" at this agent; its doors: Front door (${DOOR_UUID}), Back door (${SECOND_DOOR_UUID})\n`);
    expect(readLevel(FRONT_RELAY)).toBe('0');
  });

  it('unlock (any case of the name): the relay moves at once and relocks at the deadline; audited with origin local and the user', async () => {
    const seen: Array<{ level: string; at: number }> = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const level = readLevel(FRONT_RELAY);
        if (seen.at(-1)?.level !== level) seen.push({ level, at: Date.now() });
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const r = await runCliAsync(['unlock', '--door', 'FRONT DOOR', '--seconds', '4', '--config', config]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('Front door unlocked for 4 s\n');
    await waitUntil(() => seen.length === 3, 60_000, 'relocked');
    watching = false;
    await watch;
    expect(seen.map((s) => s.level)).toEqual(['0', '1', '0']);
    const all = auditEvents(config);
    const unlocked = all.find((e) => e.type === 'unlocked');
    const locked = all.find((e) => e.type === 'locked');
    expect(unlocked).toMatchObject({ door: DOOR_UUID, cause: `local command by ${USER}` });
    // Relocked by the door's timer at the deadline the unlock set, never before it.
    const deadline = Date.parse(unlocked!.relock_at as string);
    expect(Math.abs(deadline - Date.parse(unlocked!.at as string) - 4000)).toBeLessThanOrEqual(5);
    expect(Date.parse(locked!.at as string)).toBeGreaterThanOrEqual(deadline);
    expect(seen[2]!.at).toBeGreaterThanOrEqual(deadline);
    expect(all.filter((e) => e.type === 'local_command')).toEqual([
      expect.objectContaining({
        door: DOOR_UUID,
        origin: 'local',
        user: USER,
        action: 'unlock',
        seconds: 4,
        outcome: 'done',
        message: 'Front door unlocked for 4 s',
      }),
    ]);
  });

  it('lock: locked at once; an unlock of an interlocked door is refused while the other is unlocked', () => {
    expect(runCli(['unlock', '--door', DOOR_UUID, '--seconds', '600', '--config', config])).toMatchObject({ status: 0 });
    expect(readLevel(FRONT_RELAY)).toBe('1');
    const refused = runCli(['unlock', '--door', 'back door', '--config', config]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe('door-agent: Back door is interlocked with Front door, which is unlocked or open: unlock refused\n');
    expect(readLevel(BACK_RELAY)).toBe('0');
    const r = runCli(['lock', '--door', 'Front door', '--config', config]);
    expect(r).toMatchObject({ status: 0, stdout: 'Front door locked\n', stderr: '' });
    expect(readLevel(FRONT_RELAY)).toBe('0');
    const all = auditEvents(config);
    expect(all.findLast((e) => e.type === 'locked')).toMatchObject({ door: DOOR_UUID, cause: `local command by ${USER}` });
    expect(all.filter((e) => e.type === 'local_command').slice(-2)).toEqual([
      expect.objectContaining({ door: SECOND_DOOR_UUID, origin: 'local', action: 'unlock', outcome: 'refused', reason: 'interlock' }),
      expect.objectContaining({ door: DOOR_UUID, origin: 'local', action: 'lock', outcome: 'done' }),
    ]);
  });

  it('lock is refused while the fire alarm input releases the door (the rules of an MQTT command)', async () => {
    writeFileSync(FIRE_LOOP, '1\n');
    await waitUntil(() => readLevel(BACK_RELAY) === '1', 30_000, 'Back door released');
    const r = runCli(['lock', '--door', 'Back door', '--config', config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('door-agent: Back door is released by the emergency input (fire alarm): lock refused until it clears\n');
    expect(readLevel(BACK_RELAY)).toBe('1');
    writeFileSync(FIRE_LOOP, '0\n');
    await waitUntil(() => readLevel(BACK_RELAY) === '0', 30_000, 'Back door locked again');
  });

  it('reader learn while the daemon runs: the tapped card is shown, not decided (audited); after it, the reader decides again', async () => {
    const learn = new Running(['reader', 'learn', '--door', 'Front door', '--timeout', '120', '--config', config]);
    await learn.waitFor('not decided (nobody is let in by them)', 'the session opened');
    pty.write(ALICE);
    await learn.waitFor('card:          4213578', 'the card shown');
    // The tap reached the session, not the decision (which would have come first): nobody let in.
    expect(readLevel(FRONT_RELAY)).toBe('0');
    learn.interrupt(); // Ctrl-C: the session ends, its last line still comes
    expect(await learn.exited).toBe(0);
    expect(learn.stdout).toMatch(
      /^Front door's entry reader: present cards, each is shown \(waiting 120 s\)\. The daemon is running: taps at this reader are shown here and not decided/,
    );
    expect(learn.stdout).toMatch(/\n\d\d:\d\d:\d\d read \(not decided\):\ncard: {10}4213578\n$/);
    await daemon.waitForMessage('learn session ended: the reader decides again', 30_000);
    pty.write(ALICE);
    await waitUntil(() => readLevel(FRONT_RELAY) === '1', 30_000, 'Alice let in once the session is over');
    const all = auditEvents(config);
    expect(all.filter((e) => e.type === 'learn_tap')).toEqual([
      expect.objectContaining({ door: DOOR_UUID, origin: 'local', user: USER, reader: 'entry', kind: 'card', hint: '…78', decided: false }),
    ]);
    expect(all.filter((e) => e.type === 'local_command' && e.action === 'reader-learn').map((e) => e.outcome)).toEqual(['started', 'ended']);
    // One grant: the tap after the session, not the one during it.
    expect(all.filter((e) => e.type === 'access_granted')).toHaveLength(1);
    expect(all.findLast((e) => e.type === 'learn_tap')!.seq).toBeLessThan(all.find((e) => e.type === 'access_granted')!.seq as number);
    expect(runCli(['lock', '--door', 'Front door', '--config', config]).status).toBe(0);
  });

  it('learn-card on a Wiegand reader: the next card in every numbering, then it ends (exit 0)', async () => {
    const learn = new Running(['learn-card', '--reader', 'back door', '--seconds', '120', '--config', config]);
    await learn.waitFor("Back door's entry reader: present a card", 'the session opened');
    writeSimulatedEdges(join(dir, 'gpio'), WIEGAND, edgesOf(encodeCard(4_213_578n), 0));
    expect(await learn.exited).toBe(0);
    expect(learn.stderr).toBe('');
    expect(learn.stdout).toContain(
      [
        'format:        H10301 (26 bits)',
        'facility:      64',
        'card:          19274',
        'issue:         -',
        'data:          4213578',
        'facility_card: 4213578',
        'printed:       64:19274',
      ].join('\n'),
    );
    expect(learn.stdout).toMatch(/raw bits: {6}0x[0-9a-f]{7}\n$/);
    expect(readLevel(BACK_RELAY)).toBe('0');
    const all = auditEvents(config);
    expect(all.findLast((e) => e.type === 'learn_tap')).toMatchObject({ door: SECOND_DOOR_UUID, origin: 'local', user: USER, hint: '…78', decided: false });
    expect(all.filter((e) => e.type === 'access_granted' && e.door === SECOND_DOOR_UUID)).toEqual([]);
  });

  it('the daemon not running: a clear message and exit 69 (reader learn opens the reader itself)', () => {
    const other = join(dir, 'other');
    mkdirSync(other);
    const offline = join(other, 'config.yaml');
    writeFileSync(
      offline,
      `agent: { id: off, dataDir: ${other}/data, controlSocket: ${other}/control.sock }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${other}/gpio }
doors:
  - { uuid: ${DOOR_UUID}, resourceId: 12, name: Front door, relay: { pin: 17 } }
`,
    );
    let r = runCli(['unlock', '--door', 'Front door', '--config', offline]);
    expect(r).toMatchObject({ status: 69, stdout: '' });
    expect(r.stderr).toBe(`door-agent: the door-agent daemon is not running: no control socket at ${other}/control.sock\n`);
    leaveStaleSocket(join(other, 'control.sock'));
    r = runCli(['lock', '--door', 'Front door', '--config', offline]);
    expect(r.status).toBe(69);
    expect(r.stderr).toBe(`door-agent: the door-agent daemon is not running: nothing answers on the control socket ${other}/control.sock\n`);
    // reader learn falls back to opening the reader itself: this door has none.
    r = runCli(['reader', 'learn', '--config', offline]);
    expect(r.stderr).toContain('name the door: --door UUID');
  });

  it('health: each relay as it reads beside the level its lock state drives, the readers, the links; a read that moves nothing', async () => {
    const before = auditEvents(config).length;
    const lines = await rawRequest('{"action":"health"}\n');
    expect(lines).toHaveLength(2);
    const [health, done] = lines;
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    expect(health).toEqual({
      type: 'health',
      health: {
        version,
        doors: [
          { name: 'Front door', uuid: DOOR_UUID, lock: 'LOCKED', relay: { level: 0, expected: 0 }, readers: true },
          expect.objectContaining({ name: 'Back door', uuid: SECOND_DOOR_UUID, readers: true }),
        ],
        service: null,
        broker: null,
      },
    });
    const back = (health as { health: { doors: Array<{ relay: { level: number; expected: number } }> } }).health.doors[1]!;
    expect(back.relay.level).toBe(back.relay.expected);
    expect(String(readLevel(BACK_RELAY))).toBe(String(back.relay.level));
    expect(done).toMatchObject({ type: 'done' });
    expect(await rawRequest('{"action":"health","user":"x"}\n')).toEqual([{ type: 'error', error: 'user: unknown key', field: 'user' }]);
    expect(auditEvents(config)).toHaveLength(before);
  });

  it('a clean stop removes the socket file', async () => {
    expect(existsSync(SOCKET)).toBe(true);
    expect(await daemon.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(existsSync(SOCKET)).toBe(false);
  });
});
