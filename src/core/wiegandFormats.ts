/**
 * Wiegand card formats as data (issue 27 item 1), pure: a format is its length, its parity bits (each even or odd
 * over the bit ranges it covers) and its fields (facility, card, issue level). Bit 0 is the first bit on the wire.
 * One generic decode and encode serve every format, built in or the site's own (`wiegand.formats`, docs/hardware.md
 * "Card formats").
 *
 * The built-in layouts follow the Proxmark3 client's wiegand_formats.c (RfidResearchGroup/proxmark3, whose table
 * cites HID's format descriptions and cardinfo.barkweb.com.au); docs/hardware.md lists each with its source.
 */

/** Inclusive bit positions, first to last, counted from the first bit on the wire. */
export type BitRange = readonly [from: number, to: number];

export interface ParityBit {
  bit: number;
  kind: 'even' | 'odd';
  /** The bits it covers (never itself); may include other parity bits, which are then computed first. */
  covers: readonly BitRange[];
}

export interface FormatFields {
  facility?: BitRange;
  card: BitRange;
  issue?: BitRange;
}

export interface WiegandFormatSpec {
  name: string;
  bits: number;
  parity: readonly ParityBit[];
  fields: FormatFields;
  /**
   * A raw UID frame (no parity; card = the whole frame): `msb_first` takes the bytes in the order sent,
   * `lsb_first` reverses the byte order, for readers that send the UID reversed.
   */
  raw?: { byteOrder: 'msb_first' | 'lsb_first' };
}

/** A card frame decoded by its format: every field as a bigint, and the data bits as one integer. */
export interface DecodedCard {
  format: string;
  bits: number;
  /** The data bits as one integer: every bit from the first field to the last, parity bits left out (a raw frame: its card). */
  data: bigint;
  facility?: bigint;
  card: bigint;
  issue?: bigint;
}

const pairs = (from: number, to: number, step: number): BitRange[] => {
  const out: BitRange[] = [];
  for (let i = from; i <= to; i += step) out.push([i, i + 1]);
  return out;
};

/** The formats every site has (docs/hardware.md, "Card formats"), in the order `auto` lists them. */
export const BUILTIN_FORMATS: readonly WiegandFormatSpec[] = [
  // HID H10301: even parity over 1-12, odd over 13-24; facility 8 bits, card 16.
  {
    name: 'H10301',
    bits: 26,
    parity: [
      { bit: 0, kind: 'even', covers: [[1, 12]] },
      { bit: 25, kind: 'odd', covers: [[13, 24]] },
    ],
    fields: { facility: [1, 8], card: [9, 24] },
  },
  // HID H10306 34-bit: facility 16, card 16; even over 1-16, odd over 17-32.
  {
    name: 'H10306',
    bits: 34,
    parity: [
      { bit: 0, kind: 'even', covers: [[1, 16]] },
      { bit: 33, kind: 'odd', covers: [[17, 32]] },
    ],
    fields: { facility: [1, 16], card: [17, 32] },
  },
  // HID Corporate 1000 35-bit: company 12, card 20; three parity bits, two over every third pair, one over all.
  {
    name: 'C1k35',
    bits: 35,
    parity: [
      { bit: 1, kind: 'even', covers: pairs(2, 32, 3) },
      { bit: 34, kind: 'odd', covers: pairs(1, 31, 3) },
      { bit: 0, kind: 'odd', covers: [[1, 34]] },
    ],
    fields: { facility: [2, 13], card: [14, 33] },
  },
  // HID H10302 37-bit: card only (35 bits); even over 1-18, odd over 18-35.
  {
    name: 'H10302',
    bits: 37,
    parity: [
      { bit: 0, kind: 'even', covers: [[1, 18]] },
      { bit: 36, kind: 'odd', covers: [[18, 35]] },
    ],
    fields: { card: [1, 35] },
  },
  // HID H10304 37-bit: facility 16, card 19; parity as H10302.
  {
    name: 'H10304',
    bits: 37,
    parity: [
      { bit: 0, kind: 'even', covers: [[1, 18]] },
      { bit: 36, kind: 'odd', covers: [[18, 35]] },
    ],
    fields: { facility: [1, 16], card: [17, 35] },
  },
  // Casi-Rusco 40-bit: a 38-bit card number between two unused bits, no parity.
  { name: 'CasiRusco40', bits: 40, parity: [], fields: { card: [1, 38] } },
  // HID Corporate 1000 48-bit: company 22, card 23; parity as the 35-bit one.
  {
    name: 'C1k48',
    bits: 48,
    parity: [
      { bit: 1, kind: 'even', covers: pairs(3, 45, 3) },
      { bit: 47, kind: 'odd', covers: pairs(2, 44, 3) },
      { bit: 0, kind: 'odd', covers: [[1, 47]] },
    ],
    fields: { facility: [2, 23], card: [24, 46] },
  },
  // A MIFARE reader's UID as it sends it: 4 or 7 bytes, no parity.
  { name: 'raw32', bits: 32, parity: [], fields: { card: [0, 31] }, raw: { byteOrder: 'msb_first' } },
  { name: 'raw56', bits: 56, parity: [], fields: { card: [0, 55] }, raw: { byteOrder: 'msb_first' } },
];

/** The numbers a reader's `format:` took before formats were data: each is the layout that code decoded. */
export const FORMAT_ALIASES: Readonly<Record<26 | 34 | 37, string>> = { 26: 'H10301', 34: 'H10306', 37: 'H10304' };

/** The longest frame any format may have (`wiegand.formats[].bits`). */
export const MAX_FORMAT_BITS = 64;

function rangeBits(ranges: readonly BitRange[]): number[] {
  return ranges.flatMap(([from, to]) => Array.from({ length: to - from + 1 }, (_, i) => from + i));
}

function field(bits: readonly number[], [from, to]: BitRange): bigint {
  let v = 0n;
  for (let i = from; i <= to; i++) v = (v << 1n) | BigInt(bits[i]!);
  return v;
}

/** Whether the bit at `p.bit` has the parity it claims over its ranges. */
function parityHolds(bits: readonly number[], p: ParityBit): boolean {
  const ones = rangeBits(p.covers).reduce((n, i) => n + bits[i]!, bits[p.bit]!);
  return ones % 2 === (p.kind === 'even' ? 0 : 1);
}

function reverseBytes(value: bigint, bits: number): bigint {
  let out = 0n;
  for (let i = 0; i < bits / 8; i++) out = (out << 8n) | ((value >> BigInt(8 * i)) & 0xffn);
  return out;
}

function dataBits(format: WiegandFormatSpec): number[] {
  const ranges = Object.values(format.fields) as BitRange[];
  const first = Math.min(...ranges.map((r) => r[0]));
  const last = Math.max(...ranges.map((r) => r[1]));
  const parity = new Set(format.parity.map((p) => p.bit));
  return Array.from({ length: last - first + 1 }, (_, i) => first + i).filter((i) => !parity.has(i));
}

/** A frame of `format.bits` bits decoded by `format`; null when a parity bit is wrong. */
export function decodeWith(format: WiegandFormatSpec, bits: readonly number[]): DecodedCard | null {
  if (bits.length !== format.bits) throw new RangeError(`${format.name} has ${format.bits} bits, not ${bits.length}`);
  if (!format.parity.every((p) => parityHolds(bits, p))) return null;
  const { facility, card, issue } = format.fields;
  let cardValue = field(bits, card);
  if (format.raw?.byteOrder === 'lsb_first') cardValue = reverseBytes(cardValue, card[1] - card[0] + 1);
  const data = format.raw ? cardValue : dataBits(format).reduce((v, i) => (v << 1n) | BigInt(bits[i]!), 0n);
  return {
    format: format.name,
    bits: format.bits,
    data,
    ...(facility ? { facility: field(bits, facility) } : {}),
    card: cardValue,
    ...(issue ? { issue: field(bits, issue) } : {}),
  };
}

/** Parity bits in an order where each is computed after every parity bit it covers. */
function parityOrder(format: WiegandFormatSpec): ParityBit[] {
  const pending = [...format.parity];
  const done = new Set<number>();
  const order: ParityBit[] = [];
  while (pending.length > 0) {
    const i = pending.findIndex((p) => rangeBits(p.covers).every((b) => done.has(b) || !pending.some((q) => q.bit === b)));
    if (i < 0) throw new RangeError(`${format.name}: parity bits cover each other`);
    const [p] = pending.splice(i, 1);
    order.push(p!);
    done.add(p!.bit);
  }
  return order;
}

/** The bits a reader sends for these field values in `format` (parity added): for simulators, tests and the bench. */
export function encodeWith(format: WiegandFormatSpec, values: { facility?: bigint; card: bigint; issue?: bigint }): number[] {
  const bits = new Array<number>(format.bits).fill(0);
  for (const key of ['facility', 'card', 'issue'] as const) {
    const range = format.fields[key];
    let value = values[key] ?? 0n;
    if (!range) {
      if (value !== 0n) throw new RangeError(`${format.name} has no ${key} field`);
      continue;
    }
    const width = range[1] - range[0] + 1;
    if (value < 0n || value >= 1n << BigInt(width)) throw new RangeError(`${key} ${value} does not fit in ${format.name}'s ${width} bits`);
    if (key === 'card' && format.raw?.byteOrder === 'lsb_first') value = reverseBytes(value, width);
    for (let i = 0; i < width; i++) bits[range[0] + i] = Number((value >> BigInt(width - 1 - i)) & 1n);
  }
  for (const p of parityOrder(format)) {
    bits[p.bit] = 0;
    if (!parityHolds(bits, p)) bits[p.bit] = 1;
  }
  return bits;
}

/** What is wrong with a format, each problem with the key (under the format) that names it. */
export function formatProblems(format: WiegandFormatSpec): Array<{ path: Array<string | number>; message: string }> {
  const problems: Array<{ path: Array<string | number>; message: string }> = [];
  const { bits } = format;
  const past = (range: BitRange) => range[0] > range[1] || range[1] >= bits;
  const parityBits = new Map<number, number>();
  format.parity.forEach((p, i) => {
    if (p.bit >= bits) problems.push({ path: ['parity', i, 'bit'], message: `bit ${p.bit} is past the format's ${bits} bits (0-${bits - 1})` });
    if (parityBits.has(p.bit)) problems.push({ path: ['parity', i, 'bit'], message: `bit ${p.bit} is already parity[${parityBits.get(p.bit)}]` });
    else parityBits.set(p.bit, i);
    p.covers.forEach((range, k) => {
      if (past(range))
        problems.push({ path: ['parity', i, 'covers', k], message: `[${range[0]}, ${range[1]}] runs past the format's ${bits} bits (0-${bits - 1})` });
      else if (p.bit >= range[0] && p.bit <= range[1]) problems.push({ path: ['parity', i, 'covers', k], message: `covers its own parity bit ${p.bit}` });
    });
  });
  const entries = (Object.entries(format.fields) as Array<[keyof FormatFields, BitRange]>).filter(([, r]) => r !== undefined);
  entries.forEach(([key, range], n) => {
    if (past(range)) {
      problems.push({ path: ['fields', key], message: `[${range[0]}, ${range[1]}] runs past the format's ${bits} bits (0-${bits - 1})` });
      return;
    }
    const parity = [...parityBits.keys()].find((b) => b >= range[0] && b <= range[1]);
    if (parity !== undefined) problems.push({ path: ['fields', key], message: `overlaps parity bit ${parity}` });
    for (const [other, r] of entries.slice(0, n)) {
      if (!past(r) && range[0] <= r[1] && r[0] <= range[1]) problems.push({ path: ['fields', key], message: `overlaps fields.${other}` });
    }
  });
  if (format.raw && format.parity.length > 0) problems.push({ path: ['parity'], message: 'a raw format has no parity' });
  if (format.raw?.byteOrder === 'lsb_first' && (format.fields.card[1] - format.fields.card[0] + 1) % 8 !== 0) {
    problems.push({ path: ['raw', 'byteOrder'], message: 'lsb_first reverses whole bytes: the card field must be a multiple of 8 bits' });
  }
  if (problems.length === 0) {
    try {
      parityOrder(format);
    } catch {
      problems.push({ path: ['parity'], message: 'parity bits cover each other: one of them must be computed first' });
    }
  }
  return problems;
}

/** A reader's choice, `format:` in its config: `auto` or the names it takes. */
export type FormatChoice = 'auto' | readonly string[];

/** The formats a reader takes: the built-ins and the site's for `auto`, else those named. Names are checked by config. */
export function formatsFor(choice: FormatChoice, site: readonly WiegandFormatSpec[]): WiegandFormatSpec[] {
  const all = [...BUILTIN_FORMATS, ...site];
  if (choice === 'auto') return all;
  return choice.map((name) => all.find((f) => f.name === name)).filter((f): f is WiegandFormatSpec => f !== undefined);
}

/** Each frame length that more than one of `formats` has, with their names: frames of it are refused as ambiguous. */
export function ambiguousLengths(formats: readonly WiegandFormatSpec[]): Map<number, string[]> {
  const byLength = new Map<number, string[]>();
  for (const f of formats) byLength.set(f.bits, [...(byLength.get(f.bits) ?? []), f.name]);
  return new Map([...byLength].filter(([, names]) => names.length > 1));
}

/** How a card becomes the number compared with the directory (`numbering:` on Wiegand and OSDP readers). */
export type WiegandNumbering = 'data' | 'facility_card' | 'printed';

/** `facility:card` in decimal, or the card alone for a format without a facility. */
function printedNumber(card: Pick<DecodedCard, 'facility' | 'card'>): string {
  return card.facility === undefined ? card.card.toString(10) : `${card.facility}:${card.card}`;
}

/** The decimal card number in a numbering: the data bits, facility * 65536 + card, or as printed. */
export function cardNumber(card: DecodedCard, numbering: WiegandNumbering): string {
  if (numbering === 'data') return card.data.toString(10);
  if (numbering === 'facility_card') return ((card.facility ?? 0n) * 65536n + card.card).toString(10);
  return printedNumber(card);
}

/**
 * A card as a reader hands it on: its number in the reader's numbering, and, when its format has a facility and
 * the numbering is not already `printed`, its printed form too (the door tries it when the number matches nobody).
 */
export function presentedCard(card: DecodedCard, numbering: WiegandNumbering): { value: string; printed?: string } {
  const value = cardNumber(card, numbering);
  return card.facility === undefined || numbering === 'printed' ? { value } : { value, printed: printedNumber(card) };
}

/**
 * The numbers a card printed `facility:card` reads as on a reader taking `formats` under `numbering`: one per format
 * with a facility field both values fit in (the bits outside the fields zero), distinct, in the formats' order. A
 * format with an issue level is left out (the printed form does not say it), and so is every format under
 * `printed` (the read is the printed form itself). The layouts are worked out once: the directory scan asks the
 * returned function for every printed entry.
 */
export function printedNumberer(formats: readonly WiegandFormatSpec[], numbering: WiegandNumbering): (facility: bigint, card: bigint) => string[] {
  const width = (r: BitRange) => BigInt(r[1] - r[0] + 1);
  const layouts = (numbering === 'printed' ? [] : formats).flatMap((format) => {
    const { facility: fRange, card: cRange, issue } = format.fields;
    if (!fRange || issue || format.raw) return [];
    // data: a field's weight is the count of data bits (parity left out) after its last bit.
    const data = dataBits(format);
    const after = (r: BitRange) => BigInt(data.filter((b) => b > r[1]).length);
    const [fShift, cShift] = numbering === 'facility_card' ? [16n, 0n] : [after(fRange), after(cRange)];
    return [{ fMax: 1n << width(fRange), cMax: 1n << width(cRange), fShift, cShift }];
  });
  return (facility, card) => {
    const out = new Set<string>();
    for (const l of layouts) {
      // facility_card is facility * 65536 + card: a shift of 16 with the card added (the config keeps cards to 16 bits).
      if (facility < l.fMax && card < l.cMax) out.add(((facility << l.fShift) + (card << l.cShift)).toString(10));
    }
    return [...out];
  };
}
