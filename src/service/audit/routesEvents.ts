import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { auditChainsSchema, chainHashesSchema, eventPageSchema } from '../../api/audit.js';
import { documented } from '../openapi/routeDoc.js';
import { BadRequest, intParam, parseParams } from '../params.js';
import type { RouteContext } from '../routeContext.js';
import { DEFAULT_GAP_SECONDS, gapsOf } from './chainGaps.js';
import { EventQuery } from './eventQuery.js';
import type { ChainRow } from './eventStore.js';
import { timeParam } from './timeParams.js';

const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;
const agentParam = z.string().regex(AGENT_ID, 'must be an agent id (1-64 letters, digits, "-" or "_")');
const TYPE = '[a-z0-9_]{1,64}';

const eventParams = z
  .object({
    door: z.string().max(100).describe("the door's uuid").optional(),
    person: intParam.pipe(z.number().min(0, 'must be an email_id')).describe("the person's email_id (the event's first holder)").optional(),
    type: z
      .string()
      .regex(new RegExp(`^${TYPE}(,${TYPE}){0,49}$`), 'must be an event type, or several separated by ","')
      .describe('an event type (access_granted), or several separated by ","')
      .optional(),
    reason: z.string().max(200).describe("a refusal's reason (not_found, schedule, ...)").optional(),
    agent: agentParam.describe("the agent's id").optional(),
    area: z.string().max(200).describe('the area of its first passage').optional(),
    from: timeParam('from').describe('from this time (ISO 8601) or date (YYYY-MM-DD, UTC), inclusive').optional(),
    to: timeParam('to').describe('to this time, exclusive; a date takes that whole day').optional(),
    limit: intParam.pipe(z.number().min(1, 'must be 1 to 1000').max(1000, 'must be 1 to 1000')).describe('at most this many (default 100)').optional(),
    before: intParam.pipe(z.number().min(1, 'must be an event_id')).describe("the previous page's next_before: older events").optional(),
  })
  .refine((p) => p.from === undefined || p.to === undefined || p.from < p.to, { path: ['to'], message: 'must be after from' });

const chainParams = z.object({ agent: agentParam.describe("only this agent's chains").optional() });
const hashPathParams = z.object({ agentId: agentParam.describe("the agent's id") });
const hashParams = z.object({
  chain: z
    .string()
    .regex(/^[0-9a-f-]{0,64}$/, "must be a chain's id ('' for the events from before the chain)")
    .describe("the chain's id"),
  after: intParam.pipe(z.number().min(0, 'must be 0 or more')).describe('after this seq (default 0)').optional(),
  limit: intParam.pipe(z.number().min(1, 'must be 1 to 10000').max(10_000, 'must be 1 to 10000')).describe('at most this many (default 1000)').optional(),
});

/** Refuses a parameter the route does not know (a misspelt filter would otherwise list every event). */
function knownOnly(request: FastifyRequest, schema: z.ZodObject): void {
  const { shape } = schema;
  const given = Object.assign({}, request.query as object, typeof request.body === 'object' && request.body !== null ? request.body : {});
  for (const name of Object.keys(given)) {
    if (name !== 'api_key' && !(name in shape))
      throw new BadRequest(`${name}: not a parameter of ${request.routeOptions.url} (${Object.keys(shape).join(', ')})`);
  }
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * The audit events the service keeps (docs/audit.md, docs/reference-service.md "Audit events"): GET /events
 * (ADMIN) with filters and paging, GET /audit/chains (ADMIN) with their gaps, and GET
 * /audit/agents/{agentId}/hashes (a DOOR key or ADMIN), which `door-agent audit verify` on a board compares its
 * own chain with.
 */
export function registerEventRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const query = new EventQuery(ctx.db);
  const gapMs = (ctx.audit?.gapSeconds ?? DEFAULT_GAP_SECONDS) * 1000;

  app.get(
    '/events',
    documented({
      summary: "The agents' audit events kept at the service, newest first, a page at a time.",
      description:
        "Each event as the agent sent it, with `agent` and the service's `event_id`. Filters combine (all must hold); ask again with `before=next_before` for older events.",
      tag: 'Audit',
      key: 'ADMIN',
      params: eventParams,
      answer: eventPageSchema,
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      knownOnly(request, eventParams);
      const p = parseParams(eventParams, request.query, request.body);
      const page = await query.page({
        limit: p.limit ?? 100,
        ...(p.door === undefined ? {} : { door: p.door.toLowerCase() }),
        ...(p.person === undefined ? {} : { person: p.person }),
        ...(p.type === undefined ? {} : { types: p.type.split(',') }),
        ...(p.reason === undefined ? {} : { reason: p.reason }),
        ...(p.agent === undefined ? {} : { agent: p.agent }),
        ...(p.area === undefined ? {} : { area: p.area }),
        ...(p.from === undefined ? {} : { from: p.from }),
        ...(p.to === undefined ? {} : { to: p.to }),
        ...(p.before === undefined ? {} : { before: p.before }),
      });
      if (page === null) throw new BadRequest(`before: no event ${p.before} is kept (deleted by retention, or never one)`);
      return {
        events: page.events.map((kept) => Object.assign({}, kept.event, { event_id: kept.eventId, agent: kept.agentId })),
        next_before: page.nextBefore,
      };
    },
  );

  app.get(
    '/audit/chains',
    documented({
      summary: "Each agent's hash chains as the service holds them, with their gaps.",
      description: `A gap: seqs not received while later ones were, for longer than server.audit.gapSeconds.`,
      tag: 'Audit',
      key: 'ADMIN',
      params: chainParams,
      answer: auditChainsSchema,
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      knownOnly(request, chainParams);
      const { agent } = parseParams(chainParams, request.query, request.body);
      const rows = await ctx.db.all<ChainRow>(
        `SELECT * FROM audit_chains ${agent === undefined ? '' : 'WHERE agent_id = ?'} ORDER BY agent_id, first_seen_at, chain_id`,
        agent === undefined ? [] : [agent],
      );
      const now = ctx.clock.wallNow();
      const chains = [];
      for (const row of rows) {
        const gaps = await gapsOf(ctx.db, row, now, gapMs);
        chains.push({
          agent: row.agent_id,
          chain: row.chain_id,
          started_at: iso(row.started_at),
          first_seen_at: iso(row.first_seen_at)!,
          last_seq: row.last_seq,
          last_at: iso(row.last_at),
          contiguous_seq: row.contiguous_seq,
          pruned_through_seq: row.pruned_through_seq,
          gaps: gaps.map((g) => ({ from: g.from, to: g.to, since: iso(g.since)! })),
        });
      }
      return { chains };
    },
  );

  app.get(
    '/audit/agents/:agentId/hashes',
    documented({
      summary: "The hashes the service holds of one of an agent's chains, in seq order (what `door-agent audit verify` compares).",
      description: 'A DOOR key or an ADMIN key. Ask again with `after=next_after` for more.',
      tag: 'Audit',
      key: 'any',
      pathParams: hashPathParams,
      params: hashParams,
      answer: chainHashesSchema,
    }),
    async (request) => {
      if (request.rank !== 'DOOR') ctx.requireRank(request, 'ADMIN');
      knownOnly(request, hashParams);
      const { agentId } = parseParams(hashPathParams, request.params, undefined);
      const p = parseParams(hashParams, request.query, request.body);
      const limit = p.limit ?? 1000;
      const records = await query.hashes(agentId, p.chain, p.after ?? 0, limit);
      const last = records[records.length - 1];
      return { agent: agentId, chain: p.chain, records, next_after: records.length === limit && last !== undefined ? last.seq : null };
    },
  );
}
