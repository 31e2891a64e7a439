import * as z from 'zod';
import { parseServiceTime } from '../core/schedule.js';
import { compileWeeklySchedule } from '../core/weeklySchedule.js';
import { wholeNumber } from './wholeNumber.js';
import { identitySourceSchema } from './identity.js';

/**
 * Bodies of the access-control service (docs/access-control-api.md), as the agent receives them from a sync, a
 * snapshot file or MQTT. Unknown fields are tolerated; a known field of the wrong type is rejected.
 */

export const serviceTime = z
  .string()
  .refine((s) => parseServiceTime(s) !== null, {
    message: 'expected a UTC date "YYYY-MM-DD hh:mm:ss"',
  })
  .describe('a UTC time, "YYYY-MM-DD hh:mm:ss"');

/**
 * The number the reference service gives a PIN entry in place of its digits when the API key may not read PINs
 * (docs/reference-service.md, "Who reads PINs"). The agent refuses a sync that holds one, saying which key it needs.
 */
export const MASKED_PIN = '****';

/** A card or PIN entry as the agents take it (GET /user, GET /directory); GET /modifysmartcard answers a list of them. */
export const smartcardSchema = z
  .object({
    number: z.string().superRefine((n, ctx) => {
      if (n === MASKED_PIN) {
        ctx.addIssue({
          code: 'custom',
          message: 'a masked PIN ("****"): this API key may not read PINs; give the agent a DOOR key (door-agent service key create --rank DOOR)',
        });
        // facility:card as printed; a malformed one is kept (it matches no read) and reported as a directory finding.
      } else if (!/^[0-9]{1,40}$/.test(n) && !/^[0-9:]{1,41}$/.test(n))
        ctx.addIssue({ code: 'custom', message: 'expected a string holding an integer, or facility:card' });
    }),
    label: z.string().nullish(),
    /** The card's or PIN's validity (an extension of the reference service): from inclusive, until exclusive; null: unbounded. */
    valid_from: serviceTime.nullish(),
    valid_until: serviceTime.nullish(),
  })
  .superRefine((card, ctx) => {
    if (card.valid_from && card.valid_until && parseServiceTime(card.valid_until)! <= parseServiceTime(card.valid_from)!) {
      ctx.addIssue({ code: 'custom', path: ['valid_until'], message: 'is not after valid_from' });
    }
  });

const nameMatrix = z.array(z.array(z.string()));

export const userListItemSchema = z.object({
  email_id: z.number().int().nonnegative(),
  ad_status: z.string(),
  groups: nameMatrix.default([]),
  user_tag: z.enum(['USER', 'GUEST']).optional(),
  user_id: z.number().int().nullish(),
  email: z.string().nullish(),
  email_status: z.string().nullish(),
  name: z.string().nullish(),
  first_name: z.string().nullish(),
  last_name: z.string().nullish(),
  username: z.string().nullish(),
  unique_id: z.union([z.string(), z.number()]).nullish(),
  active_date: serviceTime.nullish(),
  confirmed: serviceTime.nullish(),
  created: serviceTime.nullish(),
  device_added: serviceTime.nullish(),
  /** Who owns the user (docs/identity-sources.md); absent from GET /directory and from services before it. */
  source: identitySourceSchema.optional(),
});
export type UserListItem = z.output<typeof userListItemSchema>;

export const userDetailSchema = z.object({
  policies: nameMatrix.default([]),
  computer_usernames: z.array(z.union([z.string(), z.object({ computer_username: z.string() })])).default([]),
  smartcards: z.array(smartcardSchema).default([]),
  /** Who owns the user (GET /user; not in GET /directory's details). */
  source: identitySourceSchema.optional(),
});
export type UserDetail = z.output<typeof userDetailSchema>;

// Whole, without stopping a configuration's checks across keys at a fraction (api/wholeNumber.ts).
const hour = wholeNumber().min(0, 'hours run from 0 to 24').max(24, 'hours run from 0 to 24');
export const timeMappingSchema = z
  .array(z.array(z.tuple([hour, hour]).refine(([start, end]) => start < end, { message: 'a range [start, end] needs start < end' })))
  .length(7, 'expected exactly 7 elements, one per weekday starting on Sunday');

/** A guest link as POST /magiclinkadmin creates it: its parameters plus the creation result. */
export const guestLinkSchema = z
  .object({
    magic_link_id: z.union([z.string().min(1).max(128), z.number().int().nonnegative()]).transform(String),
    magic_token: z.string().regex(/^[\x21-\x7e]{16,128}$/, 'expected 16-128 printable characters'),
    name: z.string(),
    email_list: z.array(z.string()).default([]),
    resource_id_list: z.array(z.number().int().nonnegative()),
    start_time: serviceTime.nullish(),
    end_time: serviceTime.nullish(),
    time_mapping: timeMappingSchema.nullish(),
    smartcards: z.array(smartcardSchema).nullish(),
    config_id: z.union([z.string(), z.number()]).nullish(),
    email_ids: z.record(z.string(), z.number().int()).nullish(),
  })
  .superRefine((link, ctx) => {
    if (link.start_time && link.end_time && parseServiceTime(link.end_time)! <= parseServiceTime(link.start_time)!) {
      ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'is not after start_time' });
    }
  });
export type GuestLink = z.output<typeof guestLinkSchema>;

/**
 * A weekly schedule as the service sends a level's (the shape of the agent's config `schedules:` entries),
 * checked whole: ranges, overlaps, at least one day.
 */
const weeklyScheduleSchema = z.unknown().superRefine((spec, ctx) => {
  const compiled = compileWeeklySchedule(spec);
  if ('problems' in compiled) for (const p of compiled.problems) ctx.addIssue({ code: 'custom', path: p.path, message: p.message });
});

/** An access level the service defines (GET /directory `levels`, docs/reference-service.md). */
export const directoryLevelSchema = z
  .object({
    name: z.string().min(1).max(100),
    /** The door resources it covers (a resource group's members already included). */
    resource_ids: z.array(z.number().int().nonnegative()).max(100_000),
    resource_group: z.string().nullish(),
    /** null: always. */
    schedule: weeklyScheduleSchema.nullish(),
    start_time: serviceTime.nullish(),
    end_time: serviceTime.nullish(),
  })
  .superRefine((level, ctx) => {
    if (level.start_time && level.end_time && parseServiceTime(level.end_time)! <= parseServiceTime(level.start_time)!) {
      ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'is not after start_time' });
    }
  });
export type DirectoryLevel = z.output<typeof directoryLevelSchema>;

export const directoryLevelsSchema = z
  .array(directoryLevelSchema)
  .max(10_000, 'at most 10,000 levels')
  .superRefine((levels, ctx) => {
    const seen = new Set<string>();
    levels.forEach((level, i) => {
      if (seen.has(level.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `level ${JSON.stringify(level.name)} is listed twice` });
      seen.add(level.name);
    });
  });

/** A resource group of the service (GET /directory `resource_groups`): agents' own levels may name one. */
export const resourceGroupSchema = z.object({
  name: z.string().min(1).max(200),
  resource_ids: z.array(z.number().int().nonnegative()).max(100_000),
});
export type ResourceGroup = z.output<typeof resourceGroupSchema>;
export const resourceGroupsSchema = z.array(resourceGroupSchema).max(10_000, 'at most 10,000 resource groups');

/**
 * A restore of the service's database awaiting acceptance at the service (GET /directory `restore`, GET /status
 * `directory.restore`; docs/reference-service.md "Backup and restore"): when it was detected, and how. Keys a later
 * service adds are ignored.
 */
export const directoryRestoreSchema = z.object({
  detected_at: z.string().min(1).max(100).describe('when the service saw that its database went back (ISO 8601)'),
  reason: z.string().max(1000).describe('how it saw it'),
});
