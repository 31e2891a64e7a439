import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import type { ConsoleOptions } from '../options.js';
import type { RouteContext } from '../routeContext.js';
import { CONSOLE_CSS, CONSOLE_JS } from './assets.js';
import { type ConsoleContext, redirectWithFlash, sendHtml } from './context.js';
import type { ApiDelegation } from './delegation.js';
import { html } from './html.js';
import { publicPage } from './layout.js';
import { registerAgents } from './agents.js';
import { registerDoors } from './doors.js';
import { registerEvents } from './events.js';
import { registerLinks } from './links.js';
import { registerLive } from './live.js';
import { registerPeople } from './people.js';
import { cookieValue, registerSignIn } from './signIn.js';
import { SessionStore } from './sessions.js';
import type { SiteFeed } from './siteFeed.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A console route open without a session (sign-in, the assets). */
    signedOut?: boolean;
  }
}

const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** A POST must come from a console page of this very origin (Origin, else Referer): another site cannot post here. */
function fromThisOrigin(request: FastifyRequest): boolean {
  const origin = `${request.protocol}://${request.headers.host ?? ''}`;
  const given = request.headers.origin;
  if (typeof given === 'string' && given !== 'null') return given === origin;
  const referer = request.headers.referer;
  return typeof referer === 'string' && (referer === origin || referer.startsWith(`${origin}/`));
}

/**
 * The operator's console under /console (docs/reference-service.md, "The console"): server-rendered pages over the
 * same stores and, for every change, the API's own routes (console/delegation.ts). Its own session check stands in
 * for the API key check on its routes (`config.sessionAuth`).
 */
export function registerConsole(
  app: FastifyInstance,
  api: RouteContext,
  options: { console: ConsoleOptions; feed: SiteFeed | null; mailConfigured: boolean; delegation: ApiDelegation },
): void {
  const limits = { idleMs: options.console.sessionMinutes * 60_000, maxMs: options.console.maxSessionHours * 3_600_000 };
  const ctx: ConsoleContext = {
    app,
    api,
    sessions: new SessionStore(api.clock, limits),
    feed: options.feed,
    delegation: options.delegation,
    mailConfigured: options.mailConfigured,
  };

  app.register(async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.config = { ...route.config, sessionAuth: true };
    });
    scope.addHook('onRequest', async (request, reply) => {
      if (request.routeOptions.config.signedOut) return;
      const cookie = cookieValue(request);
      const found = ctx.sessions.use(cookie);
      if ('session' in found) {
        request.consoleSession = found.session;
        request.rank = found.session.rank;
        return;
      }
      const why = cookie === undefined ? 'required' : 'expired';
      if (request.method === 'GET' && !request.url.startsWith('/console/live') && !request.url.startsWith('/console/people/search')) {
        return reply.code(303).header('location', `/console/signin?m=${why}`).send();
      }
      return reply.code(401).type('text/plain; charset=utf-8').send('Your console session has ended: sign in again at /console/signin');
    });
    // Every POST: this origin, and (within a session) the session's CSRF token from the form.
    scope.addHook('preHandler', async (request, reply) => {
      if (request.method !== 'POST') return;
      if (!fromThisOrigin(request))
        return reply.code(403).type('text/plain; charset=utf-8').send('refused: this form was not sent from a console page of this site');
      const session = request.consoleSession;
      if (!session) return;
      const token = (request.body as Record<string, unknown> | undefined)?.csrf;
      if (typeof token !== 'string' || !same(token, session.csrf)) {
        return reply.code(403).type('text/plain; charset=utf-8').send('refused: the form is out of date (its CSRF token does not match): reload the page');
      }
    });
    scope.setErrorHandler((err: Error & { statusCode?: number }, request, reply: FastifyReply) => {
      const text =
        err instanceof z.ZodError
          ? `Not understood: ${err.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')}`
          : err.statusCode !== undefined && err.statusCode < 500
            ? err.message
            : 'Something went wrong on the service (logged).';
      if (!(err instanceof z.ZodError) && (err.statusCode ?? 500) >= 500) api.logger.error({ err, url: request.url.split('?')[0] }, 'console request failed');
      if (request.consoleSession && request.method === 'POST') {
        const back = request.headers.referer && fromThisOrigin(request) ? new URL(request.headers.referer).pathname : '/console/people';
        return redirectWithFlash(request, reply, back, { kind: 'error', text });
      }
      return sendHtml(
        reply,
        publicPage('Not understood', html`<p class="flash error" role="alert">${text}</p><p><a href="/console">Back to the console</a></p>`),
        400,
      );
    });

    const asset = (body: string, type: string) => async (_request: FastifyRequest, reply: FastifyReply) =>
      reply.type(type).header('cache-control', 'public, max-age=300').send(body);
    scope.get('/console/assets/console.css', { config: { signedOut: true } }, asset(CONSOLE_CSS, 'text/css; charset=utf-8'));
    scope.get('/console/assets/console.js', { config: { signedOut: true } }, asset(CONSOLE_JS, 'text/javascript; charset=utf-8'));
    scope.get('/console', async (_request, reply) => reply.code(303).header('location', '/console/people').send());

    registerSignIn(scope, ctx, Math.round(limits.maxMs / 1000));
    registerPeople(scope, ctx);
    registerDoors(scope, ctx);
    registerLinks(scope, ctx);
    registerEvents(scope, ctx);
    registerAgents(scope, ctx);
    registerLive(scope, ctx);
  });
}
