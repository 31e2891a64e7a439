import { describe, expect, it } from 'vitest';
import { Rdm6300FrameParser, rdm6300CardNumber } from '../../src/readers/serial/rdm6300Frames.js';
import type { ReaderFrame } from '../../src/readers/readerFrames.js';

// Pure framing, tested with plain Buffers: bytes in at a given time, frames out.

/** A frame as the module sends it, built from the format's description (STX, 10 hex ID, 2 hex XOR, ETX). */
function frame(idHex: string, options: { checksum?: number; lower?: boolean } = {}): Buffer {
  const bytes = Buffer.from(idHex, 'hex');
  const xor = options.checksum ?? bytes.reduce((a, b) => a ^ b, 0);
  const text = `${idHex}${xor.toString(16).padStart(2, '0')}`;
  return Buffer.concat([Buffer.from([0x02]), Buffer.from(options.lower ? text.toLowerCase() : text.toUpperCase(), 'latin1'), Buffer.from([0x03])]);
}

const ALICE = '1A00404B4A'; // version byte 0x1A, card 0x00404B4A = 4213578
const card = (value: string): ReaderFrame => ({ kind: 'card', value });

function run(parser: Rdm6300FrameParser, chunks: Array<[Buffer, number]>): ReaderFrame[] {
  return chunks.flatMap(([chunk, at]) => parser.feed(chunk, at));
}

describe('RDM6300 frames', () => {
  it('a frame is a card: the last 32 bits as decimal by default, the whole 40-bit ID on request', () => {
    expect(run(new Rdm6300FrameParser({ numbering: 'last32' }), [[frame(ALICE), 0]])).toEqual([card('4213578')]);
    expect(run(new Rdm6300FrameParser({ numbering: 'whole' }), [[frame(ALICE), 0]])).toEqual([card(String(0x1a00404b4an))]);
    expect(rdm6300CardNumber(0xff_ffff_ffffn, 'last32')).toBe('4294967295');
  });

  it('lower-case hex digits are the same card', () => {
    expect(run(new Rdm6300FrameParser({ numbering: 'last32' }), [[frame(ALICE, { lower: true }), 0]])).toEqual([card('4213578')]);
  });

  it('a card held in the field is one decision: repeats are ignored until it has been away for releaseMs', () => {
    const parser = new Rdm6300FrameParser({ numbering: 'last32', releaseMs: 500 });
    const repeats = Array.from({ length: 20 }, (_, i): [Buffer, number] => [frame(ALICE), i * 60]);
    expect(run(parser, repeats)).toEqual([card('4213578')]);
    // Taken away (nothing for 1.2 s) and presented again: a new decision.
    expect(run(parser, [[frame(ALICE), 19 * 60 + 1200]])).toEqual([card('4213578')]);
  });

  it('another card while one is held is decided at once', () => {
    const parser = new Rdm6300FrameParser({ numbering: 'last32' });
    expect(
      run(parser, [
        [frame(ALICE), 0],
        [frame('1A00404B4B'), 100],
      ]),
    ).toEqual([card('4213578'), card('4213579')]);
  });

  it('a frame split over reads, byte by byte, decodes the same', () => {
    const parser = new Rdm6300FrameParser({ numbering: 'last32' });
    const bytes = frame(ALICE);
    expect(
      run(
        parser,
        [...bytes].map((b, i): [Buffer, number] => [Buffer.from([b]), i]),
      ),
    ).toEqual([card('4213578')]);
  });

  it('a bad checksum is noise, never a card; the next good frame still is', () => {
    const parser = new Rdm6300FrameParser({ numbering: 'last32' });
    expect(
      run(parser, [
        [frame(ALICE, { checksum: 0x00 }), 0],
        [frame(ALICE), 100],
      ]),
    ).toEqual([{ kind: 'noise', bytes: 14, reasons: ['checksum'] }, card('4213578')]);
  });

  it('garbage between frames, a frame cut short by the next, non-hex digits and a missing ETX are noise', () => {
    const parser = new Rdm6300FrameParser({ numbering: 'last32' });
    const cut = frame(ALICE).subarray(0, 7);
    const notHex = Buffer.from(frame(ALICE));
    notHex[4] = 0x5a; // 'Z'
    const noEtx = Buffer.from(frame(ALICE));
    noEtx[13] = 0x0d;
    const frames = run(parser, [
      [Buffer.from([0xff, 0x00, 0x41]), 0],
      [cut, 10],
      [notHex, 20],
      [noEtx, 30],
    ]);
    expect(frames).toEqual([]);
    expect(parser.idle(2000)).toEqual([{ kind: 'noise', bytes: 3 + 7 + 14 + 14, reasons: ['binary', 'unrecognized'] }]);
    expect(run(parser, [[frame(ALICE), 3000]])).toEqual([card('4213578')]);
  });

  it('a partial frame when the line goes quiet is noise at idle, not glued to the next frame', () => {
    const parser = new Rdm6300FrameParser({ numbering: 'last32' });
    expect(run(parser, [[frame(ALICE).subarray(0, 9), 0]])).toEqual([]);
    expect(parser.idle(300)).toEqual([{ kind: 'noise', bytes: 9, reasons: ['unrecognized'] }]);
    expect(run(parser, [[frame(ALICE), 400]])).toEqual([card('4213578')]);
  });
});
