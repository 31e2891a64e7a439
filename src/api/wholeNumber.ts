import * as z from 'zod';

/**
 * Refuses a fraction (12.5) as a wrong value, not a wrong type: zod's `.int()` marks its issue `continue: false`,
 * which stops even the checks across keys that run on a file with problems (config/acrossKeys.ts), so one
 * fractional resourceId would hide its door's pin clash. Left unmarked, the issue still skips this key's own
 * range checks after it, as a wrong type does. The voice says it as `.int()`'s: `12.5 is not a whole number`.
 */
const WHOLE = z.check<number>((payload) => {
  if (!Number.isInteger(payload.value)) payload.issues.push({ code: 'invalid_type', expected: 'int', input: payload.value });
});

/**
 * A number that must be whole, for every whole-number key of a configuration file (instead of `.int()`). Its range
 * is the safe integers, as `.int()`'s; its JSON Schema type is `integer` (schema/config.schema.json).
 */
export function wholeNumber() {
  return z.number().check(WHOLE).min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).meta({ type: 'integer' });
}

/** Whether a schema is a whole number (this module's or zod's `.int()`): its wrong type is "not a whole number". */
export function isWholeNumber(schema: unknown): boolean {
  return schema instanceof z.ZodNumber && (schema.isInt || (schema._zod.def.checks?.includes(WHOLE) ?? false));
}

/** A value of the right type that is not whole: the checks across keys take it as it is (config/standIns.ts). */
export function isFraction(issue: z.core.$ZodRawIssue): boolean {
  return issue.code === 'invalid_type' && issue.expected === 'int' && typeof issue.input === 'number';
}
