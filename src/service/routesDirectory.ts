import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { intParam, parseParams } from './params.js';
import type { RouteContext } from './server.js';

/**
 * GET /directory?since=REV: an extension beside the seed's API (docs/reference-service.md). The users changed
 * after REV (in the GET /multipleusers item and GET /user detail shapes), the ids removed, the current revision;
 * everything, flagged `full`, without `since`. The ETag names the revision: If-None-Match with it answers 304.
 */
export function registerDirectoryRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.get('/directory', async (request: FastifyRequest, reply: FastifyReply) => {
    const p = parseParams(z.object({ since: intParam.optional() }), request.query, undefined);
    const answer = ctx.directory.answer(p.since, ctx.clock.wallNow());
    const etag = `"dir-${answer.revision}"`;
    reply.header('etag', etag);
    const unchanged = !answer.full && answer.users.length === 0 && answer.removed.length === 0;
    if (unchanged && request.headers['if-none-match'] === etag) return reply.code(304).send();
    const pins = ctx.pinMaskFor(request);
    return pins === null ? answer : { ...answer, details: pins.details(answer.details) };
  });
}
