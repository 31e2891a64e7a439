import * as z from 'zod';
import { isWildcardHost, splitListen } from '../util/listenAddress.js';

/**
 * `server.publicUrl`: where operators open the reference service, as their browsers see it (`https://doors.example.org`
 * behind a TLS proxy). The console's mailed sign-in links are built from it and its forms must come from its origin,
 * never from what a request's headers say (issue 51 item 1; docs/reference-service.md, "The console").
 */

const EXAMPLE = 'e.g. https://doors.example.org';

/** Why a value cannot be the service's public URL (an origin: http or https, no path but "/", no query or fragment), or null. */
function publicUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `not an absolute URL: give the address operators open, ${EXAMPLE}`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must be an http:// or https:// URL, ${EXAMPLE}`;
  if (url.username !== '' || url.password !== '') return `must carry no user name or password, ${EXAMPLE}`;
  if (url.pathname !== '/') return `must be the service's address with no path (not ${url.pathname}): the console is always under /console`;
  if (url.search !== '' || value.includes('?')) return `must have no query (?...), ${EXAMPLE}`;
  if (url.hash !== '' || value.includes('#')) return `must have no fragment (#...), ${EXAMPLE}`;
  return null;
}

export const publicUrlSchema = z.string().superRefine((value, ctx) => {
  const problem = publicUrlProblem(value);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
});

interface ServerPart {
  listen: string;
  publicUrl?: string | undefined;
  smtp?: unknown;
  console?: { enabled: boolean } | undefined;
  fleet?: unknown;
}

/** Whether the console signs in by mail (it is on, and a mail server is configured): its links need the public URL. */
const mailsSignInLinks = (server: ServerPart) => server.console?.enabled === true && server.smtp !== undefined;

/** Why `server.publicUrl` must be set and is not (the message for that key), or null. */
export function missingPublicUrl(server: ServerPart): string | null {
  if (server.publicUrl !== undefined) return null;
  if (server.fleet !== undefined && !mailsSignInLinks(server)) {
    return `required with server.fleet: the address agents enrol with and sync from, ${EXAMPLE}; each agent's grant names it (docs/fleet.md)`;
  }
  if (!mailsSignInLinks(server)) return null;
  return `required when the console mails sign-in links (server.console.enabled with server.smtp): the address operators open, ${EXAMPLE}; the links are built from it, never from a request`;
}

/** What `config check` warns of: a console on every address without a public URL refuses every form. */
export function publicUrlWarnings(server: ServerPart): string[] {
  if (server.console?.enabled !== true || server.publicUrl !== undefined || !isWildcardHost(splitListen(server.listen).host)) return [];
  return [
    `server.listen ${server.listen} is every address and server.publicUrl is not set: the console cannot tell its own origin and refuses every form; set server.publicUrl to the address operators open (${EXAMPLE})`,
  ];
}
