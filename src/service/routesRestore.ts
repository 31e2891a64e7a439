import type { FastifyInstance, FastifyRequest } from 'fastify';
import { restoreAcceptedSchema } from '../api/answers.js';
import { callerOf } from './keyCheck.js';
import { documented } from './openapi/routeDoc.js';
import { BadRequest } from './params.js';
import type { RouteContext } from './routeContext.js';

/**
 * POST /directory/restore/accept (an extension beside the seed's API, ADMIN): the operator accepts a restore of
 * the service's database (docs/reference-service.md "Backup and restore"). Until then every GET /directory answer
 * carries `restore` and the doors refuse what it would grant beyond their caches; once accepted, a new revision
 * answers without it and the doors take the restored directory. Runs in the change transaction of server.ts.
 */
export function registerRestoreRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const acceptDoc = {
    summary: "Accepts a restore of the service's database: the doors then take the restored directory.",
    description:
      'A restore undoes every change made after the backup, revocations included: make those again first. ' +
      'Then the doors grant what the restored directory grants (docs/reference-service.md, "Backup and restore").',
    tag: 'Directory',
    key: 'ADMIN',
    answer: restoreAcceptedSchema,
    statuses: { 409: 'No restore awaits acceptance.' },
  } as const;
  app.post('/directory/restore/accept', documented(acceptDoc), async (request: FastifyRequest) => {
    ctx.requireRank(request, 'ADMIN');
    const pending = await ctx.directory.pendingRestore();
    const issued = pending === null ? null : await ctx.directory.acceptRestore(ctx.clock.wallNow());
    if (pending === null || issued === null) throw new BadRequest('no restore awaits acceptance', 409);
    const by = callerOf(request);
    // Once committed (on PostgreSQL the handler may run again after a serialization failure).
    ctx.db.afterCommit(() =>
      ctx.logger.info(
        { by, detectedAt: pending.detectedAt, revision: issued.revision },
        'the restore of the service database was accepted: the doors take the restored directory at their next sync',
      ),
    );
    return { accepted: true, revision: issued.revision };
  });
}
