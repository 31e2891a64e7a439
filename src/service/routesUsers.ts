import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { RANKS } from './apiKeys.js';
import { BadRequest, boolParam, emailParam, intParam, jsonArrayParam, parseParams, smartcardParam as smartcard } from './params.js';
import { dropUserFromLinks } from './linkStore.js';
import { REQUEST_LIMITS as LIMITS } from './requestLimits.js';
import type { RouteContext } from './routeContext.js';
import { JSON_CONTENT_TYPE, userAnswers } from './userList.js';

// Built once: a zod object schema costs more to build than to check.
const listParams = z.object({ email: boolParam.optional(), user_tag: z.enum(['GUEST', 'USER']).optional() });
const detailParams = z.object({ email_id: intParam });

/** Users, their cards and usernames, ranks, tags, suspension and removal (docs/access-control-api.md, Endpoints). */
export function registerUserRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { users } = ctx;
  const params = <T extends z.ZodType>(schema: T, request: FastifyRequest) => parseParams(schema, request.query, request.body);
  // GET /user answers "any non-200" for an unknown user (404 here); the simple PUT calls answer 400.
  const userOr = async (emailId: number, status = 400) => {
    const user = await users.get(emailId);
    if (!user) throw new BadRequest(`no user with email_id ${emailId}`, status);
    return user;
  };

  // Both answers are serialized once and served as the same bytes until the data changes (userList.ts).
  const answers = userAnswers(ctx.db);
  app.get('/multipleusers', async (request, reply) => {
    const p = params(listParams, request);
    return reply.type(JSON_CONTENT_TYPE).send(await answers.listJson(p.email ?? false, p.user_tag));
  });

  app.get('/user', async (request, reply) => {
    const p = params(detailParams, request);
    const json = await answers.detailJson(p.email_id, ctx.pinMaskFor(request));
    if (json === undefined) throw new BadRequest(`no user with email_id ${p.email_id}`, 404);
    return reply.type(JSON_CONTENT_TYPE).send(json);
  });

  app.delete('/user', async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(z.object({ email_id: intParam.optional(), email: emailParam.optional() }), request);
    if (p.email_id === undefined && p.email === undefined) throw new BadRequest('give email_id or email');
    // email_id takes precedence when both are given. Found and removed in one transaction; its guest links after
    // it (that publishes to the doors).
    const user = await ctx.db.transaction(async () => {
      const found = p.email_id !== undefined ? await users.get(p.email_id) : await users.byEmail(p.email!);
      if (!found) throw new BadRequest(`no user with ${p.email_id !== undefined ? `email_id ${p.email_id}` : `e-mail ${p.email}`}`);
      await users.remove(found.email_id, ctx.clock.wallNow());
      return found;
    });
    await dropUserFromLinks(ctx, user.email);
    return { success: `removed ${user.email} (${user.username}) from the organization` };
  });

  app.get('/modifysmartcard', async (request) => {
    const p = params(z.object({ email_id: intParam }), request);
    const cards = await users.smartcards((await userOr(p.email_id, 404)).email_id);
    return { email_id: p.email_id, smartcards: ctx.pinMaskFor(request)?.cards(cards) ?? cards };
  });

  const modifySmartcards = async (request: FastifyRequest) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(
      z.object({
        email_id: intParam,
        smartcards: jsonArrayParam(smartcard, { field: 'smartcards', max: LIMITS.perUser }),
        allow_duplicates: boolParam.optional(),
      }),
      request,
    );
    // The check and the change in one transaction: a number given to another user meanwhile (by another request or
    // service process) is seen, never shared.
    const user = await ctx.db.transaction(async () => {
      const found = await userOr(p.email_id);
      if (!p.allow_duplicates) {
        // Numbers the user already holds never count: re-saving an unchanged list always works.
        const taken = await users.newlyShared(
          found.email_id,
          p.smartcards.map((c) => c.number),
        );
        if (taken.length > 0) {
          throw new BadRequest(`smartcard number(s) already in use: ${taken.map((n) => `…${n.slice(-4)}`).join(', ')} (set allow_duplicates to allow)`);
        }
      }
      await users.replaceSmartcards(found.email_id, p.smartcards);
      return found;
    });
    return { success: `${p.smartcards.length} smartcard(s) set for ${user.email}` };
  };
  app.put('/modifysmartcard', { bodyLimit: LIMITS.smartcardBody }, modifySmartcards);
  app.put('/modifysmartcards', { bodyLimit: LIMITS.smartcardBody }, modifySmartcards);

  app.put('/modifyallusernames', async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(
      z.object({
        email_id: intParam,
        computer_usernames: jsonArrayParam(z.object({ computer_username: z.string().min(1).max(100) }), { field: 'computer_usernames', max: LIMITS.usernames }),
      }),
      request,
    );
    const user = await ctx.db.transaction(async () => {
      const found = await userOr(p.email_id);
      await users.replaceComputerUsernames(
        found.email_id,
        p.computer_usernames.map((c) => c.computer_username),
      );
      return found;
    });
    return { success: `${p.computer_usernames.length} computer username(s) set for ${user.email}` };
  });

  app.put('/modifyrank', async (request) => {
    ctx.requireRank(request, 'SUPER');
    const p = params(z.object({ admin_user_id: intParam, rank: z.enum(RANKS as [string, ...string[]]) }), request);
    if (!(await users.setRank(p.admin_user_id, p.rank as (typeof RANKS)[number]))) throw new BadRequest(`no user with user_id ${p.admin_user_id}`);
    return { success: `user ${p.admin_user_id} is now ${p.rank}` };
  });

  app.put('/promoteguest', async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(z.object({ email_id: intParam }), request);
    // Read and promoted in one transaction: of two concurrent calls, one promotes, the other answers "not a guest".
    const user = await ctx.db.transaction(async () => {
      const found = await userOr(p.email_id);
      if (found.tag === 'USER') throw new BadRequest(`${found.email} is not a guest`);
      await users.promote(found.email_id);
      return found;
    });
    return { success: `${user.email} promoted from GUEST to USER` };
  });

  app.put('/togglesuspension', async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(z.object({ email_id: intParam }), request);
    const { user, suspended } = await ctx.db.transaction(async () => {
      const found = await userOr(p.email_id);
      return { user: found, suspended: await users.toggleSuspension(found.email_id) };
    });
    // A suspended guest's card leaves their guest links (it does not come back when unsuspended: make a new link).
    if (suspended) await dropUserFromLinks(ctx, user.email);
    return { success: `${user.email} is now ${suspended ? 'SUSPENDED' : 'ACTIVE'}` };
  });
}
