import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { BadRequest, boolParam, emailParam, intParam, jsonArrayParam, parseParams, smartcardParam as smartcard } from './params.js';
import { REQUEST_LIMITS as LIMITS } from './requestLimits.js';
import type { RouteContext } from './routeContext.js';

const idList = (field: string) => jsonArrayParam(intParam, { field, max: LIMITS.ids });

/** Groups of users or resources, and invitations (POST /invites). */
export function registerGroupRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { db, users } = ctx;
  const params = <T extends z.ZodType>(schema: T, request: FastifyRequest) => parseParams(schema, request.query, request.body);

  /** Refuses member ids that are not users (user groups) or configured resources (resource groups). */
  const checkMembers = (type: 'users' | 'resources', ids: readonly number[], resourceType?: 'COMPUTER' | 'DOOR' | null) => {
    const active = type === 'users' ? users.activeIds(ids) : null;
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
  };

  app.post('/groups', async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(
      z.object({
        type: z.enum(['users', 'resources']),
        name: z.string().trim().min(1).max(200),
        add_ids: idList('add_ids'),
        resource_type: z.enum(['COMPUTER', 'DOOR']).optional(),
      }),
      request,
    );
    checkMembers(p.type, p.add_ids, p.type === 'resources' ? p.resource_type : undefined);
    const groupId = db.transaction(() => {
      const info = db
        .prepare('INSERT INTO groups (type, name, resource_type) VALUES (?, ?, ?)')
        .run(p.type, p.name, p.type === 'resources' ? (p.resource_type ?? null) : null);
      const id = Number(info.lastInsertRowid);
      const add = db.prepare('INSERT OR IGNORE INTO group_members (group_id, member_id) VALUES (?, ?)');
      for (const member of p.add_ids) add.run(id, member);
      return id;
    })();
    return { success: `group ${p.name} created with ${new Set(p.add_ids).size} member(s)`, group_id: groupId };
  });

  app.put('/groups', async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(
      z.object({ type: z.enum(['users', 'resources']), group_id: intParam, add_ids: idList('add_ids').optional(), del_ids: idList('del_ids').optional() }),
      request,
    );
    const group = db.prepare('SELECT type, name, resource_type FROM groups WHERE group_id = ?').get(p.group_id) as
      | { type: 'users' | 'resources'; name: string; resource_type: 'COMPUTER' | 'DOOR' | null }
      | undefined;
    if (!group) throw new BadRequest(`no group with group_id ${p.group_id}`, 404);
    if (group.type !== p.type) throw new BadRequest(`group ${p.group_id} is a ${group.type} group, not ${p.type}`);
    checkMembers(p.type, p.add_ids ?? [], group.resource_type);
    db.transaction(() => {
      const add = db.prepare('INSERT OR IGNORE INTO group_members (group_id, member_id) VALUES (?, ?)');
      const del = db.prepare('DELETE FROM group_members WHERE group_id = ? AND member_id = ?');
      for (const id of p.add_ids ?? []) add.run(p.group_id, id);
      for (const id of p.del_ids ?? []) del.run(p.group_id, id);
    })();
    return { success: `group ${group.name} updated` };
  });

  app.post('/invites', async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(
      z.object({
        emails: jsonArrayParam(z.string(), { field: 'emails', max: LIMITS.emails }).refine((a) => a.length > 0, 'list at least one e-mail address'),
        smartcards: jsonArrayParam(jsonArrayParam(smartcard, { field: 'smartcards (of one user)', max: LIMITS.perUser }), {
          field: 'smartcards',
          max: LIMITS.emails,
        }).optional(),
        groups: jsonArrayParam(z.object({ id: intParam, name: z.string().optional() }), { field: 'groups', max: LIMITS.perUser }).optional(),
        no_email: boolParam.optional(),
      }),
      request,
    );
    const groupById = db.prepare("SELECT group_id, name FROM groups WHERE group_id = ? AND type = 'users'");
    const groupRows = (p.groups ?? []).map((g) => {
      const row = groupById.get(g.id) as { group_id: number; name: string } | undefined;
      if (!row) throw new BadRequest(`no user group with id ${g.id}`);
      return row;
    });
    // Card lists are mapped to the e-mails in order: a list without its e-mail would be lost.
    if ((p.smartcards?.length ?? 0) > p.emails.length) {
      throw new BadRequest(`smartcards: more card lists than e-mail addresses (${p.smartcards!.length} for ${p.emails.length}; they are mapped one to one)`);
    }
    const cardsFor = (i: number) => p.smartcards?.[i] ?? [];
    // Cards go to new members only (a re-invited user's were released at removal), so any number held by an
    // active user, or listed twice in the call, would be shared: refused (POST /invites has no allow_duplicates).
    const taken = users.newlyShared(
      null,
      p.emails.flatMap((_e, i) => cardsFor(i).map((c) => c.number)),
    );
    if (taken.length > 0) {
      throw new BadRequest(`smartcard number(s) already in use: ${taken.map((n) => `…${n.slice(-4)}`).join(', ')}`);
    }
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
    // Prepared once for the whole list (not once per address).
    const addMember = db.prepare('INSERT OR IGNORE INTO group_members (group_id, member_id) VALUES (?, ?)');
    const queueMail = db.prepare('INSERT INTO mail_outbox (recipient, subject, body, created_at) VALUES (?, ?, ?, ?)');
    db.transaction(() => {
      p.emails.forEach((raw, i) => {
        const email = emailParam.safeParse(raw);
        if (!email.success) {
          result.invalid.push(raw);
          return;
        }
        const { user, created } = users.ensure(email.data.toLowerCase(), 'USER', now);
        if (!created) {
          result.exists.push(user.email);
          return;
        }
        result.added.push(user.email);
        result.add_ids.push(user.email_id);
        if (cardsFor(i).length > 0) users.replaceSmartcards(user.email_id, cardsFor(i));
        for (const g of groupRows) addMember.run(g.group_id, user.email_id);
        if (sendEmail) {
          queueMail.run(
            user.email,
            'You are invited to the access-control service',
            `Hello,\n\nyou have been invited. Create your account and set a password with the link your administrator gives you.\n`,
            now,
          );
          result.invited.push(user.email);
        }
      });
    })();
    if (sendEmail) ctx.mailQueued();
    return {
      success: `${result.added.length} user(s) added, ${result.exists.length} already there, ${result.invalid.length} invalid`,
      ...result,
      group_names: groupRows.map((g) => g.name),
      send_email: sendEmail,
    };
  });
}
