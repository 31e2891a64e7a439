import * as z from 'zod';
import { WEEKDAY_KEYS } from '../core/weeklySchedule.js';
import { directoryRestoreSchema, serviceTime, smartcardSchema, userListItemSchema } from './shapes.js';

/**
 * The reference service's answers that the agent does not read (shapes.ts has those it does): the body of each
 * call's 200 and of its refusals, as GET /openapi.json describes them (docs/openapi.md). The service's routes name
 * them in their descriptions; the tests check real answers against the document made from them.
 */

const id = z.number().int().nonnegative();

/** Every refusal, whatever its status (docs/reference-service.md, "Errors"). */
export const errorAnswerSchema = z.object({ error: z.string().describe('what was refused and why, for a person to read') });

/** The answer of the simple calls: one message. */
export const successAnswerSchema = z.object({ success: z.string().describe('what was done, for a person to read') });

/** GET /multipleusers. */
export const userListSchema = z.array(userListItemSchema);

/** GET /modifysmartcard: a user's cards and PINs (a PIN's number is "****" to a key that may not read PINs). */
export const userSmartcardsSchema = z.object({ email_id: id, smartcards: z.array(smartcardSchema) });

/** POST /groups. */
export const groupCreatedSchema = successAnswerSchema.extend({ group_id: id });

const emails = z.array(z.string());

/** POST /invites: each address in the list that says what became of it. */
export const invitesAnswerSchema = successAnswerSchema.extend({
  added: emails,
  invited: emails.describe('the added users who were sent an invitation'),
  exists: emails,
  invalid: emails,
  failed_invite: emails,
  add_ids: z.array(id).describe('the email_id of each added user, in the order of added'),
  group_names: z.array(z.string()),
  send_email: z.boolean(),
});

/** POST /magiclinkadmin. */
export const guestLinkCreatedSchema = successAnswerSchema.extend({
  magic_token: z.string().describe('what opens the doors: the code a guest shows'),
  email_ids: z.record(z.string(), id).describe("each guest's e-mail and email_id"),
  config_id: z.union([z.string(), z.number().int()]),
  magic_link_id: z.string(),
});

/** POST /lockdown: `warning` when the broker is out of reach (the doors get it when the service reconnects). */
export const lockdownSetSchema = successAnswerSchema.extend({ warning: z.string().optional() });

/** GET /lockdown. */
export const lockdownListSchema = z.object({
  lockdowns: z.array(
    z.object({
      scope: z.string().describe('door:<uuid> or agent:<id>'),
      active: z.boolean(),
      by: z.string(),
      reason: z.string().nullable(),
      changed_at: z.string().describe('ISO 8601, UTC'),
    }),
  ),
});

/** POST /policies. */
export const policyCreatedSchema = successAnswerSchema.extend({ policy_id: id });

/** A level's weekly schedule as the service answers it: its days in week order, `holidays` always there. */
const levelScheduleAnswer = z.object(
  Object.assign(
    Object.fromEntries(WEEKDAY_KEYS.map((day) => [day, z.array(z.string().describe('HH:MM-HH:MM')).optional()])) as Record<
      (typeof WEEKDAY_KEYS)[number],
      z.ZodOptional<z.ZodArray<z.ZodString>>
    >,
    { holidays: z.enum(['closed', 'open']) },
  ),
);

const levelShown = z.object({
  policy_id: id,
  name: z.string(),
  resource_ids: z.array(id),
  resource_group: z.object({ group_id: id, name: z.string() }).nullable(),
  schedule: levelScheduleAnswer.nullable().describe('null: always'),
  start_time: serviceTime.nullable(),
  end_time: serviceTime.nullable(),
  member_count: z.number().int().nonnegative(),
});

/** GET /policies: every level, or (with policy_id) one level and its members. */
export const policiesAnswerSchema = z.union([z.object({ policies: z.array(levelShown) }), levelShown.extend({ email_ids: z.array(id) })]);

const count = z.number().int().nonnegative();
const bytes = count.nullable();

/** GET /status: the service's load (docs/reference-service.md, "GET /status"). */
export const statusAnswerSchema = z.object({
  uptime_seconds: count,
  directory: z.object({
    revision: count,
    history: z.string().nullable(),
    tag: z.string().nullable(),
    stored: z.object({
      revision: count.nullable(),
      full_bytes: z.object({ identity: count, gzip: bytes, br: bytes }).nullable(),
      deltas: count,
      delta_bytes: count,
    }),
    builds: count,
    compressions: count,
    restore: directoryRestoreSchema.nullable().describe('the restore awaiting acceptance (POST /directory/restore/accept); null: none'),
  }),
  in_flight: z.object({ directory_answers: count, directory_builds: count }),
  limits: z.object({ max_directory_answers: count, max_directory_builds: count, retry_after_seconds: count }),
  refused: z.record(z.string(), count).describe('requests refused or shed since the service started, by reason'),
});

/** POST /directory/restore/accept: the revision that answers without the restore. */
export const restoreAcceptedSchema = z.object({ accepted: z.literal(true), revision: count });

/** GET /healthz when this process can query its database. */
export const healthAnswerSchema = z.object({ status: z.literal('ok'), database: z.literal('ok') });
