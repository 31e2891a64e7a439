import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeys } from '../apiKeys.js';
import type { RouteContext } from '../routeContext.js';
import type { ApiDelegation } from './delegation.js';
import type { Html } from './html.js';
import type { Flash } from './layout.js';
import type { ConsoleOrigin } from './ownOrigin.js';
import type { Session, SessionStore } from './sessions.js';
import type { SiteFeed } from './siteFeed.js';
import type { SiteTime } from './siteTime.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The console session of the request (console routes only, after the session check). */
    consoleSession?: ConsoleSession;
  }
}

/** A request's session: its message for the page, and (a page's GET) the banner every page shows (restoreBanner.ts). */
export type ConsoleSession = Session & { flash?: Flash; banner?: Html };

/** What each console page module is given (console/routes.ts builds it). */
export interface ConsoleContext {
  app: FastifyInstance;
  api: RouteContext;
  sessions: SessionStore;
  /** The live site: null without an mqtt section (doors, events and agents then say so). */
  feed: SiteFeed | null;
  delegation: ApiDelegation;
  /** Whether a mailer is configured (server.smtp): the e-mail sign-in needs one (and server.publicUrl). */
  mailConfigured: boolean;
  /** Where the console is opened: its forms' origin, its mailed links, its cookie's Secure. */
  origin: ConsoleOrigin;
  /** The service's API keys: an API-key sign-in, and each use of a session signed in with one. */
  keys: ApiKeys;
  /** Every time a page shows, in the site's zone (server.timezone), and the times a form is given. */
  time: SiteTime;
}

/** The session of a console request (set by the session check before every handler but sign-in). */
export function sessionOf(request: FastifyRequest): ConsoleSession {
  return request.consoleSession!;
}

/** Takes the session's message for the next page (set by an action before its redirect). */
export function takeFlash(request: FastifyRequest): Flash | undefined {
  const session = sessionOf(request);
  const flash = session.flash;
  delete session.flash;
  return flash;
}

/** After an action: its message for the next page, and back there (303: the browser GETs it). */
export function redirectWithFlash(request: FastifyRequest, reply: FastifyReply, to: string, flash: Flash): FastifyReply {
  sessionOf(request).flash = flash;
  return reply.code(303).header('location', to).send();
}

export function sendHtml(reply: FastifyReply, body: Html, status = 200): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(body.text);
}
