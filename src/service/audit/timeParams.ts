import * as z from 'zod';

const DAY_MS = 86_400_000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * A time bound of a query: an ISO 8601 time with its offset, or a date (YYYY-MM-DD, UTC). As `to`, a date takes
 * that whole day: the bound is the next day's start. Milliseconds out.
 */
export function timeParam(end: 'from' | 'to') {
  return z
    .string()
    .max(40)
    .refine((text) => (DATE.test(text) || z.iso.datetime({ offset: true }).safeParse(text).success) && !Number.isNaN(Date.parse(text)), {
      message: 'must be an ISO 8601 time (2026-11-28T09:00:00Z) or a date (2026-11-28)',
    })
    .transform((text) => Date.parse(DATE.test(text) ? `${text}T00:00:00Z` : text) + (end === 'to' && DATE.test(text) ? DAY_MS : 0));
}
