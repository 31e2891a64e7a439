import type { FastifyInstance } from 'fastify';
import { healthAnswerSchema } from '../api/answers.js';
import { documented } from './openapi/routeDoc.js';
import { databaseReachable } from './databaseProbe.js';
import { errorBody } from './http.js';
import { HEALTH_PATH } from './keyCheck.js';
import { REQUEST_LIMITS } from './requestLimits.js';
import type { RouteContext } from './routeContext.js';

/** The probe must settle within this, or the process counts as down (under the example balancer's `timeout check`). */
const PROBE_DEADLINE_MS = 3000;

/** Settles as `probe` does, or rejects once `ms` have passed without it settling. */
function within(probe: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`the database did not answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([probe, late]).finally(() => clearTimeout(timer));
}

/**
 * GET /healthz (an extension beside the seed's API, no key: a load balancer has none): whether this process can
 * serve, for a balancer's health check (examples/haproxy/haproxy.cfg). 200 `{"status":"ok","database":"ok"}` when
 * a trivial query runs on its database; 503 with Retry-After and `{"error": ...}` when it fails or takes over 3 s
 * (and, from keyCheck.ts, while the service stops). Says up or down and nothing else: the cause is logged, once
 * per outage, never answered. Never shed.
 */
export function registerHealthRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const probe = ctx.databaseProbe ?? (() => databaseReachable(ctx.db));
  let down = false;
  // No parameters: a body is read no further than one that comes without a key elsewhere.
  const healthDoc = {
    summary: "Whether this process can serve: a load balancer's health check.",
    tag: 'Service',
    key: 'none',
    answer: healthAnswerSchema,
    statuses: { 503: 'Or: this process cannot query its database within 3 s.' },
  } as const;
  app.get(HEALTH_PATH, documented(healthDoc, { bodyLimit: REQUEST_LIMITS.bodyBeforeKey }), async (_request, reply) => {
    try {
      await within(probe(), PROBE_DEADLINE_MS);
    } catch (err) {
      if (!down) ctx.logger.warn({ err }, 'GET /healthz: this process cannot query its database; answering 503 until it can');
      down = true;
      const seconds = ctx.load.limits.retryAfterSeconds;
      return reply
        .code(503)
        .header('retry-after', String(seconds))
        .send(errorBody(`this service process cannot query its database: try again in ${seconds} s`));
    }
    if (down) ctx.logger.info('GET /healthz: the database answers again');
    down = false;
    return { status: 'ok', database: 'ok' };
  });
}
