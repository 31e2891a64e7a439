import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { SerialPort } from 'serialport';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCard } from '../../src/core/wiegand.js';
import { firmwareImage } from '../../src/readers/osdp/emulatorFiles.js';
import { OsdpEmulator } from '../../src/readers/osdp/readerEmulator.js';
import { CLI, DOOR_UUID, ROOT, SECOND_DOOR_UUID, runCliAsync, tempDir } from '../support/cli.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';
import { PtyPair } from '../support/socat.js';
import { rawControlRequest } from '../support/controlSocket.js';

// `door-agent reader firmware` (the built CLI) through the real daemon's control socket: one RS-485 line (a socat pty
// pair), the emulated readers (readerEmulator.ts, in this process) on its far end: the Front door's entry reader at
// address 3 (with the secure channel) and its exit reader at 4, the Back door's reader at 5. Card 4213578 is Alice.
const tmp = tempDir('door-agent-firmware-');
const dir = tmp.path;
const config = join(dir, 'config.yaml');
const FRONT_RELAY = join(dir, 'gpio/gpio17/value');
const KEY = '00112233445566778899aabbccddeeff';
const USER = userInfo().username;

let pty: PtyPair;
let port: SerialPort;
let pd: OsdpEmulator;
let daemon: Daemon;

/** The CLI running, its output read as it comes (the emulator lives in this process: nothing may block). */
function running(args: string[]) {
  const child = spawn(process.execPath, [CLI, ...args, '--config', config], { cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
  const exited = new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? -1)));
  /** Until its output has `text`; an end before it fails with what it printed. */
  const waitFor = async (text: string, what: string) => {
    await waitUntil(() => out.stdout.includes(text) || child.exitCode !== null, 60_000, what);
    if (!out.stdout.includes(text)) throw new Error(`${what}: the command ended first (${child.exitCode}):\n${out.stdout}\n${out.stderr}`);
  };
  return { out, exited, waitFor };
}

async function events(): Promise<Array<Record<string, unknown>>> {
  const r = await runCliAsync(['events', '--config', config]);
  return r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** One request on the raw socket, the file's bytes after its line, as any program could send them: the reply lines. */
const rawRequest = (request: Record<string, unknown>, file: Buffer) => rawControlRequest(join(dir, 'control.sock'), `${JSON.stringify(request)}\n`, file);

const status = async () => (await runCliAsync(['status', '--config', config])).stdout;

beforeAll(async () => {
  mkdirSync(join(dir, 'data'));
  writeFileSync(join(dir, 'scbk'), `${KEY}\n`, { mode: 0o600 });
  writeFileSync(
    config,
    `agent: { id: fw, dataDir: ${dir}/data, timezone: Europe/Berlin, controlSocket: ${dir}/control.sock }
access: { groups: [Staff] }
gpio: { driver: simulated, simulatedDir: ${dir}/gpio }
doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    name: Front door
    relay: { pin: 17 }
    unlockSeconds: 1
    readers:
      entry: { type: osdp, path: ${dir}/bus, address: 3, scbkFile: ${dir}/scbk }
      exit: { type: osdp, path: ${dir}/bus, address: 4 }
  - uuid: ${SECOND_DOOR_UUID}
    resourceId: 13
    name: Back door
    relay: { pin: 18 }
    reader: { type: osdp, path: ${dir}/bus, address: 5 }
`,
  );
  expect((await runCliAsync(['import', 'examples/snapshot.json', '--config', config])).status).toBe(0);
  pty = new PtyPair(join(dir, 'bus'), join(dir, 'reader-side'));
  await pty.plugIn();
  port = new SerialPort({ path: join(dir, 'reader-side'), baudRate: 9600, autoOpen: false });
  await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
  pd = new OsdpEmulator([3, 4, 5], (bytes) => port.write(bytes));
  pd.reader(3).scbk = Buffer.from(KEY, 'hex');
  port.on('data', (chunk: Buffer) => pd.receive(chunk));
  daemon = new Daemon(config);
  await daemon.waitForMessage('door-agent ready', 60_000);
  await waitUntil(() => daemon.logs.filter((l) => l.msg === 'OSDP reader online').length === 3, 30_000, 'every reader online');
}, 120_000);

afterAll(async () => {
  await daemon?.stop('SIGKILL');
  if (port?.isOpen) await new Promise<void>((r) => port.close(() => r()));
  await pty?.unplug();
  tmp.cleanup();
});

describe('reader firmware over OSDP (door-agent reader firmware, through the daemon)', () => {
  it("goes at the reader's pace, the reader busy meanwhile (a second request refused), and ends confirmed by the new firmware", async () => {
    const reader = pd.reader(3);
    reader.ftDelayMs = 30;
    reader.ftUpdateMsgMax = 64;
    reader.ftFinishingMs = 60_000; // "finishing" until the test has looked at the daemon meanwhile (ended below)
    reader.rebootMs = 400;
    const image = firmwareImage('3.5.0', Buffer.alloc(900, 0xa5));
    writeFileSync(join(dir, 'front-3.5.0.fw'), image);
    writeFileSync(join(dir, 'back-3.5.0.fw'), firmwareImage('3.5.0', Buffer.alloc(100, 1)));
    const run = running(['reader', 'firmware', '--reader', 'front door', join(dir, 'front-3.5.0.fw')]);
    await run.waitFor('the reader is processing the file', 'the whole file sent');

    // Meanwhile: another transfer is refused (one reader at a time in the daemon), naming the one under way.
    const second = await runCliAsync(['reader', 'firmware', '--door', 'Back door', join(dir, 'back-3.5.0.fw'), '--config', config]);
    expect(second.status).toBe(1);
    expect(second.stderr).toBe(
      "door-agent: Back door's entry reader: a reader firmware transfer is under way (Front door's entry reader): one reader at a time; try again when it is over\n",
    );
    // The reader is busy: shown offline; a card held to it is not taken; the door stays locked; its exit reader decides as ever.
    expect(await status()).toMatch(/address 3 \(secure channel\) \(numbering data\) NOT connected/);
    pd.presentCard(3, encodeCard(4_213_578n));
    await waitUntil(() => reader.pending.length === 0, 5000, 'the card read by the panel');
    await new Promise((r) => setTimeout(r, 300));
    expect(readLevel(FRONT_RELAY)).toBe('0');
    pd.presentCard(4, encodeCard(4_213_578n));
    await waitUntil(() => readLevel(FRONT_RELAY) === '1', 5000, 'the exit reader opens');
    await waitUntil(() => readLevel(FRONT_RELAY) === '0', 5000, 'relocked after its unlockSeconds');
    reader.upload!.finishingUntil = 0; // the reader has processed the file: its verdict at the next empty fragment

    expect(await run.exited).toBe(0);
    expect(run.out.stderr).toBe('');
    const out = run.out.stdout;
    expect(out).toContain("Front door's entry reader: sending front-3.5.0.fw (");
    expect(out).toMatch(/ {2}\d+% \(\d+ of 915 bytes\); the reader asks 30 ms between fragments\n/);
    expect(out).toContain('100%: the reader has the whole file: waiting for it to install it and name its firmware\n');
    expect(out.trimEnd().split('\n').at(-1)).toBe("Front door's entry reader runs firmware 3.5.0 (it ran 3.4.5): installed and confirmed");
    // What the reader got: the file whole; the first fragment as large as the secure link carries to a reader that
    // names no receive buffer, then at most the 64 bytes it asked for; none before its delay had passed.
    expect(reader.firmware).toBe('3.5.0');
    expect(reader.installed.map((f) => f.equals(image))).toEqual([true]);
    expect(reader.fragments[0]).toBe(100);
    expect(Math.max(...reader.fragments.slice(1))).toBeLessThanOrEqual(64);
    expect(reader.earlyFragments).toBe(0);
    expect(readLevel(FRONT_RELAY)).toBe('0');
    await waitUntil(async () => !(await status()).includes('NOT connected'), 15_000, 'the reader connected again');

    const all = await events();
    expect(all.filter((e) => e.type === 'reader_firmware').map((e) => [e.door, e.state, e.firmware ?? null, e.reason ?? null])).toEqual([
      [DOOR_UUID, 'started', null, null],
      [DOOR_UUID, 'done', '3.5.0', null],
    ]);
    expect(all.find((e) => e.type === 'reader_firmware' && e.state === 'done')).toMatchObject({
      reader: 'entry',
      previous: '3.4.5',
      bytes: image.length,
      file: 'front-3.5.0.fw',
      origin: 'local',
      user: USER,
    });
    expect(all.filter((e) => e.type === 'local_command')).toEqual([
      expect.objectContaining({ door: SECOND_DOOR_UUID, action: 'reader-firmware', outcome: 'refused', user: USER }),
    ]);
    // No decision came from the busy reader; Alice's tap at the exit reader was decided.
    expect(all.filter((e) => e.type === 'access_granted').map((e) => e.direction)).toEqual(['exit']);
  }, 90_000);

  it('a transfer broken midway, or a file the reader refuses: exit 1 with the reason, the old firmware kept, audited', async () => {
    const reader = pd.reader(5);
    reader.ftUpdateMsgMax = 50;
    reader.dropLineAfterBytes = 200;
    const file = join(dir, 'back-3.6.0.fw');
    writeFileSync(file, firmwareImage('3.6.0', Buffer.alloc(600, 2)));
    const broken = await runCliAsync(['reader', 'firmware', '--reader', 'Back door', file, '--config', config]);
    expect(broken.status).toBe(1);
    // Five unanswered tries (1 s), or offline first (2 s without an answer) when the machine is slow to fire timers.
    const noAnswer = '(did not answer command 0x7c|went offline)';
    expect(broken.stderr).toMatch(
      new RegExp(
        `^door-agent: Back door's entry reader: the firmware was not installed: the transfer broke off at 158 of 615 bytes: the reader at address 5 ${noAnswer}; it runs firmware 3\\.4\\.5\n$`,
      ),
    );
    expect(reader.firmware).toBe('3.4.5');
    expect(reader.installed).toEqual([]);

    // The line back: the reader online again, then a file that is no firmware for it.
    reader.dropLineAfterBytes = null;
    reader.silent = false;
    await waitUntil(async () => !(await status()).includes('NOT connected'), 20_000, 'the reader back');
    writeFileSync(join(dir, 'notes.txt'), 'not a firmware\n'.repeat(20));
    const refused = await runCliAsync(['reader', 'firmware', '--reader', 'Back door', join(dir, 'notes.txt'), '--config', config]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(
      "door-agent: Back door's entry reader: the firmware was not installed: the reader does not recognize the file (FtStatusDetail -2: not a firmware for this reader); it runs firmware 3.4.5\n",
    );
    expect(reader.firmware).toBe('3.4.5');
    const failed = (await events()).filter((e) => e.type === 'reader_firmware' && e.door === SECOND_DOOR_UUID);
    expect(failed.map((e) => [e.state, e.firmware ?? null])).toEqual([
      ['started', null],
      ['failed', '3.4.5'],
      ['started', null],
      ['failed', '3.4.5'],
    ]);
    // A file changed on the way (its SHA-256 is not the request's): refused before a byte goes to the reader.
    const file5 = firmwareImage('3.6.0', Buffer.alloc(50, 3));
    const fragments = reader.fragments.length;
    const sha256 = createHash('sha256').update(file5).digest('hex');
    file5[20] = 0;
    expect(await rawRequest({ action: 'reader-firmware', reader: 'Back door', size: file5.length, sha256, user: USER }, file5)).toEqual([
      {
        type: 'error',
        error: `the file's SHA-256 is ${createHash('sha256').update(file5).digest('hex')}, not the request's ${sha256}: it was changed or cut short on the way`,
      },
    ]);
    expect(reader.fragments).toHaveLength(fragments);
    expect(failed[1]!.reason).toMatch(new RegExp(`^the transfer broke off at 158 of 615 bytes: the reader at address 5 ${noAnswer}$`));
  }, 90_000);
});
