import type { FastifyInstance } from 'fastify';
import { statusAnswerSchema } from '../api/answers.js';
import { documented } from './openapi/routeDoc.js';
import type { RouteContext } from './routeContext.js';

/**
 * GET /status (an extension beside the seed's API, any key): the service's load for an operator or a monitor. The
 * directory revision and the bytes stored for it, the restore awaiting acceptance, what is in flight against its bounds, and every request refused
 * or shed since the service started, by reason (refusals.ts). Never shed itself: it costs a few lookups.
 */
export function registerStatusRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const startedAt = ctx.clock.monoNow();
  const statusDoc = {
    summary: "The service's load: the directory revision and its stored bytes, what is in flight, the requests refused.",
    tag: 'Service',
    key: 'any',
    answer: statusAnswerSchema,
  } as const;
  app.get('/status', documented(statusDoc), async () => {
    const { revision, history, tag } = await ctx.directory.revision();
    const restore = await ctx.directory.pendingRestore();
    const { limits, answers, builds, refusals } = ctx.load;
    const stored = ctx.directoryBytes.status();
    return {
      uptime_seconds: Math.floor((ctx.clock.monoNow() - startedAt) / 1000),
      directory: {
        revision,
        history,
        tag,
        stored: { revision: stored.revision, full_bytes: stored.full, deltas: stored.deltas, delta_bytes: stored.deltaBytes },
        builds: stored.builds,
        compressions: stored.compressions,
        restore: restore === null ? null : { detected_at: restore.detectedAt, reason: restore.reason },
      },
      in_flight: {
        directory_answers: answers.inFlight,
        directory_builds: builds.inFlight,
      },
      limits: {
        max_directory_answers: limits.maxDirectoryAnswers,
        max_directory_builds: limits.maxDirectoryBuilds,
        retry_after_seconds: limits.retryAfterSeconds,
      },
      refused: refusals.counts(),
    };
  });
}
