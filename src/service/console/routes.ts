import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { ApiKeys } from '../apiKeys.js';
import { BadRequest } from '../badRequest.js';
import { parseFormLists } from '../http.js';
import type { ConsoleOptions } from '../options.js';
import type { RouteContext } from '../routeContext.js';
import { CONSOLE_CSS, CONSOLE_JS, FAVICON_SVG } from './assets.js';
import { type ConsoleContext, redirectWithFlash, sendHtml } from './context.js';
import { answerText, type ApiDelegation } from './delegation.js';
import { formFields } from './formFields.js';
import { html } from './html.js';
import { page, publicPage, type PageName } from './layout.js';
import { ConsoleOrigin } from './ownOrigin.js';
import { registerAgentPage } from './agentPage.js';
import { registerAgents } from './agents.js';
import { registerDoors } from './doors.js';
import { registerEvents } from './events.js';
import { registerIdentity } from './identity.js';
import { registerLinks } from './links.js';
import { registerLive } from './live.js';
import { registerPeople } from './people.js';
import { registerRollouts } from './rollouts.js';
import { registerWebhooks } from './webhooks.js';
import { registerReports } from './reports.js';
import { bannerFor, registerRestoreAccept } from './restoreBanner.js';
import { cookieValue, registerSignIn } from './signIn.js';
import { holderRank, type SessionHolder } from './sessionHolder.js';
import { SessionStore } from './sessions.js';
import { SiteTime } from './siteTime.js';
import type { SiteFeed } from './siteFeed.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A console route open without a session (sign-in, the assets). */
    signedOut?: boolean;
    /** The fields of a form's multiple choice (formFields.ts): always a list; every other field is taken once. */
    formLists?: readonly string[];
  }
}

const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
const plain = (reply: FastifyReply, status: number, text: string) => reply.code(status).type('text/plain; charset=utf-8').send(text);
/** The console page a URL belongs to (its navigation), if any. */
const sectionOf = (url: string) =>
  /^\/console\/(people|doors|links|events|agents|rollouts|reports|webhooks|identity)(?:[/?]|$)/.exec(url)?.[1] as PageName | undefined;

/**
 * The operator's console under /console (docs/reference-service.md, "The console"): server-rendered pages over the
 * same stores and, for every change, the API's own routes (console/delegation.ts). Its own session check stands in
 * for the API key check on its routes (`config.sessionAuth`).
 */
export function registerConsole(
  app: FastifyInstance,
  api: RouteContext,
  options: {
    console: ConsoleOptions;
    feed: SiteFeed | null;
    mailConfigured: boolean;
    delegation: ApiDelegation;
    publicUrl?: string;
    listen?: string;
  },
): void {
  if (options.mailConfigured && options.publicUrl === undefined) {
    throw new Error('the console mails sign-in links from server.publicUrl only: set it (the address operators open, e.g. https://doors.example.org)');
  }
  const limits = { idleMs: options.console.sessionMinutes * 60_000, maxMs: options.console.maxSessionHours * 3_600_000 };
  const keys = new ApiKeys(api.db);
  // Each use asks the holder's rank now: a user suspended or demoted, a key expired, is signed out at once.
  const rankOf = (holder: SessionHolder) => holderRank(holder, { users: api.users, keys, now: api.clock.wallNow() });
  const ctx: ConsoleContext = {
    app,
    api,
    sessions: new SessionStore(api.db, api.clock, limits, rankOf),
    feed: options.feed,
    delegation: options.delegation,
    mailConfigured: options.mailConfigured,
    origin: new ConsoleOrigin(app, options.publicUrl, options.listen),
    keys,
    time: new SiteTime(options.console.timezone ?? new Intl.DateTimeFormat().resolvedOptions().timeZone, () => api.clock.wallNow()),
  };
  /** Where an action's refusal goes back to: the console page it was posted from (Referer, this origin), else People. */
  const backOf = (request: FastifyRequest) => {
    const referer = request.headers.referer;
    if (!referer || ctx.origin.refusal(request) !== null) return '/console/people';
    const path = URL.canParse(referer) ? new URL(referer).pathname : '';
    return path.startsWith('/console/') ? path : '/console/people';
  };

  app.register(async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.config = { ...route.config, sessionAuth: true };
    });
    // A form's repeated fields kept (a multiple choice), for the form check below; the API's parser keeps the last.
    scope.removeContentTypeParser('application/x-www-form-urlencoded');
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer' }, (_request, body, done) => {
      try {
        done(null, parseFormLists(body as Buffer));
      } catch (err) {
        done(err as Error, undefined);
      }
    });
    scope.addHook('onRequest', async (request, reply) => {
      if (request.routeOptions.config.signedOut) return;
      const cookie = cookieValue(request);
      const found = await ctx.sessions.use(cookie);
      if ('session' in found) {
        request.consoleSession = found.session;
        request.rank = found.session.rank;
        // A page's banner, read as the page is asked for (an action's refusal shows none).
        if (request.method === 'GET' && sectionOf(request.url) !== undefined) request.consoleSession.banner = await bannerFor(ctx, found.session);
        return;
      }
      // A first visit (no cookie) is no error: the sign-in form, plainly. An ended session says so.
      const why = cookie === undefined ? null : found.problem === 'ended' ? 'ended' : 'expired';
      if (request.method === 'GET' && !request.url.startsWith('/console/live') && !request.url.startsWith('/console/people/search')) {
        return reply
          .code(303)
          .header('location', why === null ? '/console/signin' : `/console/signin?m=${why}`)
          .send();
      }
      return plain(reply, 401, 'Your console session has ended: sign in again at /console/signin');
    });
    // A message set or shown by this request is stored before the answer leaves: the next page may be another
    // process's (several service processes behind a balancer).
    scope.addHook('onSend', async (request, _reply, payload) => {
      if (request.consoleSession) await ctx.sessions.keepFlash(request.consoleSession);
      return payload;
    });
    // Every POST: this origin (ownOrigin.ts), each field once but a multiple choice's, and (within a session) the
    // session's CSRF token from the form.
    scope.addHook('preHandler', async (request, reply) => {
      if (request.method !== 'POST') return;
      const refused = ctx.origin.refusal(request);
      if (refused !== null) return plain(reply, 403, refused);
      const form = formFields(request.body, request.routeOptions.config.formLists ?? []);
      if ('refused' in form) return plain(reply, 400, `refused: ${form.refused}`);
      request.body = form.fields;
      const session = request.consoleSession;
      if (!session) return;
      const token = form.fields.csrf;
      if (typeof token !== 'string' || !same(token, session.csrf)) {
        return plain(reply, 403, 'refused: the form is out of date (its CSRF token does not match): reload the page');
      }
    });
    // One answer for every refusal: a rank refusal reads "This needs rank ADMIN: you are signed in as REGULAR." on a
    // page and after an action alike, and only a failure of the service itself (5xx) is logged as an error.
    scope.setErrorHandler((err: Error & { statusCode?: number }, request, reply: FastifyReply) => {
      const session = request.consoleSession;
      const status = err instanceof z.ZodError ? 400 : err instanceof BadRequest ? err.status : (err.statusCode ?? 500);
      const text =
        err instanceof z.ZodError
          ? `Not understood: ${err.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')}`
          : status === 403 && session
            ? answerText({ status, body: { error: err.message } }, session.rank).text
            : status < 500
              ? err.message
              : 'Something went wrong on the service (logged).';
      if (status >= 500) api.logger.error({ err, url: request.url.split('?')[0] }, 'console request failed');
      const flash = { kind: 'error' as const, text };
      if (session && request.method === 'POST') return redirectWithFlash(request, reply, backOf(request), flash);
      const title = status === 403 ? 'Not allowed' : status < 500 ? 'Not understood' : 'Something went wrong';
      const name = sectionOf(request.url);
      const body = html`<p><a href="/console">Back to the console</a></p>`;
      return sendHtml(
        reply,
        session && name
          ? page({ name, title, who: session.who, rank: session.rank, csrf: session.csrf, banner: session.banner, flash, body })
          : publicPage(title, html`<p class="flash error" role="alert">${text}</p>${body}`),
        Math.min(status, 500),
      );
    });

    const asset =
      (body: string, type: string, maxAgeSeconds = 300) =>
      async (_request: FastifyRequest, reply: FastifyReply) =>
        reply.type(type).header('cache-control', `public, max-age=${maxAgeSeconds}`).send(body);
    scope.get('/console/assets/console.css', { config: { signedOut: true } }, asset(CONSOLE_CSS, 'text/css; charset=utf-8'));
    scope.get('/console/assets/console.js', { config: { signedOut: true } }, asset(CONSOLE_JS, 'text/javascript; charset=utf-8'));
    // The icon, linked from every page; /favicon.ico too, which browsers ask for on their own (else a 401 each load).
    const icon = asset(FAVICON_SVG, 'image/svg+xml', 86_400);
    scope.get('/console/assets/favicon.svg', { config: { signedOut: true } }, icon);
    scope.get('/favicon.ico', { config: { signedOut: true } }, icon);
    scope.get('/console', async (_request, reply) => reply.code(303).header('location', '/console/people').send());

    registerSignIn(scope, ctx, Math.round(limits.maxMs / 1000));
    registerPeople(scope, ctx);
    registerDoors(scope, ctx);
    registerLinks(scope, ctx);
    registerEvents(scope, ctx);
    registerAgents(scope, ctx);
    registerAgentPage(scope, ctx);
    registerRollouts(scope, ctx);
    registerWebhooks(scope, ctx);
    registerReports(scope, ctx);
    registerIdentity(scope, ctx);
    registerRestoreAccept(scope, ctx, backOf);
    registerLive(scope, ctx);
  });
}
