import { describe, expect, it } from 'vitest';
import { CMD, REPLY } from '../../src/readers/osdp/codes.js';
import { OsdpBus } from '../../src/readers/osdp/controlPanel.js';
import { checkFirmware, firmwareImage } from '../../src/readers/osdp/emulatorFiles.js';
import { FileTransfer, linkFragmentLimit, parseFtStat, type TransferStep } from '../../src/readers/osdp/fileTransfer.js';
import { FirmwareSession } from '../../src/readers/osdp/firmwareSession.js';
import { OsdpEmulator } from '../../src/readers/osdp/readerEmulator.js';
import { ManualTime } from '../support/manualTime.js';

/** osdp_FTSTAT's 7 bytes: FtAction, FtDelay, FtStatusDetail (signed), FtUpdateMsgMax. */
function ftstat(status: number, delayMs = 0, updateMsgMax = 0): Buffer {
  const b = Buffer.alloc(7);
  b[0] = 1;
  b.writeUInt16LE(delayMs, 1);
  b.writeInt16LE(status, 3);
  b.writeUInt16LE(updateMsgMax, 5);
  return b;
}

/** A FILETRANSFER's fields back from its data. */
function fields(step: TransferStep) {
  if (step.kind !== 'send') throw new Error(`expected a fragment, got ${step.kind}`);
  const d = step.data;
  return { type: d[0], total: d.readUInt32LE(1), offset: d.readUInt32LE(5), size: d.readUInt16LE(9), bytes: d.subarray(11) };
}

const FILE = Buffer.from(Array.from({ length: 250 }, (_, i) => i & 0xff));

describe('osdp_FILETRANSFER, the state machine (plain Buffers, times given in)', () => {
  it('fragments at the link limit, then at the FtUpdateMsgMax the reader asks for; each FtDelay passes before the next', () => {
    const t = new FileTransfer(FILE, { linkLimit: 100, firmwareBefore: '3.4.5' }, 1000);
    const first = fields(t.next(1000));
    expect(first).toMatchObject({ type: 1, total: 250, offset: 0, size: 100 });
    expect(first.bytes.equals(FILE.subarray(0, 100))).toBe(true);
    // The reader wants at most 40 bytes a fragment, and 250 ms between them.
    t.replied(REPLY.FTSTAT, ftstat(0, 250, 40), 1010);
    expect(t.next(1010)).toEqual({ kind: 'wait', until: 1260 });
    expect(t.next(1259)).toEqual({ kind: 'wait', until: 1260 });
    expect(fields(t.next(1260))).toMatchObject({ offset: 100, size: 40 });
    expect(t.progress).toMatchObject({ phase: 'sending', sent: 100, total: 250, delayMs: 250, fragment: 40 });
    // A larger FtUpdateMsgMax than the link carries: the link's limit holds.
    t.replied(REPLY.FTSTAT, ftstat(0, 0, 5000), 1300);
    expect(fields(t.next(1300))).toMatchObject({ offset: 140, size: 100 });
    t.replied(REPLY.FTSTAT, ftstat(0, 0, 0), 1310); // 0: no change
    expect(fields(t.next(1310))).toMatchObject({ offset: 240, size: 10 });
  });

  it('"finishing" (3) is waited for with empty fragments after each delay; then processed or restarting; confirmed by the new firmware', () => {
    const t = new FileTransfer(FILE, { linkLimit: 250, firmwareBefore: '3.4.5' }, 0);
    fields(t.next(0));
    t.replied(REPLY.FTSTAT, ftstat(3, 500), 10);
    expect(t.progress.phase).toBe('finishing');
    expect(t.next(100)).toEqual({ kind: 'wait', until: 510 });
    expect(fields(t.next(510))).toMatchObject({ offset: 250, size: 0, total: 250 });
    t.replied(REPLY.FTSTAT, ftstat(3, 500), 520);
    expect(fields(t.next(1020))).toMatchObject({ offset: 250, size: 0 });
    t.replied(REPLY.FTSTAT, ftstat(2), 1030);
    expect(t.progress.phase).toBe('installing');
    expect(t.next(1030)).toEqual({ kind: 'reidentify' });
    expect(t.next(1040)).toEqual({ kind: 'identity', until: 1030 + 120_000 });
    t.identified('3.5.0');
    expect(t.next(2000)).toEqual({ kind: 'over', outcome: { ok: true, version: '3.5.0', previous: '3.4.5' } });
  });

  it('completion is confirmed: a reader that comes back with its old firmware, or not the one expected, failed', () => {
    const same = new FileTransfer(FILE, { linkLimit: 250, firmwareBefore: '3.4.5' }, 0);
    same.next(0);
    same.replied(REPLY.FTSTAT, ftstat(1), 10);
    same.identified('3.4.5');
    expect(same.next(20)).toEqual({ kind: 'over', outcome: { ok: false, reason: 'the reader still reports firmware 3.4.5', version: '3.4.5' } });

    const other = new FileTransfer(FILE, { linkLimit: 250, firmwareBefore: '3.4.5', expectVersion: '4.0.0' }, 0);
    other.next(0);
    other.replied(REPLY.FTSTAT, ftstat(1), 10);
    other.identified('3.9.9');
    expect(other.next(20)).toMatchObject({ outcome: { ok: false, reason: 'the reader reports firmware 3.9.9, not 4.0.0', version: '3.9.9' } });

    // A re-flash of the version it runs: named, it is confirmed.
    const again = new FileTransfer(FILE, { linkLimit: 250, firmwareBefore: '3.4.5', expectVersion: '3.4.5' }, 0);
    again.next(0);
    again.replied(REPLY.FTSTAT, ftstat(1), 10);
    again.identified('3.4.5');
    expect(again.next(20)).toMatchObject({ outcome: { ok: true, version: '3.4.5' } });
  });

  it('a reader that does not come back, or never ends "finishing", failed when its time is up', () => {
    const gone = new FileTransfer(FILE, { linkLimit: 250, firmwareBefore: '3.4.5', confirmTimeoutMs: 60_000 }, 0);
    gone.next(0);
    gone.replied(REPLY.FTSTAT, ftstat(2), 0);
    gone.next(0);
    gone.lost('the reader at address 3 went offline'); // restarting: expected
    expect(gone.next(59_999)).toMatchObject({ kind: 'identity' });
    expect(gone.next(60_000)).toMatchObject({ outcome: { ok: false, reason: 'the reader did not come back within 60 s after taking the file' } });

    const slow = new FileTransfer(FILE, { linkLimit: 250, firmwareBefore: null, finishingTimeoutMs: 5000 }, 0);
    slow.next(0);
    for (let at = 0; at < 4000; at += 1000) {
      slow.replied(REPLY.FTSTAT, ftstat(3, 1000), at);
      fields(slow.next(at + 1000));
    }
    slow.replied(REPLY.FTSTAT, ftstat(3, 1000), 4000);
    expect(slow.next(5000)).toMatchObject({ outcome: { ok: false, reason: 'the reader did not finish processing the file within 5 s' } });
  });

  it('an error status, a NAK, another reply or a loss midway ends it as failed, with the reason', () => {
    const cases: Array<[number, Buffer, string]> = [
      [REPLY.FTSTAT, ftstat(-1), 'the reader aborted the transfer (FtStatusDetail -1)'],
      [REPLY.FTSTAT, ftstat(-2), 'the reader does not recognize the file (FtStatusDetail -2: not a firmware for this reader)'],
      [REPLY.FTSTAT, ftstat(-3), 'the reader found the file malformed (FtStatusDetail -3: data unacceptable)'],
      [REPLY.FTSTAT, ftstat(-7), 'the reader ended the transfer with FtStatusDetail -7'],
      [REPLY.NAK, Buffer.from([3]), 'the reader refused the file (NAK 3: unknown command (the reader does not implement it))'],
      [REPLY.ACK, Buffer.alloc(0), 'the reader answered osdp_FILETRANSFER with reply 0x40, not osdp_FTSTAT'],
      [REPLY.FTSTAT, Buffer.from([1, 0]), "the reader's osdp_FTSTAT has 2 bytes, not 7"],
    ];
    for (const [code, data, reason] of cases) {
      const t = new FileTransfer(FILE, { linkLimit: 100, firmwareBefore: '3.4.5' }, 0);
      t.next(0);
      t.replied(code, data, 5);
      expect(t.next(10)).toEqual({ kind: 'over', outcome: { ok: false, reason, version: '3.4.5' } });
    }
    const broken = new FileTransfer(FILE, { linkLimit: 100, firmwareBefore: '3.4.5' }, 0);
    broken.next(0);
    broken.replied(REPLY.FTSTAT, ftstat(0), 5);
    broken.next(5);
    broken.lost('the reader at address 3 went offline');
    expect(broken.next(10)).toMatchObject({
      outcome: { ok: false, reason: 'the transfer broke off at 100 of 250 bytes: the reader at address 3 went offline' },
    });
  });

  it("the link's limit: the reader's receive buffer (128 when it names none) less framing, and on the secure channel the padding", () => {
    expect(linkFragmentLimit(null, false)).toBe(108);
    expect(linkFragmentLimit(256, false)).toBe(236);
    // 0xFF, header, SCB, code, data padded to 16 (file header + fragment + 0x80), MAC, CRC: 1+5+2+1+240+4+2 = 255.
    expect(linkFragmentLimit(256, true)).toBe(228);
    expect(linkFragmentLimit(null, true)).toBe(100);
    expect(linkFragmentLimit(100_000, false)).toBe(1420);
    expect(parseFtStat(ftstat(-3, 300, 64))).toEqual({ action: 1, delayMs: 300, status: -3, updateMsgMax: 64 });
  });
});

describe("the emulator's firmware format", () => {
  it('DAFW <version> <bytes> then the bytes; no header: unrecognized (-2); a wrong size: malformed (-3)', () => {
    expect(checkFirmware(firmwareImage('3.5.0', Buffer.alloc(40, 7)))).toEqual({ version: '3.5.0' });
    expect(checkFirmware(Buffer.from('just bytes\n1234'))).toEqual({ status: -2 });
    expect(checkFirmware(Buffer.from('DAFW 3.5.0 41\n'.concat('x'.repeat(40))))).toEqual({ status: -3 });
    expect(checkFirmware(Buffer.from('DAFW 3.500.0 1\nx'))).toEqual({ status: -2 });
  });
});

/** The control panel and the emulated reader on an in-memory line, both on the manual clock; `run` drives a transfer. */
function line(options: { secure?: boolean } = {}) {
  const time = new ManualTime();
  const KEY = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
  let panel: OsdpBus | null = null;
  const pd = new OsdpEmulator([3], (bytes) => panel!.receive(bytes), { now: () => time.monoNow() });
  if (options.secure) pd.reader(3).scbk = KEY;
  const firmware: string[] = [];
  let session: FirmwareSession | null = null;
  /** Every command on the line, by code, as the reader got it. */
  panel = new OsdpBus({
    transport: { write: (bytes) => pd.receive(bytes) },
    clock: time,
    timers: time,
    readers: [
      {
        address: 3,
        numbering: 'data',
        onFrame: () => {},
        ...(options.secure ? { scbk: KEY } : {}),
        onIdentified: (id) => {
          firmware.push(id.firmware);
          session?.identified(id.firmware);
        },
      },
    ],
  });
  panel.start();
  const handle = {
    request: (code: number, data: Buffer) => panel!.request(3, code, data),
    reidentify: () => panel!.reidentify(3),
    fragmentLimit: () => panel!.fragmentLimit(3),
  };
  const progress: Array<{ phase: string; sent: number; delayMs: number }> = [];
  async function run(file: Buffer, limitMs = 60_000) {
    session = new FirmwareSession(
      file,
      { firmwareBefore: firmware.at(-1) ?? null, confirmTimeoutMs: 10_000 },
      {
        handle,
        clock: time,
        timers: time,
        onProgress: (p) => progress.push({ phase: p.phase, sent: p.sent, delayMs: p.delayMs }),
      },
    );
    let outcome: Awaited<ReturnType<FirmwareSession['run']>> | null = null;
    void session.run().then((o) => (outcome = o));
    for (let elapsed = 0; outcome === null && elapsed < limitMs; elapsed += 5) {
      time.advance(5);
      await new Promise((r) => setImmediate(r));
    }
    return outcome;
  }
  return { time, pd, panel, firmware, progress, run, settle: () => time.advance(100) };
}

describe('osdp_FILETRANSFER over the bus, against the emulated reader', () => {
  it("sends the file in the reader's fragment size, honours its FtDelay while the polls go on, and confirms the new firmware", async () => {
    const l = line({ secure: true });
    l.settle();
    l.pd.reader(3).ftDelayMs = 50;
    l.pd.reader(3).ftUpdateMsgMax = 64;
    l.pd.reader(3).ftFinishingMs = 120;
    const file = firmwareImage('3.5.0', Buffer.alloc(500, 0x5a));
    expect(l.firmware).toEqual(['3.4.5']);
    const outcome = await l.run(file);
    expect(outcome).toEqual({ ok: true, version: '3.5.0', previous: '3.4.5' });
    const reader = l.pd.reader(3);
    expect(reader.installed).toHaveLength(1);
    expect(reader.installed[0]!.equals(file)).toBe(true);
    expect(reader.earlyFragments).toBe(0);
    // The first fragment at the secure link's limit (128-byte buffer), the rest at most 64 bytes.
    expect(reader.fragments[0]).toBe(100);
    expect(reader.fragments.slice(1).every((n) => n <= 64)).toBe(true);
    expect(reader.fragments.reduce((a, b) => a + b, 0)).toBe(file.length);
    // Polls between the fragments while the delay ran; a new handshake and osdp_ID after the restart.
    const codes = reader.received;
    const firstFragment = codes.indexOf(CMD.FILETRANSFER);
    const between = codes.slice(firstFragment, codes.indexOf(CMD.FILETRANSFER, firstFragment + 1));
    expect(between).toContain(CMD.POLL);
    l.settle();
    expect(reader.log.filter((e) => e === 'established')).toHaveLength(2);
    expect(l.firmware).toEqual(['3.4.5', '3.5.0']);
    expect(l.progress.map((p) => p.phase)).toContain('finishing');
    expect(l.progress.at(-1)).toMatchObject({ phase: 'installing', sent: file.length, delayMs: 50 });
  });

  it('a bad file is refused with its status and the old firmware kept; a line dropped midway fails with where it broke off', async () => {
    const l = line();
    l.settle();
    const noHeader = await l.run(Buffer.alloc(300, 1));
    expect(noHeader).toEqual({
      ok: false,
      reason: 'the reader does not recognize the file (FtStatusDetail -2: not a firmware for this reader)',
      version: '3.4.5',
    });
    const image = firmwareImage('3.5.0', Buffer.alloc(300, 1));
    const wrongSize = await l.run(image.subarray(0, image.length - 1));
    expect(wrongSize).toMatchObject({ ok: false, reason: 'the reader found the file malformed (FtStatusDetail -3: data unacceptable)' });
    l.pd.reader(3).dropLineAfterBytes = 200;
    const dropped = await l.run(image);
    expect(dropped).toMatchObject({ ok: false, version: '3.4.5' });
    expect((dropped as { reason: string } | null)?.reason).toBe(
      'the transfer broke off at 108 of 315 bytes: the reader at address 3 did not answer command 0x7c',
    );
    l.pd.reader(3).silent = false;
    l.pd.reader(3).dropLineAfterBytes = null;
    l.time.advance(10_000);
    expect(l.pd.reader(3).firmware).toBe('3.4.5');
    expect(l.pd.reader(3).installed).toEqual([]);
    expect(await l.run(image)).toEqual({ ok: true, version: '3.5.0', previous: '3.4.5' });
  });
});
