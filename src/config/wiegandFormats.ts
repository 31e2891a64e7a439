import * as z from 'zod';
import { wholeNumber } from '../api/wholeNumber.js';
import {
  BUILTIN_FORMATS,
  FORMAT_ALIASES,
  MAX_FORMAT_BITS,
  ambiguousLengths,
  formatProblems,
  formatsFor,
  type FormatChoice,
  type WiegandFormatSpec,
} from '../core/wiegandFormats.js';
import { readersOf } from './doorReaders.js';

/**
 * The site's Wiegand card formats (`wiegand.formats`) and each reader's choice among them (`format:` on Wiegand and
 * OSDP readers); docs/hardware.md, "Card formats".
 */

const bit = wholeNumber().min(0);
const bitRange = z.tuple([bit, bit]);

const formatSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,31}$/, 'a name of letters, digits, _ and - (up to 32), starting with a letter'),
  bits: wholeNumber().min(1).max(MAX_FORMAT_BITS),
  parity: z.array(z.strictObject({ bit, kind: z.enum(['even', 'odd']), covers: z.array(bitRange).min(1) })).default([]),
  fields: z.strictObject({ facility: bitRange.optional(), card: bitRange, issue: bitRange.optional() }),
  raw: z.strictObject({ byteOrder: z.enum(['msb_first', 'lsb_first']).default('msb_first') }).optional(),
});

export const wiegandSchema = z
  .strictObject({ formats: z.array(formatSchema).default([]) })
  .superRefine((section, ctx) => {
    const builtin = new Set(BUILTIN_FORMATS.map((f) => f.name));
    const names = new Map<string, number>();
    section.formats.forEach((format, i) => {
      const at = ['formats', i];
      if (builtin.has(format.name))
        ctx.addIssue({ code: 'custom', path: [...at, 'name'], message: `${format.name} is a built-in format: choose another name` });
      else if (names.has(format.name))
        ctx.addIssue({ code: 'custom', path: [...at, 'name'], message: `same name as wiegand.formats[${names.get(format.name)}]` });
      else names.set(format.name, i);
      for (const p of formatProblems(format as WiegandFormatSpec)) ctx.addIssue({ code: 'custom', path: [...at, ...p.path], message: p.message });
    });
  })
  .prefault({});

/** `format:` as a reader gives it: auto, a format's name or a list of names; 26, 34, 37 stand for the formats they decoded. */
export const readerFormatSchema = z
  .unknown()
  // What the transform below takes, for the JSON Schema (schema/config.schema.json).
  .meta({
    description: 'auto (the default), a format name (H10301, C1k35, ...), 26, 34 or 37, or a list of names',
    anyOf: [{ type: 'string', minLength: 1 }, { enum: [26, 34, 37] }, { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 }],
  })
  .optional()
  .transform((f, ctx): FormatChoice => {
    if (f === undefined || f === 'auto') return 'auto';
    if (f === 26 || f === 34 || f === 37) return [FORMAT_ALIASES[f]];
    if (typeof f === 'string' && f !== '') return [f];
    if (Array.isArray(f) && f.length > 0 && f.every((name) => typeof name === 'string' && name !== '')) return f as string[];
    ctx.addIssue({ code: 'custom', message: 'expected auto, a format name (H10301, C1k35, ...) or a list of names' });
    return z.NEVER;
  });

type Section = z.output<typeof wiegandSchema>;
interface ReaderLike {
  type: string;
  format?: unknown;
  numbering?: unknown;
}
interface DoorLike {
  reader?: ReaderLike | undefined;
  readers?: { entry?: ReaderLike | undefined; exit?: ReaderLike | undefined } | undefined;
}

/** The site's formats as the readers take them. */
export function siteFormats(section: Section | undefined): WiegandFormatSpec[] {
  return (section?.formats ?? []) as WiegandFormatSpec[];
}

const choiceOf = (reader: ReaderLike): FormatChoice | null =>
  (reader.type === 'wiegand' || reader.type === 'osdp') && (reader.format === 'auto' || Array.isArray(reader.format)) ? (reader.format as FormatChoice) : null;

/**
 * The checks between readers and formats: a name no format has, and a 4- or 8-bit format on a Wiegand reader
 * (its keypad frames have those lengths).
 */
export function refineReaderFormats(config: { wiegand?: Section; doors: readonly DoorLike[] }, ctx: z.RefinementCtx): void {
  const site = siteFormats(config.wiegand);
  const known = new Set([...BUILTIN_FORMATS, ...site].map((f) => f.name));
  config.doors.forEach((door, i) => {
    for (const { key, reader } of readersOf(door)) {
      const choice = choiceOf(reader);
      if (choice === null) continue;
      const path = ['doors', i, ...key, 'format'];
      const unknown = choice === 'auto' ? [] : choice.filter((name) => !known.has(name));
      if (unknown.length > 0) {
        ctx.addIssue({
          code: 'custom',
          path,
          message: `no format named ${unknown.join(', ')} (built in: ${BUILTIN_FORMATS.map((f) => f.name).join(', ')}; or define it under wiegand.formats)`,
        });
        continue;
      }
      const formats = formatsFor(choice, site);
      const wideCard = formats.find((f) => f.fields.card[1] - f.fields.card[0] + 1 > 16);
      if (reader.numbering === 'facility_card' && wideCard) {
        ctx.addIssue({
          code: 'custom',
          path: ['doors', i, ...key, 'numbering'],
          message:
            `facility_card (facility * 65536 + card) is exact only for a card field of 16 bits or fewer, and the reader takes ${wideCard.name}: ` +
            'set its format (e.g. H10301, H10306), or use numbering: data or printed',
        });
      }
      const keypadLength = reader.type === 'wiegand' ? formats.find((f) => f.bits === 4 || f.bits === 8) : undefined;
      if (keypadLength) {
        ctx.addIssue({
          code: 'custom',
          path,
          message: `takes ${keypadLength.name}, a ${keypadLength.bits}-bit format: a Wiegand keypad sends ${keypadLength.bits}-bit frames on the same lines; name the reader's formats without it`,
        });
      }
    }
  });
}

/** `config check`'s warnings: a reader on `auto` whose lengths the site's formats make ambiguous (beyond the built-ins' own 37). */
type ReaderFormats = { type: string } & { format?: unknown; formats?: readonly WiegandFormatSpec[] };
export function ambiguousFormatWarnings(
  doors: ReadonlyArray<{ name: string; reader?: ReaderFormats | undefined; exitReader?: ReaderFormats | undefined }>,
): string[] {
  const builtinOnly = ambiguousLengths(BUILTIN_FORMATS);
  return doors.flatMap((door) =>
    [door.reader, door.exitReader].flatMap((reader) => {
      if (!reader || !('formats' in reader) || reader.format !== 'auto' || !reader.formats) return [];
      const lengths = [...ambiguousLengths(reader.formats)].filter(([bits, names]) => builtinOnly.get(bits)?.length !== names.length);
      if (lengths.length === 0) return [];
      return [
        `${door.name}: its reader takes every format (format: auto), and wiegand.formats makes ${lengths.map(([bits, names]) => `${bits} bits (${names.join(', ')})`).join('; ')} ambiguous: ` +
          "such cards are refused (ambiguous_format); set the reader's format to the ones the site uses",
      ];
    }),
  );
}
