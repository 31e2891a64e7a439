import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { directoryLevelsSchema, directoryRestoreSchema, resourceGroupsSchema, userDetailSchema, userListItemSchema } from '../api/shapes.js';
import { directoryEtag, historySchema, parseDirectoryEtag, tagSchema, type DirectoryVersion } from '../protocol/directory.js';
import { negotiateEncoding } from './acceptEncoding.js';
import { Overloaded } from './loadGate.js';
import { documented } from './openapi/routeDoc.js';
import { intParam, parseParams } from './params.js';
import type { RouteContext } from './routeContext.js';
import { JSON_CONTENT_TYPE } from './userList.js';

const query = z.object({
  since: intParam.optional().describe('the revision the caller holds: only what changed after it; absent: everything'),
  history: historySchema.optional().describe("the caller's history (from the ETag): another one gets everything"),
  tag: tagSchema.optional().describe("the caller's revision tag (from the ETag): another one gets everything"),
});
/** Read as a plain string: a value that is not one is no coding we know, so identity. */
const acceptEncoding = z.string().optional().catch(undefined);
/** What the route reads of the request's headers (If-None-Match: parseDirectoryEtag). */
const headers = z.object({
  'if-none-match': z.string().optional().describe('the ETag of the answer the caller holds: 304 when it is still the current one'),
  'accept-encoding': acceptEncoding.describe('gzip or br: the answer compressed (Vary: Accept-Encoding)'),
});

/**
 * The answer as the agents read it (sync/streamedAnswers.ts checks it member by member with the same schemas):
 * the users (list form, user_tag always set) and their details by email_id, the ids removed since `since`.
 */
const answer = z.object({
  revision: z.number().int().nonnegative(),
  history: historySchema,
  tag: tagSchema,
  full: z.boolean().describe('true: everything, to replace what the caller holds; false: the changes since `since`'),
  restore: directoryRestoreSchema
    .optional()
    .describe(
      "only while a restore of the service's database awaits acceptance (POST /directory/restore/accept): doors refuse what it grants beyond their caches",
    ),
  users: z.array(userListItemSchema.required({ user_tag: true })),
  details: z.record(z.string().regex(/^[0-9]{1,15}$/), userDetailSchema).describe("each listed user's detail form, by email_id"),
  removed: z.array(z.number().int().nonnegative()),
  levels: directoryLevelsSchema,
  resource_groups: resourceGroupsSchema,
});

/**
 * If-None-Match names what is answered: the same revision, history and tag. An old agent's "dir-N" names only the
 * revision: enough beside its `since` (a delta), not for everything (a full answer), where nothing ties it to this
 * database's history.
 */
function notModified(ifNoneMatch: string | undefined, answer: DirectoryVersion, full: boolean): boolean {
  const held = parseDirectoryEtag(ifNoneMatch);
  if (held === null || held.revision !== answer.revision) return false;
  if (held.history === null) return !full || answer.history === null;
  return held.history === answer.history && held.tag === answer.tag;
}

/**
 * GET /directory?since=REV&history=ID&tag=TAG: an extension beside the seed's API (docs/reference-service.md). The
 * users changed after REV (in the GET /multipleusers item and GET /user detail shapes), the ids removed, the
 * current revision with its history and tag; everything, flagged `full`, without `since`, or when the caller's
 * history or tag is not this database's (a restore). The ETag names the version (protocol/directory.ts):
 * If-None-Match with it answers 304 to a caller that holds it.
 *
 * Answered from the bytes stored for the revision (directoryBytes.ts), gzip or brotli when Accept-Encoding allows
 * (`Vary: Accept-Encoding`). A full answer takes one of `server.maxDirectoryAnswers` places while it is sent: past
 * them, and when no build can start, 503 with Retry-After (server.ts) rather than a wait that times out.
 */
export function registerDirectoryRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const directoryDoc = {
    summary: 'The directory the doors sync: every user with their detail, or what changed since a revision.',
    description: 'An extension of the reference service (docs/reference-service.md, "GET /directory"). PINs are masked to a REGULAR key.',
    tag: 'Directory',
    key: 'any',
    params: query,
    headers,
    answer,
    answerHeaders: { ETag: 'the version answered: send it back as If-None-Match', Vary: 'Accept-Encoding' },
    statuses: {
      304: 'The caller holds the current version (If-None-Match).',
      503: 'Or: the service is sending or building as many directories as it may (server.maxDirectoryAnswers, server.maxDirectoryBuilds).',
    },
  } as const;
  app.get('/directory', documented(directoryDoc), async (request: FastifyRequest, reply: FastifyReply) => {
    const p = parseParams(query, request.query, undefined);
    const planNow = async () => ctx.directory.plan(p.since, ctx.clock.wallNow(), { history: p.history, tag: p.tag });
    // Planned again when another request, whose plan read the database later, already stored a newer revision.
    let plan = await planNow();
    for (let again = 0; again < 3 && ctx.directoryBytes.isBehind(plan.version); again++) plan = await planNow();
    reply.header('etag', directoryEtag(plan.version)).header('vary', 'Accept-Encoding');
    // With or without `since`: a caller that holds the current version gets no body.
    if (notModified(request.headers['if-none-match'], plan.version, plan.full)) return reply.code(304).send();
    let release: (() => void) | null = null;
    if (plan.full) {
      release = ctx.load.answers.tryEnter();
      if (release === null) {
        throw new Overloaded(
          'directory_answers',
          `the service is already sending the full directory to ${ctx.load.answers.max} clients (server.maxDirectoryAnswers; raise it if the machine has the bandwidth)`,
        );
      }
      // Until the answer is sent, or its connection closes: a door reading 100 MB slowly holds its place.
      reply.raw.once('close', release);
    }
    try {
      const encoding = negotiateEncoding(acceptEncoding.parse(request.headers['accept-encoding']));
      const { encoding: sent, body } = ctx.directoryBytes.get({ ...plan, masked: ctx.pinMaskFor(request) !== null }, encoding);
      reply.type(JSON_CONTENT_TYPE);
      if (sent !== 'identity') reply.header('content-encoding', sent);
      // Complete: its length and its bytes. Still being built: its bytes as they come (chunked), from the start.
      if (body.complete) {
        const parts = body.parts();
        reply.header('content-length', body.length);
        return reply.send(parts.length === 1 ? parts[0] : Readable.from(parts, { objectMode: false }));
      }
      return reply.send(Readable.from(body.read(), { objectMode: false }));
    } catch (err) {
      release?.();
      throw err;
    }
  });
}
