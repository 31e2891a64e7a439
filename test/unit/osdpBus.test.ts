import { describe, expect, it } from 'vitest';
import { encodeCard } from '../../src/core/wiegand.js';
import type { ReaderFrame } from '../../src/readers/readerFrames.js';
import { CMD, OsdpBus } from '../../src/readers/osdp/controlPanel.js';
import { encodePacket } from '../../src/readers/osdp/packet.js';

const packBits = (bits: number[]) =>
  Array.from({ length: Math.ceil(bits.length / 8) }, (_, i) => bits.slice(i * 8, i * 8 + 8).reduce((a, b, j) => a | (b << (7 - j)), 0));
import { ManualTime } from '../support/manualTime.js';
import { OsdpEmulator } from '../../src/readers/osdp/readerEmulator.js';

const KEY = Buffer.from('00112233445566778899aabbccddeeff', 'hex');

/** A bus with readers at `addresses`, wired to the emulator through an in-memory line (replies come back at once). */
function bus(addresses: number[], secure: { scbk?: Buffer; installMode?: boolean; readerKey?: Buffer; checksum?: boolean } | null = null) {
  const time = new ManualTime();
  const frames: Array<[number, ReaderFrame]> = [];
  const online: Array<[number, boolean]> = [];
  const dropped: string[] = [];
  const secureErrors: string[] = [];
  const statuses: Array<{ tamper: boolean; powerFailure: boolean }> = [];
  const identified: number[] = [];
  const channels: Array<[number, string]> = [];
  const quirks: string[] = [];
  /** Every command on the line: [address, code] (after the mark byte: SOM, ADDR, LEN, LEN, CTRL, [SCB], CODE). */
  const sent: Array<[number, number]> = [];
  let panel: OsdpBus | null = null;
  const pd = new OsdpEmulator(addresses, (bytes) => panel!.receive(bytes));
  if (secure?.readerKey) for (const a of addresses) pd.reader(a).scbk = secure.readerKey;
  panel = new OsdpBus({
    transport: {
      write: (bytes) => {
        sent.push([bytes[2]!, bytes[6 + (bytes[5]! & 0x08 ? bytes[6]! : 0)]!]);
        pd.receive(bytes);
      },
    },
    clock: time,
    timers: time,
    readers: addresses.map((address) => ({
      address,
      numbering: 'data' as const,
      onFrame: (f: ReaderFrame) => frames.push([address, f]),
      onOnline: (o: boolean) => online.push([address, o]),
      onDropped: (reason: string) => dropped.push(reason),
      ...(secure?.scbk ? { scbk: secure.scbk } : {}),
      ...(secure?.installMode ? { installMode: true } : {}),
      ...(secure?.checksum ? { checksum: true } : {}),
      onSecureError: (message: string) => secureErrors.push(message),
      onStatus: (st: { tamper: boolean; powerFailure: boolean }) => statuses.push(st),
      onIdentified: () => identified.push(address),
      onChannel: (state: string) => channels.push([address, state]),
      onQuirk: (message: string) => quirks.push(message),
    })),
  });
  panel.start();
  return { time, panel, pd, frames, online, dropped, secureErrors, statuses, identified, channels, quirks, sent };
}

describe('OSDP control panel (plain mode) against an emulated reader', () => {
  it('identifies the reader, then polls; a card read (osdp_RAW, 26-bit Wiegand) becomes a card frame', () => {
    const t = bus([0]);
    t.time.advance(50);
    expect(t.online).toEqual([[0, true]]);
    expect(t.pd.reader(0).received.slice(0, 4)).toEqual([CMD.ID, CMD.CAP, CMD.LSTAT, CMD.POLL]);
    t.pd.presentCard(0, encodeCard(4_213_578n));
    t.time.advance(20);
    expect(t.frames).toMatchObject([[0, { kind: 'card', value: '4213578' }]]);
  });

  it('keys (osdp_KEYPAD) feed the PIN logic: 1234# is a PIN', () => {
    const t = bus([0]);
    t.time.advance(50);
    t.pd.typeKeys(0, '12');
    t.time.advance(20);
    t.pd.typeKeys(0, '34#');
    t.time.advance(20);
    expect(t.frames).toEqual([[0, { kind: 'pin', value: '1234' }]]);
  });

  it('a card whose bits fail their parity is dropped, never decided', () => {
    const t = bus([0]);
    t.time.advance(50);
    const bits = encodeCard(4_213_578n);
    bits[5] = 1 - bits[5]!;
    t.pd.presentCard(0, bits);
    t.time.advance(20);
    expect(t.frames).toEqual([]);
    expect(t.dropped).toEqual(['parity']);
  });

  it('replies with a broken CRC count as no reply: the command is retried and the card still arrives', () => {
    const t = bus([0]);
    t.time.advance(50);
    t.pd.reader(0).corrupt = true;
    t.pd.presentCard(0, encodeCard(77n));
    t.time.advance(600); // three timeouts
    expect(t.frames).toEqual([]);
    t.pd.reader(0).corrupt = false;
    t.time.advance(300);
    expect(t.frames).toMatchObject([[0, { kind: 'card', value: '77' }]]);
    expect(t.online).toEqual([[0, true]]); // a few lost replies are not an outage
  });

  it('a reader that stops answering goes offline after 2 s, and online again (identified anew) when it is back', () => {
    const t = bus([0]);
    t.time.advance(50);
    t.pd.reader(0).silent = true;
    t.time.advance(2500);
    expect(t.online).toEqual([
      [0, true],
      [0, false],
    ]);
    t.pd.reader(0).silent = false;
    t.pd.reader(0).received.length = 0;
    t.time.advance(1500); // offline, it is tried 1 s after the last try
    expect(t.online).toEqual([
      [0, true],
      [0, false],
      [0, true],
    ]);
    expect(t.pd.reader(0).received[0]).toBe(CMD.ID);
    expect(t.identified).toEqual([0, 0]);
  });

  it('an offline reader is tried at a slow, growing rate (1 s, 2 s, 4 s, then every 5 s), the other reader keeps its turns', () => {
    const t = bus([1, 2]);
    t.pd.reader(2).silent = true;
    for (let i = 0; i < 60; i++) t.time.advance(1000);
    const tries = t.sent.filter(([a, c]) => a === 2 && c === CMD.ID).length;
    // At 0, then 1 s, 2 s, 4 s after each try that timed out, then every 5 s: 15 tries in a minute.
    expect(tries).toBeGreaterThanOrEqual(12);
    expect(tries).toBeLessThanOrEqual(16);
    expect(t.pd.reader(1).received.filter((c) => c === CMD.POLL).length).toBeGreaterThan(5000);
    t.pd.presentCard(1, encodeCard(12n));
    t.time.advance(20);
    expect(t.frames).toMatchObject([[1, { kind: 'card', value: '12' }]]);
    expect(t.online).toEqual([[1, true]]);
  });

  it('bytes of one reply more than 50 ms apart are not one packet: the partial one is dropped (inter-byte timeout)', () => {
    const time = new ManualTime();
    const frames: ReaderFrame[] = [];
    let gapMs = 0;
    let panel: OsdpBus | null = null;
    // The line delivers each reply in two pieces, `gapMs` apart.
    const pd = new OsdpEmulator([0], (bytes) => {
      if (gapMs === 0) return panel!.receive(bytes);
      const half = Math.floor(bytes.length / 2);
      panel!.receive(bytes.subarray(0, half));
      time.setTimeout(() => panel!.receive(bytes.subarray(half)), gapMs);
    });
    panel = new OsdpBus({
      transport: { write: (b) => pd.receive(b) },
      clock: time,
      timers: time,
      readers: [{ address: 0, numbering: 'data', onFrame: (f) => frames.push(f) }],
    });
    panel.start();
    time.advance(50);
    gapMs = 60;
    pd.presentCard(0, encodeCard(77n));
    time.advance(1000);
    expect(frames).toEqual([]); // every repeat of the reply is cut by a 60 ms silence
    gapMs = 20; // within the timeout: one packet
    time.advance(1000);
    expect(frames).toMatchObject([{ kind: 'card', value: '77' }]);
  });

  it('two readers on one bus: both polled, each card reported with its reader; one offline leaves the other working', () => {
    const t = bus([1, 2]);
    t.time.advance(100);
    expect(t.online).toEqual([
      [1, true],
      [2, true],
    ]);
    t.pd.reader(2).silent = true;
    t.time.advance(3000);
    t.pd.presentCard(1, encodeCard(11n));
    t.time.advance(500);
    expect(t.frames).toMatchObject([[1, { kind: 'card', value: '11' }]]);
    expect(t.online).toContainEqual([2, false]);
    expect(t.online).not.toContainEqual([1, false]);
  });

  it('an LED command goes out in place of the next poll, and again if it got no answer', () => {
    const t = bus([0]);
    t.time.advance(50);
    t.pd.reader(0).silent = true;
    t.panel.send(0, CMD.LED, Buffer.alloc(14));
    t.time.advance(250);
    t.pd.reader(0).silent = false;
    t.pd.reader(0).received.length = 0;
    t.time.advance(250);
    expect(t.pd.reader(0).received[0]).toBe(CMD.LED);
  });
});

describe('OSDP secure channel', () => {
  it("with the reader's key: the handshake, then every poll MACed; a card read arrives encrypted and is decided", () => {
    const t = bus([0], { scbk: KEY, readerKey: KEY });
    t.time.advance(100);
    expect(t.pd.reader(0).log).toEqual(['established']);
    t.pd.presentCard(0, encodeCard(4_213_578n));
    t.pd.typeKeys(0, '1234#');
    t.time.advance(50);
    expect(t.frames).toMatchObject([
      [0, { kind: 'card', value: '4213578' }],
      [0, { kind: 'pin', value: '1234' }],
    ]);
    expect(t.secureErrors).toEqual([]);
  });

  it('a reader with another key: one clear error, no card from it is ever decided, handshakes after 10 s, 20 s, 40 s, then every 60 s', () => {
    const t = bus([0], { scbk: KEY, readerKey: Buffer.alloc(16, 7) });
    t.time.advance(100);
    expect(t.secureErrors).toEqual(['the reader holds another secure channel key than scbkFile: no card or key from it is used']);
    t.pd.presentCard(0, encodeCard(4_213_578n));
    t.time.advance(5000);
    expect(t.frames).toEqual([]);
    const challenges = () => t.pd.reader(0).received.filter((c) => c === CMD.CHLNG).length;
    expect(challenges()).toBe(1);
    t.time.advance(6000);
    expect(challenges()).toBe(2); // tried again after 10 s (the supervision poll every 5 s is when it is due)
    t.time.advance(300_000 - 11_100);
    // 0, 10, 30, 70, 130, 190, 250 s (each try on the 5 s supervision beat, so a little later)
    expect(challenges()).toBeGreaterThanOrEqual(6);
    expect(challenges()).toBeLessThanOrEqual(8);
    expect(t.secureErrors).toHaveLength(1); // said once, not at each try
    expect(t.identified).toEqual([0]); // identified once, not at each supervision poll
    expect(t.channels).toEqual([[0, 'failed']]);
    expect(t.online).toEqual([[0, true]]); // answering all along: not offline
    // Five minutes: the supervision osdp_ID every 5 s and the handshakes, not a poll every few milliseconds.
    expect(t.pd.reader(0).received.length).toBeLessThan(90);
    expect(t.frames).toEqual([]);
    expect(JSON.stringify(t.secureErrors)).not.toContain(KEY.toString('hex'));
  });

  it('a reader given the right key after a failed handshake: the next try establishes the channel', () => {
    const t = bus([0], { scbk: KEY, readerKey: Buffer.alloc(16, 7) });
    t.time.advance(100);
    t.pd.reader(0).scbk = KEY;
    t.time.advance(15_000);
    expect(t.channels).toEqual([
      [0, 'failed'],
      [0, 'secure'],
    ]);
    t.pd.presentCard(0, encodeCard(8n));
    t.time.advance(50);
    expect(t.frames).toMatchObject([[0, { kind: 'card', value: '8' }]]);
  });

  it("install mode uses the standard's default key, for a new reader", () => {
    const t = bus([0], { installMode: true });
    t.time.advance(100);
    expect(t.pd.reader(0).log).toEqual(['established']);
    t.pd.presentCard(0, encodeCard(9n));
    t.time.advance(50);
    expect(t.frames).toMatchObject([[0, { kind: 'card', value: '9' }]]);
  });

  it('a reply whose MAC does not verify is dropped (its card never decided) and the channel starts again', () => {
    const t = bus([0], { scbk: KEY, readerKey: KEY });
    t.time.advance(100);
    t.pd.reader(0).forgeNextMac = true;
    t.pd.presentCard(0, encodeCard(5n));
    t.time.advance(30);
    expect(t.frames).toEqual([]);
    expect(t.secureErrors).toEqual(['a reply whose MAC does not verify: dropped, the channel restarts']);
    t.time.advance(100); // a new handshake at once: one bad packet is not a 10 s outage
    expect(t.pd.reader(0).log.filter((l) => l === 'established')).toHaveLength(2);
    t.pd.presentCard(0, encodeCard(6n));
    t.time.advance(50);
    expect(t.frames).toMatchObject([[0, { kind: 'card', value: '6' }]]);
  });

  it('a reader that requires the secure channel refuses plain polls: a panel without the key decides nothing', () => {
    const t = bus([0], { readerKey: KEY });
    t.time.advance(100);
    t.pd.presentCard(0, encodeCard(4_213_578n));
    t.time.advance(100);
    expect(t.frames).toEqual([]);
  });

  it('a reader that offers only the 8-bit checksum: plain and secure, cards still arrive', () => {
    for (const secure of [{ checksum: true }, { checksum: true, scbk: KEY, readerKey: KEY }]) {
      const t = bus([0], secure);
      t.time.advance(100);
      t.pd.presentCard(0, encodeCard(31n));
      t.time.advance(50);
      expect(t.frames).toMatchObject([[0, { kind: 'card', value: '31' }]]);
      expect(t.pd.reader(0).checksumMode).toBe(true);
    }
  });

  it('tamper and power reports (osdp_LSTATR) are handed on', () => {
    const t = bus([0]);
    t.time.advance(50);
    t.pd.reader(0).pending.push({ code: 0x48, data: [1, 0] });
    t.pd.reader(0).pending.push({ code: 0x48, data: [0, 1] });
    t.time.advance(50);
    expect(t.statuses).toEqual([
      { tamper: false, powerFailure: false }, // asked for when it came online
      { tamper: true, powerFailure: false },
      { tamper: false, powerFailure: true },
    ]);
  });

  it('a tamper present when the reader comes online is reported (the state is asked for, not only changes)', () => {
    const t = bus([0]);
    t.pd.reader(0).tamper = true;
    t.time.advance(50);
    expect(t.statuses).toEqual([{ tamper: true, powerFailure: false }]);
  });

  it('an LSTATR in security block 0x15 (libosdp, as reported): taken when its MAC verifies, said once; a tamper open at start is reported', () => {
    const t = bus([0], { scbk: KEY, readerKey: KEY });
    t.pd.reader(0).tamper = true;
    t.pd.reader(0).lstatReplyInBlock15 = true;
    t.time.advance(100);
    expect(t.statuses).toEqual([{ tamper: true, powerFailure: false }]);
    expect(t.secureErrors).toEqual([]);
    expect(t.quirks).toEqual(['the reader answered command 0x64 with security block type 0x15 where the standard says 0x16; accepted, its MAC verifies']);
    expect(t.channels).toEqual([[0, 'secure']]);
    // A second one: no second quirk message; the channel holds.
    t.pd.reader(0).pending.push({ code: 0x48, data: [0, 0] });
    t.time.advance(50);
    expect(t.statuses).toEqual([
      { tamper: true, powerFailure: false },
      { tamper: false, powerFailure: false },
    ]);
    expect(t.quirks).toHaveLength(1);
    expect(t.pd.reader(0).log).toEqual(['established']);
  });

  it('an LSTATR in block 0x15 whose MAC does not verify is dropped like any forged reply', () => {
    const t = bus([0], { scbk: KEY, readerKey: KEY });
    t.pd.reader(0).tamper = true;
    t.pd.reader(0).lstatReplyInBlock15 = true;
    t.pd.reader(0).forgeNextMac = true;
    t.time.advance(30);
    expect(t.statuses).toEqual([]);
    expect(t.quirks).toEqual([]);
    expect(t.secureErrors).toEqual(['a reply whose MAC does not verify: dropped, the channel restarts']);
  });

  it('a dropped status reply is asked for again: a tamper open at start is still reported', () => {
    const t = bus([0], { scbk: KEY, readerKey: KEY });
    t.pd.reader(0).tamper = true;
    t.pd.reader(0).forgeNextMac = true; // the first secure reply, the LSTATR, does not verify
    t.time.advance(2000);
    expect(t.secureErrors).toEqual(['a reply whose MAC does not verify: dropped, the channel restarts']);
    expect(t.statuses).toEqual([{ tamper: true, powerFailure: false }]);
    expect(t.pd.reader(0).received.filter((c) => c === CMD.LSTAT)).toHaveLength(2);
  });

  it('a lost reply on the secure channel: the same bytes go again and the reader repeats its reply, card included', () => {
    const t = bus([0], { scbk: KEY, readerKey: KEY });
    t.time.advance(100);
    t.pd.reader(0).corrupt = true; // the line garbles the reply that carries the card
    t.pd.presentCard(0, encodeCard(4_213_578n));
    t.panel.send(0, CMD.LED, Buffer.alloc(14)); // and a queued LED waits behind the retry
    t.time.advance(250);
    t.pd.reader(0).corrupt = false;
    t.time.advance(300);
    expect(t.frames).toMatchObject([[0, { kind: 'card', value: '4213578' }]]);
    expect(t.secureErrors).toEqual([]);
    expect(t.pd.reader(0).log).toEqual(['established']);
  });

  it('a plain card reply to osdp_ID for a secure reader (a forged downgrade) is never decided, nor a sign of life', () => {
    const time = new ManualTime();
    const frames: ReaderFrame[] = [];
    const dropped: string[] = [];
    const online: boolean[] = [];
    let panel: OsdpBus | null = null;
    // A forger on the line answers every command with a plain osdp_RAW of Alice's card.
    const forged = (sqn: number) =>
      encodePacket({ addr: 0, reply: true, sqn, crc: true, code: 0x50, data: Buffer.from([0, 1, 26, 0, ...packBits(encodeCard(4_213_578n))]) });
    panel = new OsdpBus({
      transport: { write: (bytes) => panel!.receive(forged(bytes[5]! & 0x03)) },
      clock: time,
      timers: time,
      readers: [
        { address: 0, numbering: 'data', scbk: KEY, onFrame: (f) => frames.push(f), onDropped: (r) => dropped.push(r), onOnline: (o) => online.push(o) },
      ],
    });
    panel.start();
    time.advance(3000);
    expect(frames).toEqual([]);
    expect(dropped[0]).toBe('plain_reply');
    expect(online).toEqual([]);
  });
});
