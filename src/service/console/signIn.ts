import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { keyDigest } from '../apiKeys.js';
import { type ConsoleContext, sendHtml } from './context.js';
import { html } from './html.js';
import { flashBox, publicPage, type Flash } from './layout.js';
import { holderRank, type SessionHolder } from './sessionHolder.js';
import { SignInLinks } from './signInLinks.js';
import { SignInThrottle } from './signInThrottle.js';

const COOKIE = 'door_console';
const LINK_TTL_MS = 15 * 60_000;

/**
 * The session cookie: HttpOnly, SameSite=Strict, only under /console, Secure when the console is served over TLS
 * (the connection, or server.publicUrl is https: a TLS proxy in front), never as a request's headers claim.
 */
function sessionCookie(secure: boolean, value: string, maxAgeSeconds: number): string {
  return `${COOKIE}=${value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`;
}

export function cookieValue(request: FastifyRequest): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === COOKIE) return rest.join('=');
  }
  return undefined;
}

const MESSAGES: Record<string, Flash> = {
  expired: { kind: 'error', text: 'Your session has ended (it was idle too long, reached its maximum age, or was signed out): sign in again.' },
  out: { kind: 'ok', text: 'Signed out.' },
  ended: {
    kind: 'error',
    text: 'Your session was ended: you were suspended or removed, your rank changed, or your API key expired. Sign in again if you still may.',
  },
  link: { kind: 'error', text: 'This sign-in link is not valid: it was used already, is older than 15 minutes, or was never sent. Ask for a new one.' },
};

const SENT: Flash = { kind: 'ok', text: 'If this address may sign in, a link is on its way: it works once, within 15 minutes.' };

const minutes = (ms: number) => Math.max(1, Math.ceil(ms / 60_000));

/**
 * Sign-in: with an API key (REGULAR, ADMIN or SUPER; a DOOR key is refused), or, for a user of rank ADMIN or
 * SUPER, by a one-time link mailed to their address (the users have no passwords in this API). The link is built
 * from server.publicUrl; its token is random, kept hashed in the database for 15 minutes (signInLinks.ts), spent at
 * first use and replaced by the next one asked for the same user; every address gets the same answer, and the same
 * throttle (signInThrottle.ts, this process's own).
 */
export function registerSignIn(app: FastifyInstance, ctx: ConsoleContext, maxAgeSeconds: number): void {
  const keys = ctx.keys;
  // At most one live link per user (ADMIN or SUPER), in the database: any process redeems it.
  const links = new SignInLinks(ctx.api.db, LINK_TTL_MS);
  const throttle = new SignInThrottle();
  const now = () => ctx.api.clock.wallNow();

  const form = (flash?: Flash, status = 200, reply?: FastifyReply) => {
    const mail = ctx.mailConfigured
      ? html`<h2>Or with your e-mail (ADMIN and SUPER users)</h2><form method="post" action="/console/signin/email">
<p><label for="email">E-mail address</label><br><input id="email" name="email" type="email" autocomplete="email" required size="40"></p>
<p><button>Mail me a sign-in link</button></p></form>`
      : html``;
    return sendHtml(
      reply!,
      publicPage(
        'Sign in to the console',
        html`${flashBox(flash)}<form method="post" action="/console/signin">
<p><label for="api-key">API key</label><br><input id="api-key" name="api_key" type="password" autocomplete="off" required size="60" aria-describedby="key-help"></p>
<p id="key-help" class="muted">A REGULAR, ADMIN or SUPER key (<code>door-agent service key create</code>). REGULAR keys look and do not change.</p>
<p><button>Sign in</button></p></form>${mail}`,
      ),
      status,
    );
  };

  const open = async (request: FastifyRequest, reply: FastifyReply, rank: 'REGULAR' | 'ADMIN' | 'SUPER', who: string, holder: SessionHolder) => {
    await ctx.sessions.close(cookieValue(request));
    // The holder's rank is asked again at each request (sessionHolder.ts): suspended or demoted, they are signed out.
    const { id } = await ctx.sessions.open(rank, who, holder);
    return reply
      .code(303)
      .header('set-cookie', sessionCookie(ctx.origin.secure(request), id, maxAgeSeconds))
      .header('location', '/console/people')
      .send();
  };

  const signedOut = { config: { sessionAuth: true, signedOut: true } };

  app.get('/console/signin', signedOut, async (request, reply) => {
    const m = z.object({ m: z.string().optional() }).parse(request.query).m;
    // No message: a first visit, the form alone. A message only for what happened (an ended session, a spent link).
    return form(m && Object.hasOwn(MESSAGES, m) ? MESSAGES[m] : undefined, 200, reply);
  });

  app.post('/console/signin', signedOut, async (request, reply) => {
    const key = z
      .object({ api_key: z.string().max(200).default('') })
      .parse(request.body ?? {})
      .api_key.trim();
    const rank = key === '' ? null : await keys.verify(key, now());
    if (rank === 'DOOR') return form({ kind: 'error', text: "A door controller's key cannot sign in: use a REGULAR, ADMIN or SUPER key." }, 403, reply);
    if (rank === null) return form({ kind: 'error', text: 'This API key is not valid or has expired.' }, 401, reply);
    return open(request, reply, rank, 'API key', { kind: 'key', keyDigest: keyDigest(key) });
  });

  app.post('/console/signin/email', signedOut, async (request, reply) => {
    const email = z
      .object({ email: z.string().max(320).default('') })
      .parse(request.body ?? {})
      .email.trim();
    // Counted before the address is looked up: a refusal says nothing about who may sign in.
    const client = request.socket.remoteAddress ?? 'unknown';
    const refused = throttle.take(email, client, ctx.api.clock.monoNow());
    if (refused !== null) {
      const wait = minutes(refused.retryMs);
      if (refused.first) ctx.api.logger.warn({ email, client, limit: refused.limit, retry_minutes: wait }, 'console sign-in link refused: too many asked for');
      reply.header('retry-after', String(Math.ceil(refused.retryMs / 1000)));
      return form({ kind: 'error', text: `Too many sign-in links asked for; try again in ${wait} minute${wait === 1 ? '' : 's'}.` }, 429, reply);
    }
    const user = ctx.mailConfigured && email !== '' ? await ctx.api.users.byEmail(email) : undefined;
    if (user && user.suspended === 0 && (user.rank === 'ADMIN' || user.rank === 'SUPER')) {
      // The link before this one stops working (one live link per user); the link and its mail commit together.
      await ctx.api.db.transaction(async () => {
        const token = await links.issue(user.email_id, now());
        const link = ctx.origin.link(`/console/signin/link?token=${token}`)!;
        await ctx.api.db.run('INSERT INTO mail_outbox (recipient, subject, body, created_at) VALUES (?, ?, ?, ?)', [
          user.email,
          'Your sign-in link to the door-agent console',
          `Hello,\n\nopen this link within 15 minutes to sign in (it works once):\n${link}\n\nIf you did not ask for it, ignore this mail.\n`,
          now(),
        ]);
      });
      ctx.api.mailQueued();
    }
    return form(SENT, 200, reply);
  });

  app.get('/console/signin/link', signedOut, async (request, reply) => {
    const token = z.object({ token: z.string().max(100).default('') }).parse(request.query).token;
    // Spent first, whatever follows: of two requests with the same token, on any processes, one finds it.
    const emailId = await links.redeem(token, now());
    const user = emailId === undefined ? undefined : await ctx.api.users.get(emailId);
    const holder: SessionHolder | null = user ? { kind: 'user', emailId: user.email_id } : null;
    // Its rank now, not when the link was sent: a user demoted or suspended meanwhile does not get in.
    const rank = holder && (await holderRank(holder, { users: ctx.api.users, keys, now: now() }));
    if (!user || !holder || !rank) return reply.code(303).header('location', '/console/signin?m=link').send();
    return open(request, reply, rank, user.email, holder);
  });

  app.post('/console/logout', async (request, reply) => {
    await ctx.sessions.close(cookieValue(request));
    return reply
      .code(303)
      .header('set-cookie', sessionCookie(ctx.origin.secure(request), '', 0))
      .header('location', '/console/signin?m=out')
      .send();
  });
}
