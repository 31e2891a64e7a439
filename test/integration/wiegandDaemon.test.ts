import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { edgesOf, encodeCard, encodeKey } from '../../src/core/wiegand.js';
import { BUILTIN_FORMATS, encodeWith } from '../../src/core/wiegandFormats.js';
import { writeSimulatedEdges } from '../../src/hardware/simulatedEdges.js';
import { DOOR_UUID, runCli, runCliAsync, tempDir, writeConfig } from '../support/cli.js';
import { Daemon, readLevel, waitUntil } from '../support/daemon.js';
import { sleep } from '../support/wait.js';

// The real `door-agent run` with a Wiegand reader on the simulated GPIO driver: edge records written into the
// simulated chip's FIFO go through the same parser, decoder and keypad logic as on a Pi's character device.
// Cards of examples/snapshot.json: 4213578 Alice (Staff, PIN 1234), 4213579 Bob (suspended).

const tmp = tempDir('door-agent-wiegand-');
afterAll(tmp.cleanup);
const running: Daemon[] = [];
afterEach(async () => {
  for (const daemon of running.splice(0)) await daemon.stop('SIGKILL');
});

const PINS = { d0: 5, d1: 6 };
let n = 0;

/** examples/snapshot.json with Alice (101) or another user holding one more card, as the service may store it (e.g. printed: 0123:045678). */
function snapshotWithCards(dir: string, cards: Array<[holder: string, number: string]>): string {
  const snapshot = JSON.parse(readFileSync('examples/snapshot.json', 'utf8')) as {
    details: Record<string, { smartcards: Array<{ number: string; label: string }> }>;
  };
  for (const [holder, number] of cards) snapshot.details[holder]!.smartcards.push({ number, label: 'badge' });
  const path = join(dir, 'snapshot.json');
  writeFileSync(path, JSON.stringify(snapshot));
  return path;
}

async function start(readerExtra = '', doorExtra = '', extraCards: string | Array<[holder: string, number: string]> = []) {
  const dir = join(tmp.path, `w${n++}`);
  mkdirSync(dir);
  const config = writeConfig(dir, {
    id: 'wg',
    agent: 'rtc: true',
    access: '{ groups: [Staff] }',
    doorExtra: `    unlockSeconds: 1
    reader: { type: wiegand, d0: ${PINS.d0}, d1: ${PINS.d1}${readerExtra} }
${doorExtra}`,
  });
  const cards = typeof extraCards === 'string' ? [['101', extraCards] as [string, string]] : extraCards;
  const snapshot = cards.length === 0 ? 'examples/snapshot.json' : snapshotWithCards(dir, cards);
  expect(runCli(['import', snapshot, '--config', config]).status).toBe(0);
  const daemon = new Daemon(config);
  running.push(daemon);
  await daemon.waitForMessage('door-agent ready');
  await daemon.waitForMessage('Wiegand reader listening');
  const gpio = join(dir, 'gpio');
  expect(existsSync(join(gpio, 'edges'))).toBe(true);
  const events = () => {
    const r = runCli(['events', '--config', config]);
    expect(r.status, r.stderr).toBe(0);
    return r.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((e) => e.type !== 'config_changed' && e.type !== 'audit_chain_started'); // the door's events, not what a start records (its configuration, the audit chain's start)
  };
  const relay = join(gpio, 'gpio17/value');
  return { dir, config, daemon, gpio, events, relayIs: (level: string) => () => readLevel(relay) === level };
}

const card = (gpio: string, number: bigint, format = 'H10301') => writeSimulatedEdges(gpio, PINS, edgesOf(encodeCard(number, format), 0));
// Each write is stamped as having just happened: frames written 60 ms apart are 60 ms apart on the wire.
const keys = async (gpio: string, typed: string) => {
  for (const key of typed) {
    writeSimulatedEdges(gpio, PINS, edgesOf(encodeKey(key, 4), 0));
    await sleep(60);
  }
};

describe('a Wiegand reader at the door (simulated chip)', () => {
  it("a 26-bit card of a user opens the door; a suspended user's does not; numbers stay masked", async () => {
    const s = await start();
    card(s.gpio, 4_213_578n);
    await waitUntil(s.relayIs('1'), 5000, 'relay unlocked by the card');
    await waitUntil(s.relayIs('0'), 6000, 'relocked');
    card(s.gpio, 4_213_579n);
    await waitUntil(() => s.events().some((e) => e.type === 'access_denied'), 5000, 'denial recorded');
    expect(s.events().map((e) => [e.type, e.reason ?? null, e.hint ?? null])).toEqual([
      ['access_granted', null, '…78'],
      ['unlocked', null, null],
      ['locked', null, null],
      ['access_denied', 'user_suspended', '…79'],
    ]);
    expect(readLevel(join(s.gpio, 'gpio17/value'))).toBe('0');
    expect(s.daemon.rawOutput.join('\n')).not.toContain('4213578');
  });

  it('a 35-bit Corporate 1000 card opens the door: its data bits are the number the directory holds', async () => {
    const s = await start();
    const c1k35 = BUILTIN_FORMATS.find((f) => f.name === 'C1k35')!;
    // Alice's 4213578 as company 4, card 19274 (4 * 2^20 + 19274): numbering data reads the 32 data bits as one integer.
    writeSimulatedEdges(s.gpio, PINS, edgesOf(encodeWith(c1k35, { facility: 4n, card: 4_213_578n - 4n * 2n ** 20n }), 0));
    await waitUntil(s.relayIs('1'), 5000, 'relay unlocked by the 35-bit card');
    expect(s.events()[0]).toMatchObject({ type: 'access_granted', kind: 'card', hint: '…78', who: 'Alice Adams' });
  });

  it('a card enrolled as printed (0123:045678) opens a door whose numbering is data; the event says the printed form matched', async () => {
    const s = await start('', '', '0123:045678');
    const h10301 = BUILTIN_FORMATS.find((f) => f.name === 'H10301')!;
    writeSimulatedEdges(s.gpio, PINS, edgesOf(encodeWith(h10301, { facility: 123n, card: 45678n }), 0));
    await waitUntil(s.relayIs('1'), 5000, 'relay unlocked by the printed number');
    expect(s.events()[0]).toMatchObject({ type: 'access_granted', kind: 'card', hint: '123:…', card_matched: 'printed' });
    expect(s.daemon.rawOutput.join('\n')).not.toContain('45678');
  });

  it("one card as Alice's 123:45678 and as Erin's 8106606 (its number under numbering data): card_ambiguous, nothing opens; status says so", async () => {
    const s = await start('', '', [
      ['101', '123:45678'],
      ['105', String(123 * 65536 + 45678)],
    ]);
    const h10301 = BUILTIN_FORMATS.find((f) => f.name === 'H10301')!;
    writeSimulatedEdges(s.gpio, PINS, edgesOf(encodeWith(h10301, { facility: 123n, card: 45678n }), 0));
    await waitUntil(() => s.events().some((e) => e.type === 'access_denied'), 5000, 'denial recorded');
    await sleep(300);
    expect(s.events()).toEqual([expect.objectContaining({ type: 'access_denied', kind: 'card', reason: 'card_ambiguous', holders: [] })]);
    expect(readLevel(join(s.gpio, 'gpio17/value'))).toBe('0');
    const status = runCli(['status', '--config', s.config]);
    expect(status.stdout).toContain('numbering data');
    expect(status.stdout).toContain(
      'WARNING: 1 card is in the directory both as printed (facility:card) and as the number it reads as (numbering data), for different holders (email_id 101, email_id 105)',
    );
    expect(`${status.stdout}${s.daemon.rawOutput.join('\n')}`).not.toMatch(/45678|8106606/);
  });

  it('keypad frames make a PIN: 1 2 3 4 # opens, as on a serial keypad', async () => {
    const s = await start();
    await keys(s.gpio, '99*1234#');
    await waitUntil(s.relayIs('1'), 5000, 'PIN opens');
    expect(s.events()[0]).toMatchObject({ type: 'access_granted', kind: 'pin' });
  });

  it('card and PIN, both from the Wiegand reader', async () => {
    const s = await start('', '    mode: card_and_pin\n');
    card(s.gpio, 4_213_578n);
    await s.daemon.waitForMessage('card accepted, waiting for PIN');
    expect(readLevel(join(s.gpio, 'gpio17/value'))).toBe('0');
    await keys(s.gpio, '1234#');
    await waitUntil(s.relayIs('1'), 5000, 'card + PIN opens');
  });

  it('noise and a parity error decide nothing: one warning, then a reader_noise audit event (flushed at stop)', async () => {
    const s = await start(', numbering: facility_card, format: 26');
    const bits = encodeCard(4_213_578n);
    bits[9] = 1 - bits[9]!;
    writeSimulatedEdges(s.gpio, PINS, edgesOf(bits, 0));
    await sleep(60);
    writeSimulatedEdges(s.gpio, PINS, [
      { line: 'd0', rising: false, atUs: 0 },
      { line: 'd0', rising: true, atUs: 3 }, // a 3 µs spike: a glitch, not a bit
    ]);
    await sleep(60);
    card(s.gpio, 4_213_578n, 'H10306'); // a 34-bit frame on a 26-bit-only door
    await s.daemon.waitForMessage('Wiegand frames dropped (noise, parity or wiring)');
    await sleep(300);
    expect(readLevel(join(s.gpio, 'gpio17/value'))).toBe('0');
    expect(s.events()).toEqual([]);
    expect(await s.daemon.stop('SIGTERM')).toMatchObject({ code: 0 });
    const noise = s.events().filter((e) => e.type === 'reader_noise');
    expect(noise).toHaveLength(1);
    expect(noise[0]).toMatchObject({ door: DOOR_UUID, frames: 3, reasons: { parity: 1, glitch_only: 1, bit_count: 1 } });
  });

  it('status names the reader by its lines and its numbering, the default too', async () => {
    const s = await start();
    const r = runCli(['status', '--config', s.config]);
    expect(r.stdout).toContain('reader Wiegand D0 GPIO 5 / D1 GPIO 6 (numbering data) listening');
  });

  it('reader learn (daemon stopped) opens the lines itself and prints the next card in every numbering; nothing read: exit 1', async () => {
    const dir = join(tmp.path, 'learn');
    mkdirSync(dir);
    const config = writeConfig(dir, { id: 'wl', doorExtra: `    reader: { type: wiegand, d0: ${PINS.d0}, d1: ${PINS.d1} }\n` });
    const gpio = join(dir, 'gpio');
    const learning = runCliAsync(['reader', 'learn', '--config', config, '--timeout', '20']);
    await waitUntil(() => existsSync(join(gpio, 'edges')), 10_000, 'the simulated chip open');
    await sleep(300); // the FIFO is opened just after it is made
    const c1k35 = BUILTIN_FORMATS.find((f) => f.name === 'C1k35')!;
    writeSimulatedEdges(gpio, PINS, edgesOf(encodeWith(c1k35, { facility: 123n, card: 45678n }), 0));
    const r = await learning;
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    for (const line of [
      'format:        C1k35 (35 bits)',
      'facility:      123',
      'card:          45678',
      `data:          ${123 * 2 ** 20 + 45678}`,
      `facility_card: ${123 * 65536 + 45678}`,
      'printed:       123:45678',
      'raw bits:      0x40f6164dd',
    ])
      expect(r.stdout).toContain(line);
    const none = await runCliAsync(['reader', 'learn', '--config', config, '--timeout', '1']);
    expect(none.status).toBe(1);
    expect(none.stderr).toContain('no card within 1 s');
  });
});
