import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { directoryEtag, historySchema, parseDirectoryEtag, tagSchema, type DirectoryVersion } from '../protocol/directory.js';
import { intParam, parseParams } from './params.js';
import type { RouteContext } from './routeContext.js';

/** If-None-Match names what is answered: the same revision, history and tag (an old agent's "dir-N": the revision). */
function notModified(ifNoneMatch: string | undefined, answer: DirectoryVersion): boolean {
  const held = parseDirectoryEtag(ifNoneMatch);
  if (held === null || held.revision !== answer.revision) return false;
  return held.history === null || (held.history === answer.history && held.tag === answer.tag);
}

/**
 * GET /directory?since=REV&history=ID&tag=TAG: an extension beside the seed's API (docs/reference-service.md). The
 * users changed after REV (in the GET /multipleusers item and GET /user detail shapes), the ids removed, the
 * current revision with its history and tag; everything, flagged `full`, without `since`, or when the caller's
 * history or tag is not this database's (a restore). The ETag names the version (protocol/directory.ts):
 * If-None-Match with it answers 304.
 */
export function registerDirectoryRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.get('/directory', async (request: FastifyRequest, reply: FastifyReply) => {
    const p = parseParams(z.object({ since: intParam.optional(), history: historySchema.optional(), tag: tagSchema.optional() }), request.query, undefined);
    const answer = ctx.directory.answer(p.since, ctx.clock.wallNow(), { history: p.history, tag: p.tag });
    reply.header('etag', directoryEtag(answer));
    const unchanged = !answer.full && answer.users.length === 0 && answer.removed.length === 0;
    if (unchanged && notModified(request.headers['if-none-match'], answer)) return reply.code(304).send();
    const pins = ctx.pinMaskFor(request);
    return pins === null ? answer : { ...answer, details: pins.details(answer.details) };
  });
}
