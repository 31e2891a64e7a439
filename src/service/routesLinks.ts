import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { parseServiceTime } from '../core/schedule.js';
import { guestLinkCreatedSchema } from '../api/answers.js';
import { timeMappingSchema } from '../api/shapes.js';
import { sharingRefusal, type Sharing } from './cardSharing.js';
import { refuseIfOwned } from './identity/ownership.js';
import { documented } from './openapi/routeDoc.js';
import {
  BadRequest,
  boolParam,
  emailParam,
  intParam,
  jsonArrayParam,
  jsonParam,
  parseParams,
  refuseNeverOpening,
  smartcardParam as smartcard,
} from './params.js';
import { REQUEST_LIMITS as LIMITS } from './requestLimits.js';
import type { RouteContext } from './routeContext.js';
import type { StoredLink } from './linkStore.js';
import { serviceTimestamp } from './users.js';

const serviceTime = z.string().refine((s) => parseServiceTime(s) !== null, 'expected a UTC date "YYYY-MM-DD hh:mm:ss"');

const linkParams = z.object({
  email_list: jsonArrayParam(emailParam, { field: 'email_list', max: LIMITS.emails }).refine((a) => a.length > 0, 'list at least one e-mail address'),
  resource_id_list: jsonArrayParam(intParam, { field: 'resource_id_list', max: LIMITS.resources }).refine((a) => a.length > 0, 'list at least one door'),
  name: z.string().trim().min(1).max(200).describe("the name of the link's policy"),
  end_time: serviceTime.nullish().describe('UTC "YYYY-MM-DD hh:mm:ss"; absent or null: never'),
  start_time: serviceTime.nullish().describe('UTC "YYYY-MM-DD hh:mm:ss"; absent or null: now'),
  send_email: boolParam.optional().describe('false: the link is not mailed'),
  config_id: z.union([intParam, z.string().min(1).max(64)]).optional(),
  smartcards: jsonArrayParam(smartcard, { field: 'smartcards', max: LIMITS.emails }).optional().describe('one card per guest, in the order of email_list'),
  allow_duplicates: boolParam.optional(),
  time_mapping: jsonParam(timeMappingSchema, 'a serialized JSON array')
    .optional()
    .describe('7 lists of [start_hour, end_hour] ranges, Sunday first; absent: always'),
});

/** Guest links (POST /magiclinkadmin): a temporary policy for the guests and a magic link for the doors. */
export function registerLinkRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { db, users } = ctx;
  const params = <T extends z.ZodType>(schema: T, request: FastifyRequest) => parseParams(schema, request.query, request.body);

  const linkDoc = {
    summary: 'Creates a guest link: a temporary policy for the guests and a code for the doors.',
    description: 'People who are not users yet come in as GUEST users. The link reaches the doors over MQTT.',
    tag: 'Guest links',
    key: 'ADMIN',
    params: linkParams,
    answer: guestLinkCreatedSchema,
    statuses: {
      409: 'An access level has that name, or a card is given to a user whose cards come from SCIM or LDAP.',
      413: `More than ${LIMITS.emails} e-mail addresses or cards, or ${LIMITS.resources} doors.`,
    },
  } as const;
  app.post('/magiclinkadmin', documented(linkDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(linkParams, request);
    const now = ctx.clock.wallNow();
    const start = p.start_time ?? serviceTimestamp(now);
    if (p.end_time && parseServiceTime(p.end_time)! <= parseServiceTime(start)!) {
      // Without a start_time the link starts now: an end before it is in the past.
      throw new BadRequest(p.start_time ? `end_time: ${p.end_time} is not after start_time ${p.start_time}` : `end_time: ${p.end_time} is in the past`);
    }
    if (p.time_mapping) refuseNeverOpening(p.time_mapping);
    // The checks and the writes in one transaction: a level named meanwhile, or a card given to another user
    // meanwhile (by another request, or another service process), is seen by the checks or makes them run again.
    const { link, guestCount, ignored } = await db.transaction(async () => {
      // Doors match access levels by policy name: a link's policy must not carry a level's name to its guests.
      const level = await ctx.levels.named(p.name);
      if (level)
        throw new BadRequest(`name: an access level is named "${level.name}" (policy_id ${level.policy_id}): choose another name for the guest link`, 409);
      const notDoors = p.resource_id_list.filter((id) => ctx.resources.find((r) => r.resourceId === id)?.type !== 'DOOR');
      if (notDoors.length > 0) throw new BadRequest(`resource_id_list: not doors of this organization: ${notDoors.join(', ')}`);
      const cards = p.smartcards ?? [];
      if (cards.length > p.email_list.length) throw new BadRequest('smartcards: more cards than e-mail addresses (they are mapped one to one)');
      // Each guest once: an e-mail listed again (compared case-insensitively, as everywhere in the service) is
      // ignored and named in the answer. Cards map one to one to the list as given: a repeat with a card is refused.
      const guests = new Map<string, (typeof cards)[number] | undefined>();
      const ignored = new Set<string>();
      p.email_list.forEach((raw, i) => {
        const email = raw.toLowerCase();
        if (!guests.has(email)) {
          guests.set(email, cards[i]);
          return;
        }
        if (cards[i]) throw new BadRequest(`email_list: ${email} is listed twice and smartcards gives each a card (one card per guest)`);
        ignored.add(email);
      });
      if (!p.allow_duplicates) {
        // One card given to two guests of this link is listed twice; a card a guest already holds is no duplicate,
        // one another user holds is (compared as the doors compare them: users.sharing).
        const given = new Map<string, number>();
        for (const card of guests.values()) {
          const key = card && users.credentialKey(card);
          if (key) given.set(key, (given.get(key) ?? 0) + 1);
        }
        const sharing: Sharing = { listedTwice: [], heldByOthers: [] };
        for (const [email, card] of guests) {
          if (!card) continue;
          if (given.get(users.credentialKey(card))! > 1) sharing.listedTwice.push(card.number);
          else sharing.heldByOthers.push(...(await users.sharing((await users.byEmail(email))?.email_id ?? null, [card])).heldByOthers);
        }
        const refusal = sharingRefusal(sharing, true);
        if (refusal !== null) throw new BadRequest(refusal);
      }
      const emailIds: Record<string, number> = {};
      for (const [email, card] of guests) {
        // People who are not users yet come in as guests (promotable with PUT /promoteguest); a removed user comes
        // back as a new GUEST member, with only the card this link gives.
        const { user } = await users.ensure(email, 'GUEST', now);
        emailIds[email] = user.email_id;
        // A card for a user whose cards come from SCIM or LDAP would be undone by the next sync: refused, as PUT /modifysmartcard.
        if (card) {
          refuseIfOwned(user.email, user.source, 'cards', ctx.identity);
          // The guest's own entry of that card (in any spelling) is replaced by the link's.
          const others = (await users.smartcards(user.email_id)).filter((c) => users.credentialKey(c) !== users.credentialKey(card));
          await users.replaceSmartcards(user.email_id, [...others, card]);
        }
      }
      const policyId = Number(await db.value('INSERT INTO policies (name) VALUES (?) RETURNING policy_id', [p.name]));
      for (const id of Object.values(emailIds)) {
        await db.run('INSERT INTO policy_members (policy_id, email_id) VALUES (?, ?) ON CONFLICT DO NOTHING', [policyId, id]);
      }
      // A new id, never one a revoked link had: a door's audit log names links by id.
      const id = Number(
        await db.value(
          `INSERT INTO guest_links (magic_link_id, policy_id, link, created_at) VALUES ((SELECT coalesce(max(id), 0) + 1 FROM
             (SELECT max(magic_link_id) AS id FROM guest_links UNION ALL SELECT max(magic_link_id) FROM revoked_guest_links) AS last), ?, ?, ?)
           RETURNING magic_link_id`,
          [policyId, '{}', now],
        ),
      );
      const stored: StoredLink = {
        magic_link_id: String(id),
        magic_token: randomBytes(24).toString('base64url'),
        name: p.name,
        email_list: [...guests.keys()],
        resource_id_list: p.resource_id_list,
        start_time: start,
        end_time: p.end_time ?? null,
        time_mapping: p.time_mapping ?? Array.from({ length: 7 }, () => [[0, 24]]),
        // Still one to one with email_list: a repeat with a card was refused, so the cards kept are its first ones.
        smartcards: [...guests.values()].filter((c) => c !== undefined),
        config_id: p.config_id ?? 1,
        email_ids: emailIds,
      };
      await db.run('UPDATE guest_links SET link = ? WHERE magic_link_id = ?', [JSON.stringify(stored), id]);
      // The guests' mail is queued with the link: both are stored, or neither.
      if (p.send_email !== false) {
        for (const email of guests.keys()) {
          await db.run('INSERT INTO mail_outbox (recipient, subject, body, created_at) VALUES (?, ?, ?, ?)', [
            email,
            `Your access: ${p.name}`,
            `Hello,\n\nshow this code at the door: ${String(stored.magic_token)}\n`,
            now,
          ]);
        }
      }
      // Owed to the doors in this transaction (the publisher sends it once committed); the mailer is told once it
      // has committed, never by a run of it that PostgreSQL rolls back to run again.
      await ctx.owe('link', stored.magic_link_id);
      if (p.send_email !== false) db.afterCommit(() => ctx.mailQueued());
      return { link: stored, guestCount: guests.size, ignored };
    });
    return {
      success:
        `guest link ${link.magic_link_id} created for ${guestCount} guest(s)` +
        (ignored.size > 0 ? `; duplicate e-mail addresses ignored: ${[...ignored].join(', ')}` : ''),
      magic_token: link.magic_token,
      email_ids: link.email_ids,
      config_id: link.config_id,
      magic_link_id: link.magic_link_id,
    };
  });
}
