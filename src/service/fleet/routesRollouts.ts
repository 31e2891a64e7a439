import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { releaseManifestSchema } from '../../api/fleet.js';
import { rolloutAnswerSchema, rolloutsAnswerSchema } from '../../api/fleetUpdates.js';
import { documented } from '../openapi/routeDoc.js';
import { callerOf } from '../keyCheck.js';
import { BadRequest, boolParam, intParam, parseParams } from '../params.js';
import type { RouteContext } from '../routeContext.js';
import { fleetOf } from './fleetDeps.js';
import { Rollouts, type Rollout, type RolloutAgent } from './rollouts.js';

/** Why a rollout never takes a board back, and what to do instead (the board's root ignores a downgrade a request file asks for). */
const DOWNGRADE_REFUSED =
  "a rollout cannot take a board to an older version (the board's root takes only newer signed versions from the service); " +
  'release the old code again under a newer version, or run `sudo door-agent update apply BUNDLE --allow-downgrade` on the board';

const createParams = z.object({
  version: releaseManifestSchema.shape.version.describe("the release to roll out: a bundle of it must be stored for every adopted agent's architecture"),
  canary: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be an agent id')
    .describe('the adopted agent offered the update first, alone'),
  share_percent: intParam
    .pipe(z.number().min(1, 'must be 1 to 99').max(99, 'must be 1 to 99'))
    .optional()
    .describe('the share of the other agents offered it next (rounded up), once the canary is healthy; default 25'),
  allow_downgrade: boolParam
    .optional()
    .refine((allowed) => allowed !== true, { message: DOWNGRADE_REFUSED })
    .describe(
      "false, or left out: a rollout never takes a board to an older version (the board's root takes only newer signed versions from the service); true is refused",
    ),
  health_bound_seconds: intParam
    .pipe(z.number().min(30, 'must be 30 to 3600 seconds').max(3600, 'must be 30 to 3600 seconds'))
    .optional()
    .describe(
      "how long an updated agent has to report healthy before it switches back by itself; default 180; at least the largest service.startDelaySeconds of the agents' configurations + 30 (healthy needs a sync)",
    ),
});
const rolloutPath = z.object({
  rollout_id: z
    .string()
    .regex(/^[1-9]\d{0,14}$/, 'must be a rollout id: 1, 2, ...')
    .transform(Number)
    .describe('the rollout'),
});
const stopParams = z.object({ reason: z.string().trim().min(1, 'say why').max(500, 'at most 500 characters').describe('why it is stopped, for the list') });

const iso = (ms: number) => new Date(ms).toISOString();
const summary = (r: Rollout) => ({
  rollout_id: r.rolloutId,
  version: r.version,
  stage: r.stage,
  canary: r.canary,
  share_percent: r.sharePercent,
  allow_downgrade: false,
  health_bound_seconds: r.healthBoundSeconds,
  created_at: iso(r.createdAt),
  created_by: r.createdBy,
  stopped_reason: r.stoppedReason,
});
const detailed = (r: Rollout & { agents: RolloutAgent[] }) =>
  Object.assign(summary(r), {
    agents: r.agents.map((a) => ({ agent_id: a.agentId, stage: a.stage, state: a.state, detail: a.detail, updated_at: iso(a.updatedAt) })),
  });
const by = (request: FastifyRequest) => callerOf(request);

/**
 * Rollouts (docs/fleet.md, "Signed updates"), ADMIN: start one (canary, then a share, then all), stop one, list
 * them, and see where each agent of one stands. The agents move a rollout by their reports (rollouts.ts).
 */
export function registerRolloutRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const rollouts = new Rollouts(ctx.db);
  const notFleet = 'This service has no server.fleet section.';

  app.post(
    '/fleet/rollouts',
    documented({
      summary: 'Starts a rollout of a release to every adopted agent: the canary first, then a share, then all.',
      description:
        "Each stage is offered (in the agents' exchange, GET /fleet/self) once every agent of the one before reported healthy; the first " +
        'agent that rolled back, failed or refused stops the rollout and nothing more is offered. An agent that already runs the ' +
        'version counts as healthy at once. A stage waits for its agents without a time limit: stop a rollout a silent agent holds.',
      tag: 'Fleet',
      key: 'ADMIN',
      params: createParams,
      answer: rolloutAnswerSchema,
      statuses: { 404: notFleet, 409: 'Another rollout is under way.' },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      fleetOf(ctx);
      const p = parseParams(createParams, request.query, request.body);
      const made = await rollouts.create(
        {
          version: p.version,
          canary: p.canary,
          sharePercent: p.share_percent ?? 25,
          healthBoundSeconds: p.health_bound_seconds ?? 180,
        },
        by(request),
        ctx.clock.wallNow(),
      );
      ctx.logger.info({ rollout: made.rolloutId, version: made.version, canary: made.canary, agents: made.agents.length }, 'rollout started');
      return detailed(made);
    },
  );

  app.post(
    '/fleet/rollouts/:rollout_id/stop',
    documented({
      summary: 'Stops a rollout under way: nothing more is offered (an agent part way through its update finishes it).',
      tag: 'Fleet',
      key: 'ADMIN',
      pathParams: rolloutPath,
      params: stopParams,
      answer: rolloutAnswerSchema,
      statuses: { 404: `No such rollout. ${notFleet}`, 409: 'It has ended already.' },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      fleetOf(ctx);
      const { rollout_id: id } = parseParams(rolloutPath, request.params, undefined);
      const { reason } = parseParams(stopParams, request.query, request.body);
      const stopped = await rollouts.stop(id, `stopped by ${by(request)}: ${reason}`);
      ctx.logger.info({ rollout: id }, 'rollout stopped by an operator');
      return detailed(stopped);
    },
  );

  app.get(
    '/fleet/rollouts',
    documented({
      summary: 'Every rollout and its stage, the newest first.',
      tag: 'Fleet',
      key: 'ADMIN',
      answer: rolloutsAnswerSchema,
      statuses: { 404: notFleet },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      fleetOf(ctx);
      return { rollouts: (await rollouts.list()).map(summary) };
    },
  );

  app.get(
    '/fleet/rollouts/:rollout_id',
    documented({
      summary: 'One rollout: its stage and where each of its agents stands.',
      tag: 'Fleet',
      key: 'ADMIN',
      pathParams: rolloutPath,
      answer: rolloutAnswerSchema,
      statuses: { 404: `No such rollout. ${notFleet}` },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      fleetOf(ctx);
      const { rollout_id: id } = parseParams(rolloutPath, request.params, undefined);
      const rollout = await rollouts.get(id);
      if (!rollout) throw new BadRequest(`no rollout ${id}`, 404);
      return detailed(rollout);
    },
  );
}
