import * as z from 'zod';
import { serviceTime } from '../api/shapes.js';
import { parseServiceTime } from '../core/schedule.js';
import { problemsInOneLine } from '../util/issues.js';
import { BadRequest } from './badRequest.js';
import { checkJsonDepth, tooMany } from './requestLimits.js';

export { BadRequest };

/**
 * Request parameters of the service: accepted in the query string, a form or a JSON body (the API document does
 * not say which), so every scalar also accepts its string form, and "serialized JSON array" parameters accept a
 * string holding the array as well as the array itself.
 */
export const intParam = z.union([
  z.number().int(),
  z
    .string()
    .regex(/^-?\d{1,15}$/, 'expected an integer')
    .transform(Number),
]);

export const boolParam = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')]);

/** The text of a parameter that holds JSON, parsed; text that is not JSON is refused saying what was expected. */
function parsedJson(text: string, ctx: z.RefinementCtx, expected: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    ctx.addIssue({ code: 'custom', message: `not valid JSON (expected ${expected})` });
    return z.NEVER;
  }
}

/**
 * A parameter that holds JSON (an object, or null): given as text in a form or the query string, it is parsed;
 * anything else passes to `schema` as it is.
 */
export function jsonParam<T extends z.ZodType>(schema: T, expected: string) {
  return z.preprocess((value, ctx) => (typeof value === 'string' ? parsedJson(value, ctx, expected) : value), schema);
}

/**
 * A "serialized JSON array" parameter. With `limit`, a longer list is refused with 413 naming `limit.field` before
 * any item is checked (requestLimits.ts); a string holding JSON nested too deep is refused before it is parsed.
 */
export function jsonArrayParam<T extends z.ZodType>(item: T, limit?: { field: string; max: number }) {
  return z.preprocess((value, ctx) => {
    let parsed = value;
    if (typeof value === 'string') {
      checkJsonDepth(value, limit?.field ?? 'a parameter');
      parsed = parsedJson(value, ctx, 'a serialized JSON array');
    }
    if (limit && Array.isArray(parsed) && parsed.length > limit.max) throw tooMany(limit.field, parsed.length, limit.max);
    return parsed;
  }, z.array(item));
}

/** A time_mapping without a range on any day: a link or level that would never open, refused (400). */
export function refuseNeverOpening(timeMapping: ReadonlyArray<ReadonlyArray<unknown>>): void {
  if (timeMapping.every((day) => day.length === 0)) {
    throw new BadRequest('time_mapping: no weekday has a range (that would never open): give at least one range, or leave time_mapping out for always');
  }
}

/** An e-mail address as users type them; the check is deliberately plain (one @, a dot in the domain). */
export const emailParam = z
  .string()
  .trim()
  .regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, 'not an e-mail address');

/** The longest smartcard or PIN number accepted: what the agents store (smartcardSchema in src/api/shapes.ts). */
const SMARTCARD_MAX_DIGITS = 40;

/**
 * A smartcard or PIN entry of every call that assigns cards: `number` "a string holding an integer" (digits only,
 * 1 to 40 of them), or facility:card as printed (each problem refused with its own reason), `label` optional, and the extension's validity
 * dates `valid_from` (inclusive) and `valid_until` (exclusive), UTC 'YYYY-MM-DD hh:mm:ss', null or absent for no
 * bound; valid_until must be after valid_from.
 */
export const smartcardParam = z
  .object({
    number: z
      .string()
      // Or as printed on the card, facility:card (docs/hardware.md, "Numbering").
      .regex(/^[0-9]+(:[0-9]+)?$/, 'a smartcard number must be a string holding an integer (digits only), or facility:card as printed')
      .max(SMARTCARD_MAX_DIGITS, `a smartcard number has at most ${SMARTCARD_MAX_DIGITS} digits`),
    label: z.string().max(200).nullish(),
    valid_from: serviceTime.nullish(),
    valid_until: serviceTime.nullish(),
  })
  .superRefine((card, ctx) => {
    if (card.valid_from && card.valid_until && parseServiceTime(card.valid_until)! <= parseServiceTime(card.valid_from)!) {
      ctx.addIssue({ code: 'custom', path: ['valid_until'], message: 'is not after valid_from' });
    }
  });

/** Merges query and body and validates them; a problem becomes a 400 naming the parameter. */
export function parseParams<T extends z.ZodType>(schema: T, query: unknown, body: unknown): z.output<T> {
  const merged = { ...(query as object | undefined), ...(typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}) };
  const result = schema.safeParse(merged);
  if (!result.success) {
    throw new BadRequest(problemsInOneLine(result.error.issues));
  }
  return result.data;
}
