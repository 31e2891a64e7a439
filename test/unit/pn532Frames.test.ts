import { describe, expect, it } from 'vitest';
import { describeFirmware, parseFirmwareVersion, parseTypeATarget } from '../../src/readers/pn532/commands.js';
import { ACK_FRAME, encodeFrame, NACK_FRAME, Pn532FrameParser, TFI_PN532, type Pn532Received } from '../../src/readers/pn532/frames.js';
import { TapFilter } from '../../src/readers/pn532/taps.js';
import { uidToCardNumber } from '../../src/readers/pn532/uid.js';

// Frames written out by hand from UM0701-02 (6.2.1), not produced by the encoder under test.
/** GetFirmwareVersion as the host sends it. */
const GET_FIRMWARE = Buffer.from([0x00, 0x00, 0xff, 0x02, 0xfe, 0xd4, 0x02, 0x2a, 0x00]);
/** Its answer from a PN532 v1.6: IC 0x32, Ver 1, Rev 6, Support 7. */
const FIRMWARE_ANSWER = Buffer.from([0x00, 0x00, 0xff, 0x06, 0xfa, 0xd5, 0x03, 0x32, 0x01, 0x06, 0x07, 0xe8, 0x00]);
const FIRMWARE_FRAME: Pn532Received = { kind: 'info', tfi: TFI_PN532, data: Buffer.from([0x03, 0x32, 0x01, 0x06, 0x07]) };

const feedAll = (parser: Pn532FrameParser, ...chunks: Buffer[]) => chunks.flatMap((c) => parser.feed(c));

describe('PN532 frames', () => {
  it('encodes a command frame: LEN counts TFI, LEN + LCS and TFI + data + DCS sum to zero, postamble 00', () => {
    expect(encodeFrame(Buffer.from([0x02]))).toEqual(GET_FIRMWARE);
    expect(encodeFrame(Buffer.from([0x03, 0x32, 0x01, 0x06, 0x07]), TFI_PN532)).toEqual(FIRMWARE_ANSWER);
    expect(() => encodeFrame(Buffer.alloc(255))).toThrow('at most 254 bytes');
  });

  it('decodes an answer, an ACK, a NACK and the error frame', () => {
    const parser = new Pn532FrameParser();
    expect(parser.feed(ACK_FRAME)).toEqual([{ kind: 'ack' }]);
    expect(parser.feed(FIRMWARE_ANSWER)).toEqual([FIRMWARE_FRAME]);
    expect(parser.feed(NACK_FRAME)).toEqual([{ kind: 'nack' }]);
    expect(parser.feed(Buffer.from([0x00, 0x00, 0xff, 0x01, 0xff, 0x7f, 0x81, 0x00]))).toEqual([{ kind: 'error_frame' }]);
  });

  it('a round trip of every length a normal frame can carry', () => {
    const parser = new Pn532FrameParser();
    for (const n of [0, 1, 2, 100, 253, 254]) {
      const data = Buffer.from(Array.from({ length: n }, (_, i) => (i * 37 + 0xff) & 0xff));
      expect(parser.feed(encodeFrame(data, TFI_PN532))).toEqual([{ kind: 'info', tfi: TFI_PN532, data }]);
    }
  });

  it('an ACK and an answer split at every byte come out the same', () => {
    const stream = Buffer.concat([ACK_FRAME, FIRMWARE_ANSWER]);
    for (let cut = 1; cut < stream.length; cut++) {
      const parser = new Pn532FrameParser();
      expect(feedAll(parser, stream.subarray(0, cut), stream.subarray(cut)), `cut at ${cut}`).toEqual([{ kind: 'ack' }, FIRMWARE_FRAME]);
    }
    const parser = new Pn532FrameParser();
    expect(feedAll(parser, ...[...stream].map((b) => Buffer.from([b])))).toEqual([{ kind: 'ack' }, FIRMWARE_FRAME]);
  });

  it('garbage before a frame (line noise, the echo of a wake-up) is skipped', () => {
    const parser = new Pn532FrameParser();
    expect(parser.feed(Buffer.concat([Buffer.from([0x55, 0x55, 0x00, 0x00, 0x13, 0xff, 0x42]), FIRMWARE_ANSWER]))).toEqual([FIRMWARE_FRAME]);
  });

  it('a bad LCS is named, and the good frame right after it is read', () => {
    const bad = Buffer.from(FIRMWARE_ANSWER);
    bad[4] = 0xfb;
    const parser = new Pn532FrameParser();
    const out = parser.feed(Buffer.concat([bad, FIRMWARE_ANSWER]));
    expect(out).toEqual([{ kind: 'frame_error', error: 'bad_lcs', detail: 'LEN 0x06 with LCS 0xfb' }, FIRMWARE_FRAME]);
  });

  it('a bad DCS is named, and the good frame right after it is read', () => {
    const bad = Buffer.from(FIRMWARE_ANSWER);
    bad[11] = 0xe9;
    const parser = new Pn532FrameParser();
    expect(parser.feed(Buffer.concat([bad, FIRMWARE_ANSWER]))).toEqual([
      { kind: 'frame_error', error: 'bad_dcs', detail: 'DCS 0xe9 does not sum to zero' },
      FIRMWARE_FRAME,
    ]);
  });

  it('a LEN past the bytes that came: named when the line goes quiet, and the frame inside it is not lost', () => {
    // LEN 200 (LCS right), three bytes, then the next answer: the bad header must not swallow it.
    const header = Buffer.from([0x00, 0x00, 0xff, 200, 56, 0xd5, 0x03, 0x32]);
    const parser = new Pn532FrameParser();
    expect(parser.feed(Buffer.concat([header, FIRMWARE_ANSWER]))).toEqual([]);
    expect(parser.idle()).toEqual([
      { kind: 'frame_error', error: 'length_past_buffer', detail: 'LEN 200 runs past the 18 bytes received after its start code' },
      FIRMWARE_FRAME,
    ]);
    expect(parser.idle()).toEqual([]);
  });

  it('a LEN that runs into the next whole frame is a LEN past the buffer, and that frame is read', () => {
    // LEN 12 claims the next frame's bytes; the DCS it lands on does not sum.
    const header = Buffer.from([0x00, 0x00, 0xff, 12, 0xf4, 0xd5]);
    const parser = new Pn532FrameParser();
    const out = parser.feed(Buffer.concat([header, FIRMWARE_ANSWER]));
    expect(out).toEqual([{ kind: 'frame_error', error: 'length_past_buffer', detail: 'LEN 12 runs into the next frame' }, FIRMWARE_FRAME]);
  });

  it('an extended frame is read; one claiming more than the PN532 buffer is named at once', () => {
    const data = Buffer.alloc(300 - 1, 0x11);
    data[0] = 0x41;
    const len = data.length + 1;
    const dcs = (0x100 - ((TFI_PN532 + data.reduce((a, b) => a + b, 0)) & 0xff)) & 0xff;
    const parser = new Pn532FrameParser();
    const tooLong = Buffer.concat([
      Buffer.from([0x00, 0x00, 0xff, 0xff, 0xff, len >> 8, len & 0xff, (0x100 - ((len >> 8) + (len & 0xff))) & 0xff, TFI_PN532]),
      data,
      Buffer.from([dcs, 0x00]),
    ]);
    expect(parser.feed(Buffer.concat([tooLong, FIRMWARE_ANSWER]))).toEqual([
      { kind: 'frame_error', error: 'length_past_buffer', detail: "extended LEN 300 is past the PN532's 265-byte buffer" },
      FIRMWARE_FRAME,
    ]);
    const small = Buffer.from([0x41, 0x00, 0x01]);
    const smallDcs = (0x100 - ((TFI_PN532 + 0x42) & 0xff)) & 0xff;
    expect(parser.feed(Buffer.from([0x00, 0x00, 0xff, 0xff, 0xff, 0x00, 0x04, 0xfc, TFI_PN532, ...small, smallDcs, 0x00]))).toEqual([
      { kind: 'info', tfi: TFI_PN532, data: small },
    ]);
  });
});

describe('PN532 answers', () => {
  it('the firmware version names the module as status shows it', () => {
    const fw = parseFirmwareVersion(Buffer.from([0x32, 0x01, 0x06, 0x07]))!;
    expect(describeFirmware(fw)).toBe('PN532 v1.6');
    expect(parseFirmwareVersion(Buffer.from([0x32]))).toBeNull();
  });

  it('InListPassiveTarget: no target, a 7-byte UID, a malformed answer', () => {
    expect(parseTypeATarget(Buffer.from([0x00]))).toEqual({ uid: null });
    const uid = [0x04, 0x52, 0x8a, 0x2a, 0x3c, 0x61, 0x80];
    expect(parseTypeATarget(Buffer.from([0x01, 0x01, 0x00, 0x44, 0x00, 0x07, ...uid]))).toEqual({ uid: Buffer.from(uid) });
    expect(parseTypeATarget(Buffer.from([0x01, 0x01, 0x00, 0x44, 0x00, 0x07, 0x04]))).toEqual({ malformed: 'NFCIDLength 7 runs past the answer' });
  });
});

describe('a UID as a card number', () => {
  it('4, 7 and 10 bytes, first byte most significant by default, or reversed', () => {
    expect(uidToCardNumber(Buffer.from([0x00, 0x40, 0x4b, 0x4a]), 'msb_first')).toEqual({ number: '4213578' });
    expect(uidToCardNumber(Buffer.from([0x4a, 0x4b, 0x40, 0x00]), 'lsb_first')).toEqual({ number: '4213578' });
    expect(uidToCardNumber(Buffer.from([0x04, 0x52, 0x8a, 0x2a, 0x3c, 0x61, 0x80]), 'msb_first')).toEqual({ number: String(0x04528a2a3c6180) });
    expect(uidToCardNumber(Buffer.alloc(10, 0xff), 'msb_first')).toEqual({ number: ((1n << 80n) - 1n).toString() });
  });

  it('any other length is refused with the reason', () => {
    expect(uidToCardNumber(Buffer.alloc(5), 'msb_first')).toEqual({ refused: 'a UID of 5 bytes (ISO 14443 A UIDs have 4, 7 or 10)' });
  });
});

describe('a card held on the reader is one tap', () => {
  it('the same UID poll after poll is one tap; after releaseMs without a target it is a new one', () => {
    const taps = new TapFilter(500);
    expect(taps.seen('aa', 0)).toBe(true);
    for (let t = 150; t <= 2000; t += 150) expect(taps.seen('aa', t)).toBe(false);
    expect(taps.seen(null, 2150)).toBe(false);
    expect(taps.seen('aa', 2300)).toBe(false); // lifted for 150 ms: the same tap
    expect(taps.seen(null, 2450)).toBe(false);
    expect(taps.seen(null, 2950)).toBe(false);
    expect(taps.seen('aa', 3100)).toBe(true); // gone 650 ms
  });

  it('another UID is a new tap at once', () => {
    const taps = new TapFilter(500);
    expect(taps.seen('aa', 0)).toBe(true);
    expect(taps.seen('bb', 150)).toBe(true);
    expect(taps.seen('aa', 300)).toBe(true);
  });
});
