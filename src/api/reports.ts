import * as z from 'zod';

/**
 * The reports' JSON answers (GET /reports/passages, /reports/first-last, /reports/refusals; docs/audit.md,
 * "Reports"). Every time is the site's wall clock with its offset (2026-11-29T08:02:11+01:00); a door is named as
 * server.resources names it (its uuid when not listed). CSV carries the same columns.
 */

/** What every report says of itself: its range as read in the site's zone. */
const reportHead = {
  /** The first instant in the range and the first after it. */
  from: z.string(),
  to: z.string(),
  /** The site's zone (server.timezone) the times and days are in. */
  timezone: z.string(),
};

/** Ask again with after=next_after for the next page; null: this was the last. */
const nextAfter = z.string().nullable();

const passageRowSchema = z.object({
  at: z.string(),
  /** The user (email_id) of the grant's first holder; null: none (a guest link, a card of no user). */
  person_id: z.number().int().nullable(),
  person: z.string().nullable(),
  door: z.string().nullable(),
  door_uuid: z.string().nullable(),
  /** The credential: card, pin, card_and_pin, qr, ... */
  kind: z.string().nullable(),
  level: z.string().nullable(),
  area: z.string().nullable(),
  agent: z.string(),
});

export const passagesReportSchema = z.object({ report: z.literal('passages'), ...reportHead, rows: z.array(passageRowSchema), next_after: nextAfter });

const firstLastRowSchema = z.object({
  /** The local day. */
  date: z.string(),
  person_id: z.number().int(),
  person: z.string().nullable(),
  first_in: z.string(),
  first_door: z.string().nullable(),
  last_out: z.string(),
  last_door: z.string().nullable(),
  /** Grants that day. */
  grants: z.number().int(),
});

export const firstLastReportSchema = z.object({ report: z.literal('first-last'), ...reportHead, rows: z.array(firstLastRowSchema), next_after: nextAfter });

const refusalRowSchema = z.object({
  /** by=reason: the refusal's reason; by=door: the door's name (null: refusals of no door). */
  reason: z.string().nullable().optional(),
  door: z.string().nullable().optional(),
  door_uuid: z.string().nullable().optional(),
  count: z.number().int(),
});

export const refusalsReportSchema = z.object({
  report: z.literal('refusals'),
  ...reportHead,
  by: z.enum(['reason', 'door']),
  /** Most refusals first. */
  rows: z.array(refusalRowSchema),
  total: z.number().int(),
});
