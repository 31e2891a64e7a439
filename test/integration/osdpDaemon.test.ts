import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SerialPort } from 'serialport';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { encodeCard } from '../../src/core/wiegand.js';
import { DOOR_UUID, runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';
import { OsdpEmulator } from '../../src/readers/osdp/readerEmulator.js';
import { PtyPair } from '../support/socat.js';

// The real daemon with an OSDP reader on a socat pty: the emulated reader (written from the standard) on the
// other end, with the secure channel. Cards of examples/snapshot.json: 4213578 Alice (Staff), 4213579 Bob (suspended).
const tmp = tempDir('door-agent-osdpd-');
afterAll(tmp.cleanup);
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const KEY = '00112233445566778899aabbccddeeff';
const EXIT_KEY = 'ffeeddccbbaa99887766554433221100';

async function eventually(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// `withExit`: the door has readers: { entry, exit }, the exit reader at address 4 on the same bus, its own key file.
async function setup(readerExtra: string, keyMode = 0o600, withExit = false) {
  const dir = join(tmp.path, `o${cleanups.length}-${Date.now()}`);
  mkdirSync(dir);
  const scbk = join(dir, 'scbk');
  writeFileSync(scbk, `${KEY}\n`);
  chmodSync(scbk, keyMode);
  const exitScbk = join(dir, 'scbk-exit');
  writeFileSync(exitScbk, `${EXIT_KEY}\n`, { mode: 0o600 });
  const entryReader = `{ type: osdp, path: ${dir}/bus, address: 3${readerExtra.replace('SCBK', scbk)} }`;
  const pty = new PtyPair(join(dir, 'bus'), join(dir, 'reader-side'));
  await pty.plugIn();
  cleanups.push(() => pty.unplug());
  const config = writeConfig(dir, {
    id: 'osdp',
    access: '{ groups: [Staff] }',
    doorExtra: withExit
      ? `    unlockSeconds: 1\n    readers:\n      entry: ${entryReader}\n      exit: { type: osdp, path: ${dir}/bus, address: 4, scbkFile: ${exitScbk} }\n`
      : `    unlockSeconds: 1\n    reader: ${entryReader}\n`,
  });
  expect(runCli(['import', 'examples/snapshot.json', '--config', config]).status).toBe(0);
  const port = new SerialPort({ path: join(dir, 'reader-side'), baudRate: 9600, autoOpen: false });
  await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
  cleanups.push(() => new Promise<void>((r) => port.close(() => r())));
  const pd = new OsdpEmulator(withExit ? [3, 4] : [3], (bytes) => port.write(bytes));
  port.on('data', (chunk: Buffer) => pd.receive(chunk));
  // The emulated reader lives in this process: CLI runs must not block its event loop (a reader that does not
  // answer for 2 s is offline), so they run asynchronously.
  let latest: Array<Record<string, unknown>> = [];
  const refresh = async () => {
    const r = await runCliAsync(['events', '--config', config]);
    latest = r.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    return latest;
  };
  const events = () => latest;
  const status = async () => (await runCliAsync(['status', '--config', config])).stdout;
  return { dir, config, pd, events, refresh, status, relay: join(dir, 'gpio/gpio17/value') };
}

async function start(config: string): Promise<Daemon> {
  const daemon = new Daemon(config);
  cleanups.push(async () => void (await daemon.stop('SIGKILL')));
  await daemon.waitForMessage('door-agent ready');
  return daemon;
}

describe('an OSDP reader at the door', () => {
  it("secure channel: a card opens the door, the reader shows green and beeps; a suspended user's card shows red", async () => {
    const s = await setup(', scbkFile: SCBK');
    s.pd.reader(3).scbk = Buffer.from(KEY, 'hex');
    const daemon = await start(s.config);
    await daemon.waitForMessage('OSDP secure channel established', 10_000);
    s.pd.presentCard(3, encodeCard(4_213_578n));
    await waitUntil(() => readLevel(s.relay) === '1', 5000, 'the card opens');
    await waitUntil(() => s.pd.reader(3).received.includes(0x69) && s.pd.reader(3).received.includes(0x6a), 5000, 'LED and buzzer commands');
    s.pd.presentCard(3, encodeCard(4_213_579n));
    await eventually(async () => (await s.refresh()).some((e) => e.type === 'access_denied'), 8000, 'Bob refused');
    expect(
      s
        .events()
        .filter((e) => e.type === 'reader_online')
        .map((e) => [e.secure, e.channel]),
    ).toEqual([[true, 'secure']]);
    expect(daemon.rawOutput.join('\n')).not.toContain(KEY);
    // The runtime status is written after the door acts: give the write its moment.
    expect(await s.status()).toContain(`reader OSDP ${join(s.dir, 'bus')} address 3 (secure channel) (numbering data) connected; secure channel in use`);
  });

  it('a reader with another key: one clear error, polled slowly (not the log flood of issue 32), no card opens; status says FAILED', async () => {
    const s = await setup(', scbkFile: SCBK');
    s.pd.reader(3).scbk = Buffer.alloc(16, 9);
    const daemon = await start(s.config);
    await daemon.waitForLog((l) => String(l.msg).includes('another secure channel key'), 10_000);
    const before = s.pd.reader(3).received.length;
    s.pd.presentCard(3, encodeCard(4_213_578n));
    await new Promise((r) => setTimeout(r, 6000));
    expect(readLevel(s.relay)).toBe('0');
    // Six seconds: one or two supervision polls (every 5 s), where an unpaced panel sends osdp_ID every few ms.
    expect(s.pd.reader(3).received.length - before).toBeLessThanOrEqual(3);
    expect(daemon.logs.filter((l) => l.msg === 'OSDP reader identified')).toHaveLength(1);
    expect(daemon.logs.filter((l) => String(l.msg).includes('another secure channel key'))).toHaveLength(1);
    expect(await s.status()).toContain('connected; secure channel FAILED (another key, or no secure channel on the reader)');
    await eventually(async () => (await s.refresh()).some((e) => e.type === 'reader_online'), 8000, 'reader_online');
    expect(
      s
        .events()
        .filter((e) => e.type === 'reader_online')
        .map((e) => [e.secure, e.channel]),
    ).toEqual([[false, 'failed']]);
  }, 60_000);

  it('a tamper switch open at start is reported though the reader answers LSTAT in block 0x15 (the libosdp reply of issue 32); the quirk is logged once', async () => {
    const s = await setup(', scbkFile: SCBK');
    s.pd.reader(3).scbk = Buffer.from(KEY, 'hex');
    s.pd.reader(3).tamper = true;
    s.pd.reader(3).lstatReplyInBlock15 = true;
    const daemon = await start(s.config);
    await eventually(async () => (await s.refresh()).some((e) => e.type === 'reader_tamper'), 10_000, 'the tamper');
    expect(
      s
        .events()
        .filter((e) => e.type === 'reader_tamper')
        .map((e) => e.state),
    ).toEqual(['tampered']);
    s.pd.reader(3).pending.push({ code: 0x48, data: [0, 0] });
    await eventually(async () => (await s.refresh()).filter((e) => e.type === 'reader_tamper').length === 2, 8000, 'the restore');
    expect(daemon.logs.filter((l) => String(l.msg).includes('security block type 0x15'))).toHaveLength(1);
    expect(s.pd.reader(3).log).toEqual(['established']); // the channel held: nothing dropped
  }, 60_000);

  it('a reader that stops answering: reader_offline in the audit log; back: reader_online', async () => {
    const s = await setup('');
    const daemon = await start(s.config);
    await daemon.waitForMessage('OSDP reader online', 10_000);
    s.pd.reader(3).silent = true;
    await daemon.waitForMessage('OSDP reader offline', 10_000);
    s.pd.reader(3).silent = false;
    await eventually(async () => (await s.refresh()).filter((e) => e.type === 'reader_online').length === 2, 10_000, 'online again');
    const readerEvents = s.events().filter((e) => e.type !== 'config_changed' && e.type !== 'audit_chain_started'); // not the start's configuration nor the audit chain's start
    expect(readerEvents.map((e) => e.type)).toEqual(['reader_online', 'reader_offline', 'reader_online']);
    expect(
      s
        .events()
        .filter((e) => e.type === 'reader_online')
        .map((e) => [e.secure, e.channel]),
    ).toEqual([
      [false, 'plain'],
      [false, 'plain'],
    ]);
    expect(await s.status()).toContain('connected; PLAIN (no secure channel: a device on the bus can read and inject cards and PINs)');
    // A tamper switch opened while it was away is reported when it is back, and its restore too.
    s.pd.reader(3).tamper = true;
    s.pd.reader(3).pending.push({ code: 0x48, data: [1, 0] });
    await eventually(async () => (await s.refresh()).some((e) => e.type === 'reader_tamper'), 8000, 'the tamper');
    s.pd.reader(3).tamper = false;
    s.pd.reader(3).pending.push({ code: 0x48, data: [0, 0] });
    await eventually(async () => (await s.refresh()).filter((e) => e.type === 'reader_tamper').length === 2, 8000, 'the restore');
    expect(
      s
        .events()
        .filter((e) => e.type === 'reader_tamper')
        .map((e) => e.state),
    ).toEqual(['tampered', 'restored']);
    expect(daemon.logs.some((l) => l.msg === 'OSDP reader without a secure channel (no scbkFile): its traffic can be read and forged on the line')).toBe(true);
  }, 90_000); // a start, an offline spell, a paced return and six CLI runs: slow on a loaded machine

  it('a key file others can read is refused at start, naming the file and the fix', async () => {
    const s = await setup(', scbkFile: SCBK', 0o644);
    const r = runCli(['config', 'check', '--config', s.config]);
    expect(r.status).toBe(78);
    expect(r.stderr).toContain(`doors[0].reader.scbkFile: ${join(s.dir, 'scbk')} is readable by others (mode 644): chmod 600`);
    expect(r.stderr).not.toContain(KEY);
  });

  it('reader keyset: a new random key, saved 0600 before use, taken by the reader; the daemon then uses it', async () => {
    const s = await setup(', scbkFile: SCBK');
    s.pd.reader(3).scbk = Buffer.from(KEY, 'hex');
    const keyset = await runCliAsync(['reader', 'keyset', '--config', s.config]);
    expect(keyset.stderr).toBe('');
    expect(keyset.status).toBe(0);
    expect(keyset.stdout).toContain('the reader at address 3 now uses a new secure channel key, saved in');
    const saved = readFileSync(join(s.dir, 'scbk'), 'utf8').trim();
    expect(saved).toMatch(/^[0-9a-f]{32}$/);
    expect(saved).not.toBe(KEY);
    expect(statSync(join(s.dir, 'scbk')).mode & 0o777).toBe(0o600);
    expect(existsSync(join(s.dir, 'scbk.new'))).toBe(false);
    expect(s.pd.reader(3).scbk!.toString('hex')).toBe(saved);
    expect(keyset.stdout + keyset.stderr).not.toContain(saved);
    const daemon = await start(s.config);
    await daemon.waitForMessage('OSDP secure channel established', 10_000);
    // The change enters the audit log when the daemon starts (config_changed, reason reader_keyset), never the key.
    const changes = (await s.refresh()).filter((e) => e.type === 'config_changed');
    expect(changes.map((e) => e.reason)).toEqual(['reader_keyset', 'loaded']);
    expect(changes[0]).toMatchObject({ door: DOOR_UUID, config_hash: changes[1]!.config_hash });
    expect(JSON.stringify(s.events())).not.toContain(saved);
  });

  it("reader keyset --reader exit: the door's exit reader (two addresses on one bus) gets the new key, the entry reader keeps its own; status shows both channels", async () => {
    const s = await setup(', scbkFile: SCBK', 0o600, true);
    s.pd.reader(3).scbk = Buffer.from(KEY, 'hex');
    s.pd.reader(4).scbk = Buffer.from(EXIT_KEY, 'hex');
    const keyset = await runCliAsync(['reader', 'keyset', '--reader', 'exit', '--config', s.config]);
    expect(keyset.stderr).toBe('');
    expect(keyset.status).toBe(0);
    expect(keyset.stdout).toContain('Front door: the exit reader at address 4 now uses a new secure channel key, saved in');
    const saved = readFileSync(join(s.dir, 'scbk-exit'), 'utf8').trim();
    expect(saved).toMatch(/^[0-9a-f]{32}$/);
    expect(saved).not.toBe(EXIT_KEY);
    expect(statSync(join(s.dir, 'scbk-exit')).mode & 0o777).toBe(0o600);
    expect(s.pd.reader(4).scbk!.toString('hex')).toBe(saved);
    // The entry reader and its key file are untouched.
    expect(readFileSync(join(s.dir, 'scbk'), 'utf8').trim()).toBe(KEY);
    expect(s.pd.reader(3).scbk!.toString('hex')).toBe(KEY);
    expect(s.pd.reader(3).log).not.toContain('keyset');
    const daemon = await start(s.config);
    await waitUntil(() => daemon.logs.filter((l) => l.msg === 'OSDP secure channel established').length === 2, 10_000, 'both channels');
    const changes = (await s.refresh()).filter((e) => e.type === 'config_changed');
    expect(changes.map((e) => [e.reason, e.reader])).toEqual([
      ['reader_keyset', 'exit'],
      ['loaded', undefined],
    ]);
    expect(changes[0]).toMatchObject({ door: DOOR_UUID });
    // Each reader's secure channel, the exit reader's too (before, status showed the entry reader's only).
    const bus = join(s.dir, 'bus');
    await eventually(
      async () =>
        (await s.status()).includes(
          `reader OSDP ${bus} address 3 (secure channel) (numbering data) connected; secure channel in use; exit reader OSDP ${bus} address 4 (secure channel) (numbering data) connected; secure channel in use`,
        ),
      8000,
      'both channels in status',
    );
    const json = JSON.parse((await runCliAsync(['status', '--json', '--config', s.config])).stdout) as {
      doors: Array<{ reader: { channel: unknown }; exitReader: { channel: unknown } }>;
    };
    expect(json.doors[0]!.exitReader.channel).toEqual({ configured: 'secure', inUse: 'secure' });
    expect(json.doors[0]!.reader.channel).toEqual({ configured: 'secure', inUse: 'secure' });
  }, 60_000);

  it('reader keyset --reader exit on a door without an exit reader: a usage error naming the door; nothing changes', async () => {
    const s = await setup(', scbkFile: SCBK');
    s.pd.reader(3).scbk = Buffer.from(KEY, 'hex');
    const keyset = await runCliAsync(['reader', 'keyset', '--door', DOOR_UUID, '--reader', 'exit', '--config', s.config]);
    expect(keyset.status).toBe(2);
    expect(keyset.stderr).toContain(`Front door (${DOOR_UUID}) has no exit reader (readers.exit)`);
    const wrong = await runCliAsync(['reader', 'keyset', '--reader', 'side', '--config', s.config]);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toContain('--reader must be entry or exit, not side');
    expect(readFileSync(join(s.dir, 'scbk'), 'utf8').trim()).toBe(KEY);
    expect(existsSync(join(s.dir, 'scbk.new'))).toBe(false);
    expect(s.pd.reader(3).log).not.toContain('keyset');
  });

  it('reader keyset while door-agent holds the bus fails clearly and keeps the key', async () => {
    const s = await setup(', scbkFile: SCBK');
    s.pd.reader(3).scbk = Buffer.from(KEY, 'hex');
    const daemon = await start(s.config);
    await daemon.waitForMessage('OSDP secure channel established', 10_000);
    const keyset = await runCliAsync(['reader', 'keyset', '--config', s.config]);
    expect(keyset.status).not.toBe(0);
    expect(keyset.status).toBe(1);
    expect(keyset.stderr).toContain(`another door-agent (pid ${daemon.pid}) is running on the data directory`);
    expect(keyset.stderr).toContain('reader keyset does not talk to a bus a running daemon holds');
    expect(readFileSync(join(s.dir, 'scbk'), 'utf8').trim()).toBe(KEY);
    expect(existsSync(join(s.dir, 'scbk.new'))).toBe(false);
  });
});

describe('OSDP maintenance: reader osdp set-address / set-baud (osdp_COMSET), osdp_TEXT', () => {
  const pendingNotes = (dir: string) =>
    readFileSync(join(dir, 'data', 'config-changes.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  it('set-address 3 -> 5: the reader confirms and answers only at 5; the CLI prints the line to change and leaves the file alone', async () => {
    const s = await setup('');
    const before = readFileSync(s.config, 'utf8');
    const r = await runCliAsync(['reader', 'osdp', 'set-address', '--to', '5', '--config', s.config]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`Front door: the reader on ${join(s.dir, 'bus')} now answers at address 5 at 9600 baud (it was at address 3 at 9600 baud)`);
    expect(r.stdout).toContain('  doors[0].reader.address: 5\n');
    expect(readFileSync(s.config, 'utf8')).toBe(before);
    expect([...s.pd.readers.keys()]).toEqual([5]);
    expect(s.pd.reader(5).log).toEqual(['comset']);
    expect(pendingNotes(s.dir)).toMatchObject([{ reason: 'reader_comset', door: DOOR_UUID, comset: { address: 5, baudRate: 9600 } }]);
  });

  it('set-baud over the secure channel: COMSET inside the channel, a new handshake at the new rate; the line names baudRate', async () => {
    const s = await setup(', scbkFile: SCBK');
    s.pd.reader(3).scbk = Buffer.from(KEY, 'hex');
    const r = await runCliAsync(['reader', 'osdp', 'set-baud', '--to', '19200', '--config', s.config]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('  doors[0].reader.baudRate: 19200\n');
    expect(s.pd.reader(3).baudRate).toBe(19200);
    expect(s.pd.reader(3).log).toEqual(['established', 'comset', 'established']);
    expect(r.stdout + r.stderr).not.toContain(KEY);
  });

  it('a reader whose osdp_COM names other settings: an error with what it answered and where it is; exit 1', async () => {
    const s = await setup('');
    s.pd.reader(3).comsetAnswer = { address: 6, baudRate: 9600 };
    const r = await runCliAsync(['reader', 'osdp', 'set-address', '--to', '5', '--config', s.config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      'Front door: the reader answered that it will use address 6 at 9600 baud, not the address 5 at 9600 baud asked for; the configuration is unchanged; it answers at address 6 at 9600 baud',
    );
    expect(r.stdout).toBe('');
    expect(existsSync(join(s.dir, 'data', 'config-changes.jsonl'))).toBe(false);
  });

  it('a reader that confirms but does not answer at the new address: said so, and where it still answers', async () => {
    const s = await setup('');
    s.pd.reader(3).comsetStays = true;
    const r = await runCliAsync(['reader', 'osdp', 'set-address', '--to', '5', '--config', s.config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('Front door: the reader took address 5 at 9600 baud but does not answer there; it answers at address 3 at 9600 baud');
    expect(r.stdout).toBe('');
  });

  it('a reader that refuses (NAK): the reason named, the reader unchanged', async () => {
    const s = await setup('');
    s.pd.reader(3).comsetNak = 9;
    const r = await runCliAsync(['reader', 'osdp', 'set-address', '--to', '5', '--config', s.config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      'Front door: the reader refused the new settings (NAK 9: unable to process the command record); it keeps address 3 at 9600 baud',
    );
    expect([...s.pd.readers.keys()]).toEqual([3]);
  });

  it('an address another reader on the bus has, the broadcast address, a rate OSDP does not use: refused before a byte is sent', async () => {
    const s = await setup('', 0o600, true);
    const taken = await runCliAsync(['reader', 'osdp', 'set-address', '--to', '4', '--config', s.config]);
    expect(taken.status).toBe(2);
    expect(taken.stderr).toContain(`--to 4: address 4 on this bus is already Front door's (${DOOR_UUID}) doors[0].readers.exit`);
    const broadcast = await runCliAsync(['reader', 'osdp', 'set-address', '--to', '127', '--config', s.config]);
    expect(broadcast.status).toBe(2);
    expect(broadcast.stderr).toContain('--to 127: an OSDP address is 0 to 126 (127, 0x7F, is the broadcast address every reader answers)');
    const baud = await runCliAsync(['reader', 'osdp', 'set-baud', '--reader', 'exit', '--to', '14400', '--config', s.config]);
    expect(baud.status).toBe(2);
    expect(baud.stderr).toContain('--to 14400: the baud rate is one of 9600, 19200, 38400, 57600, 115200, 230400');
    expect(s.pd.reader(3).received).toEqual([]);
    expect(s.pd.reader(4).received).toEqual([]);
  });

  it('while door-agent holds the bus: refused as keyset is', async () => {
    const s = await setup('');
    const daemon = await start(s.config);
    await daemon.waitForMessage('OSDP reader online', 10_000);
    const r = await runCliAsync(['reader', 'osdp', 'set-address', '--to', '5', '--config', s.config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`another door-agent (pid ${daemon.pid}) is running on the data directory`);
    expect(r.stderr).toContain('reader osdp set-address does not talk to a bus a running daemon holds');
    expect(s.pd.reader(3).log).not.toContain('comset');
  });

  it('text: a granted and a denied tap show the configured texts on a reader with a display, after its LED and beep', async () => {
    const s = await setup(", text: { granted: 'Welcome', denied: 'Access denied', seconds: 4 }");
    s.pd.reader(3).display = true;
    const daemon = await start(s.config);
    await daemon.waitForMessage('OSDP reader online', 10_000);
    s.pd.presentCard(3, encodeCard(4_213_578n, 'H10301'));
    await waitUntil(() => s.pd.reader(3).shown.length === 1, 5000, 'the granted text');
    s.pd.presentCard(3, encodeCard(4_213_579n, 'H10301'));
    await waitUntil(() => s.pd.reader(3).shown.length === 2, 5000, 'the denied text');
    expect(s.pd.reader(3).shown).toEqual([
      { text: 'Welcome', command: 4, seconds: 4, row: 1, column: 1 },
      { text: 'Access denied', command: 4, seconds: 4, row: 1, column: 1 },
    ]);
    const received = s.pd.reader(3).received;
    expect(received.indexOf(0x6b)).toBeGreaterThan(received.indexOf(0x6a));
  });

  it('text on a reader without a display: never sent, and the start log says once that the text is unused', async () => {
    const s = await setup(", text: { granted: 'Welcome' }");
    const daemon = await start(s.config);
    await daemon.waitForMessage('OSDP reader online', 10_000);
    s.pd.presentCard(3, encodeCard(4_213_578n, 'H10301'));
    await waitUntil(() => readLevel(s.relay) === '1', 5000, 'the card opens');
    await waitUntil(() => s.pd.reader(3).received.includes(0x6a), 5000, 'the beep');
    await new Promise((r) => setTimeout(r, 500));
    expect(s.pd.reader(3).received).not.toContain(0x6b);
    expect(daemon.logs.filter((l) => String(l.msg).includes('has no display'))).toHaveLength(1);
  });

  it('a text the display cannot show is a config error naming the key and why', () => {
    const dir = join(tmp.path, `text-${Date.now()}`);
    mkdirSync(dir);
    const reader = (text: string) => `    reader: { type: osdp, path: ${dir}/bus, address: 3, text: { ${text} } }\n`;
    const long = runCli(['config', 'check', '--config', writeConfig(dir, { doorExtra: reader("granted: 'Willkommen, schön dass du da bist'") })]);
    expect(long.status).toBe(78);
    expect(long.stderr).toContain('doors[0].reader.text.granted: at most 32 characters');
    const symbol = runCli(['config', 'check', '--config', writeConfig(dir, { doorExtra: reader("denied: 'Zutritt ✗'") })]);
    expect(symbol.status).toBe(78);
    expect(symbol.stderr).toContain('doors[0].reader.text.denied: printable ASCII only');
  });
});
