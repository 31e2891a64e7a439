import type { FastifyInstance } from 'fastify';
import { ApiKeys } from '../../apiKeys.js';
import type { RouteContext } from '../../routeContext.js';
import { ScimError } from './scimErrors.js';

/** What a 401 under /scim/v2 says the client needs (RFC 6750, the bearer scheme SCIM's providers use). */
export const WWW_AUTHENTICATE = 'Bearer realm="door-agent SCIM"';

/**
 * The SCIM token's check (docs/identity-sources.md, "The token"), in an onRequest hook of the /scim/v2 scope: from
 * the Authorization header only, so a request without a valid token never has its body read. Only a key of scope
 * scim (`door-agent service key create --rank ADMIN --scope scim`) opens /scim/v2, and it opens nothing else.
 */
export function registerScimAuth(scope: FastifyInstance, ctx: Pick<RouteContext, 'db' | 'clock'>): void {
  const keys = new ApiKeys(ctx.db);
  scope.addHook('onRequest', async (request) => {
    // The scheme is case-insensitive (RFC 9110), and spaces after it are tolerated.
    const bearer = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(request.headers.authorization ?? '');
    if (bearer === null) throw new ScimError(401, 'a SCIM token is required: Authorization: Bearer <token of door-agent service key create --scope scim>');
    const rank = await keys.verifyScim(bearer[1]!, ctx.clock.wallNow());
    if (rank === null)
      throw new ScimError(401, 'the SCIM token is not valid or has expired: make one with door-agent service key create --rank ADMIN --scope scim');
    if (rank !== 'ADMIN' && rank !== 'SUPER') throw new ScimError(403, `a SCIM token needs rank ADMIN (this one: ${rank})`);
    request.rank = rank;
    request.caller = 'SCIM';
  });
}
