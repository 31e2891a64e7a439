import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { groupCreatedSchema, invitesAnswerSchema, successAnswerSchema } from '../api/answers.js';
import type { IdentitySource } from '../api/identity.js';
import { sharingRefusal } from './cardSharing.js';
import { refuseIfOwned } from './identity/ownership.js';
import { documented } from './openapi/routeDoc.js';
import { BadRequest, boolParam, emailParam, intParam, jsonArrayParam, parseParams, smartcardParam as smartcard } from './params.js';
import { REQUEST_LIMITS as LIMITS } from './requestLimits.js';
import type { RouteContext } from './routeContext.js';

const idList = (field: string) => jsonArrayParam(intParam, { field, max: LIMITS.ids });
const groupType = z.enum(['users', 'resources']);
const createParams = z.object({
  type: groupType,
  name: z.string().trim().min(1).max(200),
  add_ids: idList('add_ids').describe('the first members: email_ids (users) or resource ids (resources)'),
  resource_type: z.enum(['COMPUTER', 'DOOR']).optional().describe('of a resources group: only resources of this type'),
});
const changeParams = z.object({ type: groupType, group_id: intParam, add_ids: idList('add_ids').optional(), del_ids: idList('del_ids').optional() });
const inviteParams = z.object({
  emails: jsonArrayParam(z.string(), { field: 'emails', max: LIMITS.emails }).refine((a) => a.length > 0, 'list at least one e-mail address'),
  smartcards: jsonArrayParam(jsonArrayParam(smartcard, { field: 'smartcards (of one user)', max: LIMITS.perUser }), {
    field: 'smartcards',
    max: LIMITS.emails,
  })
    .optional()
    .describe("each invited user's cards, in the order of emails"),
  groups: jsonArrayParam(z.object({ id: intParam, name: z.string().optional() }), { field: 'groups', max: LIMITS.perUser })
    .optional()
    .describe('user groups every new user joins'),
  no_email: boolParam.optional().describe('true: no invitation is mailed'),
});
/** A member added twice is one membership. */
const ADD_MEMBER = 'INSERT INTO group_members (group_id, member_id) VALUES (?, ?) ON CONFLICT DO NOTHING';

/** Groups of users or resources, and invitations (POST /invites). */
export function registerGroupRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { db, users } = ctx;
  const params = <T extends z.ZodType>(schema: T, request: FastifyRequest) => parseParams(schema, request.query, request.body);

  /**
   * Refuses member ids that are not users (user groups) or configured resources (resource groups), and GUEST users:
   * a user group grants at the doors by its name, and a guest's access is its link's (as /policies refuses them).
   */
  const checkMembers = async (type: 'users' | 'resources', ids: readonly number[], resourceType?: 'COMPUTER' | 'DOOR' | null) => {
    const active = type === 'users' ? await users.activeIds(ids) : null;
    const unknown =
      active !== null
        ? ids.filter((id) => !active.has(id))
        : ids.filter((id) => {
            const r = ctx.resources.find((res) => res.resourceId === id);
            return !r || (resourceType != null && r.type !== resourceType);
          });
    if (unknown.length > 0) {
      throw new BadRequest(`unknown ${type === 'users' ? 'email_id' : resourceType ? `${resourceType} resource_id` : 'resource_id'}(s): ${unknown.join(', ')}`);
    }
    if (type !== 'users') return;
    const guests = await db.column<number>(`SELECT email_id FROM users WHERE tag = 'GUEST' AND email_id ${db.inJsonIds} ORDER BY email_id`, [
      JSON.stringify(ids),
    ]);
    if (guests.length > 0) {
      throw new BadRequest(`add_ids: GUEST users cannot join groups (promote them with PUT /promoteguest first): email_id ${guests.join(', ')}`);
    }
  };

  /** Doors grant by a user group's name: a second user group of that name (trimmed, in any case) is refused. */
  const checkUserGroupName = async (name: string) => {
    const taken = await db.get<{ group_id: number; name: string }>("SELECT group_id, name FROM groups WHERE type = 'users' AND lower(trim(name)) = lower(?)", [
      name,
    ]);
    if (taken) throw new BadRequest(`name: a user group named "${taken.name}" already exists (group_id ${taken.group_id})`, 409);
  };

  /** Adds members in one statement (10,000 ids are one round trip to PostgreSQL, not 10,000); known ones stay. */
  const addMembers = async (groupId: number, ids: readonly number[]) => {
    if (ids.length === 0) return;
    // WHERE true: SQLite reads an upsert's ON after a SELECT's FROM as a join without it.
    await db.run(`INSERT INTO group_members (group_id, member_id) SELECT ?, value FROM ${db.jsonIdRows} WHERE true ON CONFLICT DO NOTHING`, [
      groupId,
      JSON.stringify(ids),
    ]);
  };

  const createDoc = {
    summary: 'Creates a group of users or of resources.',
    tag: 'Groups',
    key: 'ADMIN',
    params: createParams,
    answer: groupCreatedSchema,
    statuses: { 409: 'Another user group has that name.', 413: `More than ${LIMITS.ids} add_ids.` },
  } as const;
  app.post('/groups', documented(createDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(createParams, request);
    // The members checked in the transaction that adds them: a user removed meanwhile is refused, not added.
    const groupId = await db.transaction(async () => {
      await checkMembers(p.type, p.add_ids, p.type === 'resources' ? p.resource_type : undefined);
      if (p.type === 'users') await checkUserGroupName(p.name);
      const id = (await db.value<number>('INSERT INTO groups (type, name, resource_type) VALUES (?, ?, ?) RETURNING group_id', [
        p.type,
        p.name,
        p.type === 'resources' ? (p.resource_type ?? null) : null,
      ]))!;
      await addMembers(id, p.add_ids);
      return id;
    });
    return { success: `group ${p.name} created with ${new Set(p.add_ids).size} member(s)`, group_id: groupId };
  });

  const changeDoc = {
    summary: 'Adds members to a group and removes others.',
    tag: 'Groups',
    key: 'ADMIN',
    params: changeParams,
    answer: successAnswerSchema,
    statuses: {
      404: 'No group with that group_id.',
      409: 'The group is owned by SCIM or LDAP (docs/identity-sources.md): the message says where to change its members.',
      413: `More than ${LIMITS.ids} add_ids or del_ids.`,
    },
  } as const;
  app.put('/groups', documented(changeDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(changeParams, request);
    // The group and the members read in the transaction that changes them (a group deleted or a user removed
    // meanwhile is seen).
    const group = await db.transaction(async () => {
      const found = await db.get<{ type: 'users' | 'resources'; name: string; resource_type: 'COMPUTER' | 'DOOR' | null; source: IdentitySource }>(
        'SELECT type, name, resource_type, source FROM groups WHERE group_id = ?',
        [p.group_id],
      );
      if (!found) throw new BadRequest(`no group with group_id ${p.group_id}`, 404);
      if (found.type !== p.type) throw new BadRequest(`group ${p.group_id} is a ${found.type} group, not ${p.type}`);
      // The members of a group SCIM or LDAP owns are its source's (a call changing none is no change).
      if ((p.add_ids ?? []).length + (p.del_ids ?? []).length > 0) refuseIfOwned(`group ${found.name}`, found.source, 'members', ctx.identity);
      await checkMembers(p.type, p.add_ids ?? [], found.resource_type);
      await addMembers(p.group_id, p.add_ids ?? []);
      if ((p.del_ids ?? []).length > 0) {
        await db.run(`DELETE FROM group_members WHERE group_id = ? AND member_id ${db.inJsonIds}`, [p.group_id, JSON.stringify(p.del_ids)]);
      }
      return found;
    });
    return { success: `group ${group.name} updated` };
  });

  const inviteDoc = {
    summary: 'Adds users to the organization by e-mail, with their cards and groups, and mails them an invitation.',
    description: 'An address that is not one, or a user already there, is named in the answer rather than refused.',
    tag: 'Users',
    key: 'ADMIN',
    params: inviteParams,
    answer: invitesAnswerSchema,
    statuses: {
      409: 'A group named is owned by SCIM or LDAP (docs/identity-sources.md): its members are added there.',
      413: `More than ${LIMITS.emails} emails, or a list of cards or groups over its limit.`,
    },
  } as const;
  app.post('/invites', documented(inviteDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(inviteParams, request);
    const cardsFor = (i: number) => p.smartcards?.[i] ?? [];
    const result = {
      added: [] as string[],
      invited: [] as string[],
      exists: [] as string[],
      invalid: [] as string[],
      failed_invite: [] as string[],
      add_ids: [] as number[],
    };
    const sendEmail = !p.no_email;
    const now = ctx.clock.wallNow();
    // One transaction from the checks to the last mail queued: the groups and the cards are checked against what
    // the invitations then write (another request or service process changes nothing in between). Mail is only
    // queued in it (the outbox); it is sent after.
    const groupRows = await db.transaction(async () => {
      const groups: Array<{ group_id: number; name: string }> = [];
      for (const g of p.groups ?? []) {
        const row = await db.get<{ group_id: number; name: string; source: IdentitySource }>(
          "SELECT group_id, name, source FROM groups WHERE group_id = ? AND type = 'users'",
          [g.id],
        );
        if (!row) throw new BadRequest(`no user group with id ${g.id}`);
        refuseIfOwned(`group ${row.name}`, row.source, 'members', ctx.identity);
        groups.push({ group_id: row.group_id, name: row.name });
      }
      // Card lists are mapped to the e-mails in order: a list without its e-mail would be lost.
      if ((p.smartcards?.length ?? 0) > p.emails.length) {
        throw new BadRequest(`smartcards: more card lists than e-mail addresses (${p.smartcards!.length} for ${p.emails.length}; they are mapped one to one)`);
      }
      // Cards go to new members only (a re-invited user's were released at removal), so any number held by an
      // active user, or listed twice in the call, would be shared: refused (POST /invites has no allow_duplicates).
      const refusal = sharingRefusal(
        await users.sharing(
          null,
          p.emails.flatMap((_e, i) => cardsFor(i)),
        ),
        false,
      );
      if (refusal !== null) throw new BadRequest(refusal);
      // A run again (PostgreSQL, after a serialization failure) starts from an empty result.
      for (const list of Object.values(result)) list.length = 0;
      for (const [i, raw] of p.emails.entries()) {
        const email = emailParam.safeParse(raw);
        if (!email.success) {
          result.invalid.push(raw);
          continue;
        }
        const { user, created } = await users.ensure(email.data.toLowerCase(), 'USER', now);
        if (!created) {
          result.exists.push(user.email);
          continue;
        }
        result.added.push(user.email);
        result.add_ids.push(user.email_id);
        if (cardsFor(i).length > 0) await users.replaceSmartcards(user.email_id, cardsFor(i));
        for (const g of groups) await db.run(ADD_MEMBER, [g.group_id, user.email_id]);
        if (sendEmail) {
          await db.run('INSERT INTO mail_outbox (recipient, subject, body, created_at) VALUES (?, ?, ?, ?)', [
            user.email,
            'You are invited to the access-control service',
            `Hello,\n\nyou have been invited. Create your account and set a password with the link your administrator gives you.\n`,
            now,
          ]);
          result.invited.push(user.email);
        }
      }
      return groups;
    });
    if (sendEmail) ctx.mailQueued();
    return {
      success: `${result.added.length} user(s) added, ${result.exists.length} already there, ${result.invalid.length} invalid`,
      ...result,
      group_names: groupRows.map((g) => g.name),
      send_email: sendEmail,
    };
  });
}
