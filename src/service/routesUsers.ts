import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { successAnswerSchema, userListSchema, userSmartcardsSchema } from '../api/answers.js';
import { userDetailSchema } from '../api/shapes.js';
import { RANKS } from './apiKeys.js';
import { sharingRefusal } from './cardSharing.js';
import { BadRequest, boolParam, emailParam, intParam, jsonArrayParam, parseParams, smartcardParam as smartcard } from './params.js';
import { refuseIfOwned } from './identity/ownership.js';
import { dropUserFromLinks } from './linkStore.js';
import { documented } from './openapi/routeDoc.js';
import { REQUEST_LIMITS as LIMITS } from './requestLimits.js';
import type { RouteContext } from './routeContext.js';
import { JSON_CONTENT_TYPE, userAnswers } from './userList.js';

// Built once: a zod object schema costs more to build than to check.
const listParams = z.object({
  email: boolParam.optional().describe("true: each user's name is followed by their e-mail"),
  user_tag: z.enum(['GUEST', 'USER']).optional().describe('only the users of this tag'),
});
const emailIdParams = z.object({ email_id: intParam });
const removeParams = z.object({
  email_id: intParam.optional().describe('the user (taken first when both are given)'),
  email: emailParam.optional().describe('the user, by e-mail'),
});
const smartcardParams = z.object({
  email_id: intParam,
  smartcards: jsonArrayParam(smartcard, { field: 'smartcards', max: LIMITS.perUser }).describe('every card and PIN the user holds after the call'),
  allow_duplicates: boolParam.optional().describe('true: a number another user holds may be given too'),
});
const usernameParams = z.object({
  email_id: intParam,
  computer_usernames: jsonArrayParam(z.object({ computer_username: z.string().min(1).max(100) }), { field: 'computer_usernames', max: LIMITS.usernames }),
});
const rankParams = z.object({ admin_user_id: intParam.describe("the user's user_id"), rank: z.enum(RANKS as [string, ...string[]]) });
const NO_USER = 'No user with that email_id.';

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
  const listDoc = { summary: 'Every user of the organization (list form).', tag: 'Users', key: 'any', params: listParams, answer: userListSchema } as const;
  app.get('/multipleusers', documented(listDoc), async (request, reply) => {
    const p = params(listParams, request);
    return reply.type(JSON_CONTENT_TYPE).send(await answers.listJson(p.email ?? false, p.user_tag));
  });

  const detailDoc = {
    summary: 'One user in detail: policies, computer usernames, cards and PINs.',
    description: 'PINs are masked ("****") to a REGULAR key (docs/reference-service.md, "Who reads PINs").',
    tag: 'Users',
    key: 'any',
    params: emailIdParams,
    answer: userDetailSchema,
    statuses: { 404: NO_USER },
  } as const;
  app.get('/user', documented(detailDoc), async (request, reply) => {
    const p = params(emailIdParams, request);
    const json = await answers.detailJson(p.email_id, ctx.pinMaskFor(request));
    if (json === undefined) throw new BadRequest(`no user with email_id ${p.email_id}`, 404);
    return reply.type(JSON_CONTENT_TYPE).send(json);
  });

  const removeDoc = {
    summary: 'Removes a user from the organization, with their cards, and from their guest links.',
    description: 'Give email_id or email; no such user is a 400.',
    tag: 'Users',
    key: 'ADMIN',
    params: removeParams,
    answer: successAnswerSchema,
    statuses: { 409: 'The user is owned by SCIM or LDAP (docs/identity-sources.md): the message says where to remove them.' },
  } as const;
  app.delete('/user', documented(removeDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(removeParams, request);
    if (p.email_id === undefined && p.email === undefined) throw new BadRequest('give email_id or email');
    // email_id takes precedence when both are given. Found and removed in one transaction; its guest links after
    // it (that publishes to the doors).
    const user = await ctx.db.transaction(async () => {
      const found = p.email_id !== undefined ? await users.get(p.email_id) : await users.byEmail(p.email!);
      if (!found) throw new BadRequest(`no user with ${p.email_id !== undefined ? `email_id ${p.email_id}` : `e-mail ${p.email}`}`);
      refuseIfOwned(found.email, found.source, 'removal', ctx.identity);
      await users.remove(found.email_id, ctx.clock.wallNow());
      return found;
    });
    await dropUserFromLinks(ctx, user.email);
    return { success: `removed ${user.email} (${user.username}) from the organization` };
  });

  const cardsDoc = {
    summary: "A user's cards and PINs.",
    description: 'PINs are masked ("****") to a REGULAR key.',
    tag: 'Users',
    key: 'any',
    params: emailIdParams,
    answer: userSmartcardsSchema,
    statuses: { 404: NO_USER },
  } as const;
  app.get('/modifysmartcard', documented(cardsDoc), async (request) => {
    const p = params(emailIdParams, request);
    const cards = await users.smartcards((await userOr(p.email_id, 404)).email_id);
    return { email_id: p.email_id, smartcards: ctx.pinMaskFor(request)?.cards(cards) ?? cards };
  });

  const modifySmartcards = async (request: FastifyRequest) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(smartcardParams, request);
    // The check and the change in one transaction: a number given to another user meanwhile (by another request or
    // service process) is seen, never shared.
    const user = await ctx.db.transaction(async () => {
      const found = await userOr(p.email_id);
      refuseIfOwned(found.email, found.source, 'cards', ctx.identity);
      if (!p.allow_duplicates) {
        // Numbers the user already holds never count: re-saving an unchanged list always works.
        const refusal = sharingRefusal(await users.sharing(found.email_id, p.smartcards), true);
        if (refusal !== null) throw new BadRequest(refusal);
      }
      await users.replaceSmartcards(found.email_id, p.smartcards);
      return found;
    });
    return { success: `${p.smartcards.length} smartcard(s) set for ${user.email}` };
  };
  const setCardsDoc = {
    summary: "Replaces a user's cards and PINs (an empty list removes them all).",
    description: 'A number another active user holds is refused unless allow_duplicates. The body is at most 64 KiB.',
    tag: 'Users',
    key: 'ADMIN',
    params: smartcardParams,
    answer: successAnswerSchema,
    statuses: {
      409: "The user's cards come from SCIM or LDAP (an attribute the site maps): the message says where to change them.",
      413: `More than ${LIMITS.perUser} smartcards.`,
    },
  } as const;
  app.put('/modifysmartcard', documented(setCardsDoc, { bodyLimit: LIMITS.smartcardBody }), modifySmartcards);
  app.put('/modifysmartcards', documented(setCardsDoc, { bodyLimit: LIMITS.smartcardBody }), modifySmartcards);

  const usernamesDoc = {
    summary: "Replaces a user's computer usernames (an empty list removes them all).",
    tag: 'Users',
    key: 'ADMIN',
    params: usernameParams,
    answer: successAnswerSchema,
    statuses: { 413: `More than ${LIMITS.usernames} computer usernames.` },
  } as const;
  app.put('/modifyallusernames', documented(usernamesDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(usernameParams, request);
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

  const rankDoc = { summary: "Sets a user's rank.", tag: 'Users', key: 'SUPER', params: rankParams, answer: successAnswerSchema } as const;
  app.put('/modifyrank', documented(rankDoc), async (request) => {
    ctx.requireRank(request, 'SUPER');
    const p = params(rankParams, request);
    if (!(await users.setRank(p.admin_user_id, p.rank as (typeof RANKS)[number]))) throw new BadRequest(`no user with user_id ${p.admin_user_id}`);
    return { success: `user ${p.admin_user_id} is now ${p.rank}` };
  });

  const promoteDoc = { summary: 'Promotes a GUEST user to USER.', tag: 'Users', key: 'ADMIN', params: emailIdParams, answer: successAnswerSchema } as const;
  app.put('/promoteguest', documented(promoteDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(emailIdParams, request);
    // Read and promoted in one transaction: of two concurrent calls, one promotes, the other answers "not a guest".
    const user = await ctx.db.transaction(async () => {
      const found = await userOr(p.email_id);
      if (found.tag === 'USER') throw new BadRequest(`${found.email} is not a guest`);
      await users.promote(found.email_id);
      return found;
    });
    return { success: `${user.email} promoted from GUEST to USER` };
  });

  const suspendDoc = {
    summary: 'Suspends an active user, or makes a suspended one active again.',
    description: "A suspended guest's card leaves their guest links.",
    tag: 'Users',
    key: 'ADMIN',
    params: emailIdParams,
    answer: successAnswerSchema,
    statuses: { 409: 'The user is owned by SCIM or LDAP (docs/identity-sources.md): the message says where to suspend or enable them.' },
  } as const;
  app.put('/togglesuspension', documented(suspendDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(emailIdParams, request);
    const { user, suspended } = await ctx.db.transaction(async () => {
      const found = await userOr(p.email_id);
      refuseIfOwned(found.email, found.source, 'suspension', ctx.identity);
      return { user: found, suspended: await users.toggleSuspension(found.email_id) };
    });
    // A suspended guest's card leaves their guest links (it does not come back when unsuspended: make a new link).
    if (suspended) await dropUserFromLinks(ctx, user.email);
    return { success: `${user.email} is now ${suspended ? 'SUSPENDED' : 'ACTIVE'}` };
  });
}
