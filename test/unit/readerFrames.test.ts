import { describe, it, expect } from 'vitest';
import { ReaderFrameParser, type ReaderFrame } from '../../src/readers/readerFrames.js';
import type { CardFormat } from '../../src/core/credentials.js';

// Pure transform, tested with Buffers in the style of node-serialport's parser tests: feed bytes at a given time,
// compare the exact frames that come out.

const buf = (s: string) => Buffer.from(s, 'latin1');
const card = (value: string): ReaderFrame => ({ kind: 'card', value });
const pin = (value: string): ReaderFrame => ({ kind: 'pin', value });
const token = (value: string): ReaderFrame => ({ kind: 'token', value });
const cleared: ReaderFrame = { kind: 'keypad_cleared' };
const noise = (bytes: number, ...reasons: ('binary' | 'too_long' | 'unrecognized')[]): ReaderFrame => ({
  kind: 'noise',
  bytes,
  reasons,
});

const parser = (cardFormat: CardFormat = 'decimal') => new ReaderFrameParser({ cardFormat });

/** Feeds chunks (each [text or bytes, time]) and returns every frame in order. */
function run(p: ReaderFrameParser, chunks: [string | Uint8Array, number][]): ReaderFrame[] {
  const out: ReaderFrame[] = [];
  for (const [chunk, at] of chunks) out.push(...p.feed(typeof chunk === 'string' ? buf(chunk) : chunk, at));
  return out;
}

/** Deterministic pseudo-random bytes (xorshift), so a failure is reproducible. */
function randomBytes(count: number, seed: number, pick: (b: number) => boolean): number[] {
  const out: number[] = [];
  let x = seed;
  while (out.length < count) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const b = (x >>> 0) & 0xff;
    if (pick(b)) out.push(b);
  }
  return out;
}
const isPrintable = (b: number) => b >= 0x20 && b <= 0x7e;

describe('card lines', () => {
  it.each([
    ['CRLF', '4213578\r\n'],
    ['LF only', '4213578\n'],
    ['CR only', '4213578\r'],
  ])('a decimal card line ending in %s is one card', (_name, line) => {
    expect(parser().feed(buf(line), 0)).toEqual([card('4213578')]);
  });

  it('a card split across chunks, down to one byte per chunk, is one card', () => {
    const p = parser();
    const out = run(
      p,
      [...'0004213578\r\n'].map((c, i): [string, number] => [c, i * 5]),
    );
    expect(out).toEqual([card('0004213578')]);
    const q = parser();
    expect(
      run(q, [
        ['42', 0],
        ['135', 10],
        ['78\r', 20],
        ['\n', 30],
      ]),
    ).toEqual([card('4213578')]);
  });

  it('several cards in one chunk come out in order', () => {
    expect(parser().feed(buf('111111\r\n222222\n333333\r'), 0)).toEqual([card('111111'), card('222222'), card('333333')]);
  });

  it('hex cards are cards for a hex reader, upper or lower case', () => {
    expect(parser('hex').feed(buf('04A3B2C1\r\n0a0b0c0d\r\n12345678\r\n'), 0)).toEqual([card('04A3B2C1'), card('0a0b0c0d'), card('12345678')]);
  });

  it('a hex line is not a card for a decimal reader: 16-128 chars is a token, shorter is noise', () => {
    const p = parser('decimal');
    expect(p.feed(buf('04A3B2C1D5E6F708\r\n'), 0)).toEqual([token('04A3B2C1D5E6F708')]);
    expect(p.feed(buf('04A3B2C1\r\n'), 10)).toEqual([]);
    expect(p.idle(500)).toEqual([noise(8, 'unrecognized')]);
  });
});

describe('keypad', () => {
  it('raw keys "1234#" are PIN 1234', () => {
    expect(parser().feed(buf('1234#'), 0)).toEqual([pin('1234')]);
  });

  it('keys sent one per line are collected into one PIN', () => {
    expect(parser().feed(buf('1\r\n2\r\n3\r\n4\r\n#\r\n'), 0)).toEqual([pin('1234')]);
  });

  it('keys one per line, each in its own chunk seconds apart, are one PIN', () => {
    const p = parser();
    expect(
      run(p, [
        ['5\r\n', 0],
        ['6\r\n', 2000],
        ['7\r\n', 4000],
        ['#\r\n', 6000],
      ]),
    ).toEqual([pin('567')]);
  });

  it('raw keys with pauses between chunks are still one PIN', () => {
    expect(
      run(parser(), [
        ['12', 0],
        ['34#', 3000],
      ]),
    ).toEqual([pin('1234')]);
  });

  it('"*" clears what was typed', () => {
    expect(parser().feed(buf('12*34#'), 0)).toEqual([cleared, pin('34')]);
    expect(
      run(parser(), [
        ['98', 0],
        ['*', 1000],
        ['76#', 2000],
      ]),
    ).toEqual([cleared, pin('76')]);
  });

  it('more than 10 s between keys starts the entry over', () => {
    expect(
      run(parser(), [
        ['12', 0],
        ['34#', 10_001],
      ]),
    ).toEqual([pin('34')]);
    expect(
      run(parser(), [
        ['1\r\n2\r\n', 0],
        ['3\r\n4\r\n#\r\n', 10_001],
      ]),
    ).toEqual([pin('34')]);
  });

  it('keys up to 10 s apart still belong together', () => {
    expect(
      run(parser(), [
        ['12', 0],
        ['34#', 10_000],
      ]),
    ).toEqual([pin('1234')]);
  });

  it('"#" more than 10 s after the last key submits nothing', () => {
    expect(
      run(parser(), [
        ['12', 0],
        ['#', 10_001],
      ]),
    ).toEqual([]);
  });

  it('"#" with nothing typed emits nothing', () => {
    expect(parser().feed(buf('#'), 0)).toEqual([]);
    expect(parser().feed(buf('#\r\n'), 0)).toEqual([]);
    expect(
      run(parser(), [
        ['1234#', 0],
        ['#', 100],
      ]),
    ).toEqual([pin('1234')]);
  });

  it('a card line in between discards the keys typed before it', () => {
    expect(
      run(parser(), [
        ['5\r\n6\r\n', 0],
        ['4213578\r\n', 50],
        ['#', 100],
      ]),
    ).toEqual([card('4213578')]);
  });
});

describe('QR tokens', () => {
  const t16 = 'AbCdEfGhIjKlMnOp';

  it('a printable line of 16 to 128 characters without spaces is a token', () => {
    const t128 = `${'x'.repeat(127)}Y`;
    expect(parser().feed(buf(`${t16}\r\n${t128}\r\n`), 0)).toEqual([token(t16), token(t128)]);
    expect(parser().feed(buf('https://door.example/t/9f8e7d6c?x=1\r\n'), 0)).toEqual([token('https://door.example/t/9f8e7d6c?x=1')]);
  });

  it.each([
    ['15 characters', 'AbCdEfGhIjKlMnO'],
    ['129 characters', 'z'.repeat(129)],
    ['a space inside', 'AbCdEfGh IjKlMnOp'],
  ])('a line of %s is noise, not a token', (_name, line) => {
    const p = parser();
    expect(p.feed(buf(`${line}\r\n`), 0)).toEqual([]);
    expect(p.idle(1000)).toEqual([noise(line.length, 'unrecognized')]);
    expect(p.idle(2000)).toEqual([]);
  });

  it("'#' or '*' inside a token leave it one token", () => {
    const t = 'Ab#Cd*Ef#Gh*Ij#Kl';
    expect(parser().feed(buf(`${t}\r\n`), 0)).toEqual([token(t)]);
    expect(parser().feed(buf('x12345678#1234*5678\r\n'), 0)).toEqual([token('x12345678#1234*5678')]);
  });
});

describe('noise', () => {
  // Non-printable bytes (0x00 and 0xff included) with CR and LF scattered through them.
  const burst = [0x00, 0xff];
  randomBytes(400, 0x2545f491, (b) => !isPrintable(b)).forEach((b, i) => {
    burst.push(...(i % 37 === 36 ? [b, 0x0d] : [b]));
  });
  burst.push(0x0a, 0x00, 0xff);
  const lineBytes = burst.filter((b) => b !== 0x0d && b !== 0x0a).length;

  it('the burst really contains line breaks', () => {
    expect(burst.filter((b) => b === 0x0d || b === 0x0a).length).toBeGreaterThan(10);
    expect(burst.length).toBeGreaterThan(400);
  });

  it('a binary burst ending in a newline is one noise frame, emitted with the next card', () => {
    const p = parser();
    const withBreak = [...burst, 0x0d, 0x0a];
    expect(p.feed(Buffer.from(withBreak), 0)).toEqual([]);
    expect(p.feed(buf('4213578\r\n'), 10)).toEqual([noise(lineBytes, 'binary'), card('4213578')]);
  });

  it('a binary burst is one noise frame from idle() after the gap, and the next card still decodes', () => {
    const p = parser();
    expect(p.feed(Buffer.from(burst), 0)).toEqual([]);
    expect(p.idle(300)).toEqual([noise(lineBytes, 'binary')]);
    expect(p.idle(600)).toEqual([]);
    expect(p.feed(buf('4213578\r\n'), 1000)).toEqual([card('4213578')]);
  });

  it('a burst fed byte by byte is still ONE noise frame, never one per byte', () => {
    const p = parser();
    const out: ReaderFrame[] = [];
    burst.forEach((b, i) => {
      out.push(...p.feed(Buffer.from([b]), i));
    });
    out.push(...p.feed(buf('4213578\r\n'), 1000));
    expect(out).toEqual([noise(lineBytes, 'binary'), card('4213578')]);
  });

  it('printable junk inside a burst is reported in the same single frame', () => {
    const p = parser();
    expect(p.feed(buf('\x00\xffab\r\nhello world\r\nzz\x07\r\n'), 0)).toEqual([]);
    expect(p.feed(buf('4213578\r\n'), 50)).toEqual([noise(2 + 2 + 11 + 3, 'binary', 'unrecognized'), card('4213578')]);
  });

  it('a 10,000-byte line without newline is one too_long noise frame, and the next card line decodes', () => {
    const p = parser();
    expect(p.feed(buf('A'.repeat(10_000)), 0)).toEqual([]);
    expect(p.feed(buf('\r\n4213578\r\n'), 10)).toEqual([noise(10_000, 'too_long'), card('4213578')]);

    const q = parser();
    expect(q.feed(Buffer.alloc(10_000, 0x35), 0)).toEqual([]); // even a stuck "5" key
    expect(q.feed(buf('4213578\r\n'), 1000)).toEqual([noise(10_000, 'too_long'), card('4213578')]);
  });

  it('an over-long line split across many chunks is still one frame', () => {
    const p = parser();
    const out: ReaderFrame[] = [];
    for (let i = 0; i < 100; i++) out.push(...p.feed(buf('B'.repeat(100)), i));
    out.push(...p.feed(buf('\n'), 100), ...p.idle(500));
    expect(out).toEqual([noise(10_000, 'too_long')]);
  });

  it('a line of 256 bytes is not over-long; 257 is', () => {
    const p = parser();
    expect(p.feed(buf(`${'C'.repeat(256)}\r\n`), 0)).toEqual([]);
    expect(p.idle(1000)).toEqual([noise(256, 'unrecognized')]);
    expect(p.feed(buf(`${'C'.repeat(257)}\r\n`), 2000)).toEqual([]);
    expect(p.idle(3000)).toEqual([noise(257, 'too_long')]);
  });

  it('half a card frame then a pause: the stale digits never merge into the next card', () => {
    expect(
      run(parser(), [
        ['4213', 0],
        ['4213578\r\n', 1000],
      ]),
    ).toEqual([card('4213578')]);
    const p = parser();
    expect(p.feed(buf('4213'), 0)).toEqual([]);
    expect(p.idle(1000)).toEqual([]);
    expect(p.feed(buf('4213578\r\n'), 1000)).toEqual([card('4213578')]);
  });

  it('a partial non-digit line followed by a pause is noise', () => {
    expect(
      run(parser(), [
        ['AB?', 0],
        ['4213578\r\n', 1000],
      ]),
    ).toEqual([noise(3, 'unrecognized'), card('4213578')]);
    const p = parser();
    expect(p.feed(buf('\x00\x01zz'), 0)).toEqual([]);
    expect(p.idle(1000)).toEqual([noise(4, 'binary')]);
  });

  it('idle() before the line gap leaves a partial line alone', () => {
    const p = parser();
    expect(p.feed(buf('AbCdEfGhIjKl'), 0)).toEqual([]);
    expect(p.idle(100)).toEqual([]);
    expect(p.feed(buf('MnOp\r\n'), 150)).toEqual([token('AbCdEfGhIjKlMnOp')]);
  });
});
