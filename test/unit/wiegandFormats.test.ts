import { describe, expect, it } from 'vitest';
import { decodeBits, FormatSet } from '../../src/core/wiegand.js';
import {
  BUILTIN_FORMATS,
  ambiguousLengths,
  cardNumber,
  decodeWith,
  encodeWith,
  formatProblems,
  formatsFor,
  presentedCard,
  printedNumberer,
  type WiegandFormatSpec,
} from '../../src/core/wiegandFormats.js';

const format = (name: string): WiegandFormatSpec => BUILTIN_FORMATS.find((f) => f.name === name)!;
const bitsOf = (value: bigint, length: number) => Array.from({ length }, (_, i) => Number((value >> BigInt(length - 1 - i)) & 1n));

/**
 * One example card per built-in format: the frame as Proxmark3's client packs it (RfidResearchGroup/proxmark3,
 * client/src/wiegand_formats.c, Pack_* ported bit for bit on its own 32-bit words, apart from this module). H10301
 * FC 118 / CN 1603 is Proxmark3's own documented example (`lf hid` raw 2006ec0c86: the low 26 bits).
 */
const EXAMPLES: Array<{ name: string; frame: bigint; facility?: bigint; card: bigint }> = [
  { name: 'H10301', frame: 0x2ec0c86n, facility: 118n, card: 1603n },
  { name: 'H10306', frame: 0x6072350bn, facility: 12345n, card: 6789n },
  { name: 'C1k35', frame: 0x40f6164ddn, facility: 123n, card: 45678n },
  { name: 'H10302', frame: 0x15bfb8386an, card: 12345678901n },
  { name: 'H10304', frame: 0x7b164dcn, facility: 123n, card: 45678n },
  { name: 'CasiRusco40', frame: 0x397d323428n, card: 123456789012n },
  { name: 'C1k48', frame: 0xd2d687e99763n, facility: 1234567n, card: 7654321n },
];

describe('built-in formats: published example cards', () => {
  for (const example of EXAMPLES) {
    const spec = format(example.name);
    it(`${example.name}: decodes its example, encodes it back, and refuses every single-bit error when it has parity`, () => {
      const bits = bitsOf(example.frame, spec.bits);
      expect(decodeWith(spec, bits)).toMatchObject({
        format: example.name,
        card: example.card,
        ...(example.facility !== undefined ? { facility: example.facility } : {}),
      });
      expect(encodeWith(spec, { ...(example.facility !== undefined ? { facility: example.facility } : {}), card: example.card })).toEqual(bits);
      const flipped = bits.map((_, i) =>
        decodeWith(
          spec,
          bits.map((b, k) => (k === i ? 1 - b : b)),
        ),
      );
      if (spec.parity.length > 0) expect(flipped.every((d) => d === null)).toBe(true);
      // No parity (Casi-Rusco 40): a bit error is a different card, nothing on the wire can tell.
      else expect(flipped.every((d) => d !== null)).toBe(true);
    });
  }

  it('every built-in format has an example here', () => {
    expect(BUILTIN_FORMATS.filter((f) => !f.raw).map((f) => f.name)).toEqual(
      EXAMPLES.map((e) => e.name).sort((a, b) => BUILTIN_FORMATS.findIndex((f) => f.name === a) - BUILTIN_FORMATS.findIndex((f) => f.name === b)),
    );
    for (const f of BUILTIN_FORMATS) expect(formatProblems(f), f.name).toEqual([]);
  });

  it('raw32 and raw56 have no parity: whatever arrives is the UID, in the order sent', () => {
    const uid = 0x04a1b2c3n;
    expect(decodeWith(format('raw32'), bitsOf(uid, 32))).toMatchObject({ card: uid, data: uid });
    expect(decodeWith(format('raw32'), bitsOf(uid ^ 1n, 32))).toMatchObject({ card: uid ^ 1n });
    const seven = 0x04_11_22_33_44_55_66n;
    expect(decodeWith(format('raw56'), bitsOf(seven, 56))).toMatchObject({ card: seven });
  });

  it('a raw format with lsb_first reverses the UID bytes (readers that send the UID reversed)', () => {
    const reversed: WiegandFormatSpec = { name: 'uid_reversed', bits: 32, parity: [], fields: { card: [0, 31] }, raw: { byteOrder: 'lsb_first' } };
    expect(decodeWith(reversed, bitsOf(0xc3b2a104n, 32))).toMatchObject({ card: 0x04a1b2c3n });
    expect(encodeWith(reversed, { card: 0x04a1b2c3n })).toEqual(bitsOf(0xc3b2a104n, 32));
  });
});

describe('numbering', () => {
  it('data, facility_card and printed of one card; printed is the card alone without a facility', () => {
    const c1k35 = decodeWith(format('C1k35'), bitsOf(0x40f6164ddn, 35))!;
    expect(cardNumber(c1k35, 'data')).toBe(String(123n * 2n ** 20n + 45678n));
    expect(cardNumber(c1k35, 'facility_card')).toBe(String(123 * 65536 + 45678));
    expect(cardNumber(c1k35, 'printed')).toBe('123:45678');
    expect(presentedCard(c1k35, 'data')).toEqual({ value: String(123n * 2n ** 20n + 45678n), printed: '123:45678' });
    expect(presentedCard(c1k35, 'printed')).toEqual({ value: '123:45678' });
    const h10302 = decodeWith(format('H10302'), bitsOf(0x15bfb8386an, 37))!;
    expect(presentedCard(h10302, 'printed')).toEqual({ value: '12345678901' });
    expect(presentedCard(h10302, 'data')).toEqual({ value: '12345678901' });
  });

  it('a printed card (facility:card) reads as the number a frame of each format with a facility gives, without a frame', () => {
    const withFacility = BUILTIN_FORMATS.filter((f) => f.fields.facility);
    for (const numbering of ['data', 'facility_card'] as const) {
      for (const f of withFacility) {
        const read = cardNumber(decodeWith(f, encodeWith(f, { facility: 123n, card: 45678n }))!, numbering);
        expect(printedNumberer([f], numbering)(123n, 45678n), `${f.name} ${numbering}`).toEqual([read]);
      }
    }
    // auto under data: H10301 and H10306 give the same number, the others their own; no number for a card too wide.
    expect(printedNumberer(BUILTIN_FORMATS, 'data')(123n, 45678n)).toEqual([
      String(123 * 65536 + 45678),
      String(123n * 2n ** 20n + 45678n),
      String(123n * 2n ** 19n + 45678n),
      String(123n * 2n ** 23n + 45678n),
    ]);
    expect(printedNumberer([format('H10301')], 'data')(256n, 1n)).toEqual([]);
    // printed: the read is the printed form itself; a format with an issue level is left out.
    expect(printedNumberer(BUILTIN_FORMATS, 'printed')(123n, 45678n)).toEqual([]);
    const issued: WiegandFormatSpec = { name: 'Issued', bits: 30, parity: [], fields: { facility: [0, 7], card: [8, 23], issue: [24, 29] } };
    expect(printedNumberer([issued], 'data')(1n, 2n)).toEqual([]);
  });
});

describe('choosing formats', () => {
  it('auto: a length two formats share (37: H10302 and H10304) is refused as ambiguous, never guessed', () => {
    const auto = new FormatSet(formatsFor('auto', []));
    expect(ambiguousLengths(formatsFor('auto', []))).toEqual(new Map([[37, ['H10302', 'H10304']]]));
    const frame = bitsOf(0x7b164dcn, 37);
    expect(decodeBits(frame, auto)).toMatchObject({ kind: 'dropped', bits: 37, reason: 'ambiguous_format', candidates: ['H10302', 'H10304'] });
    expect(decodeBits(frame, new FormatSet(formatsFor(['H10304'], [])))).toMatchObject({ kind: 'card', format: 'H10304', facility: 123n });
    // A 37-bit frame that no candidate takes is a parity error, not an ambiguity.
    expect(
      decodeBits(
        frame.map((b, i) => (i === 5 ? 1 - b : b)),
        auto,
      ),
    ).toMatchObject({ reason: 'parity' });
  });

  it("a site's format joins auto; one of a built-in's length makes that length ambiguous", () => {
    const site: WiegandFormatSpec = {
      name: 'Acme26',
      bits: 26,
      parity: [{ bit: 25, kind: 'odd', covers: [[0, 24]] }],
      fields: { facility: [0, 9], card: [10, 24] },
    };
    const frame = encodeWith(site, { facility: 700n, card: 12345n });
    expect(decodeBits(frame, new FormatSet(formatsFor(['Acme26'], [site])))).toMatchObject({ kind: 'card', format: 'Acme26', facility: 700n, card: 12345n });
    expect(ambiguousLengths(formatsFor('auto', [site])).get(26)).toEqual(['H10301', 'Acme26']);
    const h10301 = encodeWith(format('H10301'), { facility: 1n, card: 2n });
    expect(decodeBits(h10301, new FormatSet(formatsFor('auto', [site])))).toMatchObject({
      kind: 'dropped',
      reason: expect.stringMatching(/ambiguous_format|parity/),
    });
  });

  it('a frame longer than every format of the set is bit_count', () => {
    const set = new FormatSet(formatsFor(['H10301'], []));
    expect(set.maxBits).toBe(27);
    expect(decodeBits(bitsOf(0n, 35), set)).toEqual({ kind: 'dropped', bits: 35, reason: 'bit_count' });
  });
});

describe('bad formats', () => {
  const base: WiegandFormatSpec = { name: 'X', bits: 26, parity: [{ bit: 0, kind: 'even', covers: [[1, 12]] }], fields: { facility: [1, 8], card: [9, 24] } };
  it('ranges past the length, overlapping fields, a field over a parity bit, a parity bit in its own range', () => {
    expect(formatProblems({ ...base, fields: { card: [9, 26] } })).toEqual([
      { path: ['fields', 'card'], message: "[9, 26] runs past the format's 26 bits (0-25)" },
    ]);
    expect(formatProblems({ ...base, parity: [{ bit: 0, kind: 'even', covers: [[1, 30]] }] })).toEqual([
      { path: ['parity', 0, 'covers', 0], message: "[1, 30] runs past the format's 26 bits (0-25)" },
    ]);
    expect(formatProblems({ ...base, fields: { facility: [1, 10], card: [9, 24] } })).toEqual([
      { path: ['fields', 'card'], message: 'overlaps fields.facility' },
    ]);
    expect(formatProblems({ ...base, fields: { facility: [0, 8], card: [9, 24] } })).toEqual([
      { path: ['fields', 'facility'], message: 'overlaps parity bit 0' },
    ]);
    expect(formatProblems({ ...base, parity: [{ bit: 5, kind: 'even', covers: [[1, 12]] }], fields: { card: [13, 24] } })).toEqual([
      { path: ['parity', 0, 'covers', 0], message: 'covers its own parity bit 5' },
    ]);
  });
});
