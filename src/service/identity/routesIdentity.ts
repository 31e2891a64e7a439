import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import { IDENTITY_SOURCES, identitySourcesSchema, syncRunSchema, type IdentitySource, type IdentitySourcesAnswer } from '../../api/identity.js';
import { callerOf } from '../keyCheck.js';
import { documented } from '../openapi/routeDoc.js';
import { BadRequest, intParam, parseParams } from '../params.js';
import type { RouteContext } from '../routeContext.js';
import { serviceTimestamp } from '../users.js';
import { recentSyncRuns } from './syncRuns.js';

/** The syncs GET /identity-sources lists. */
const RECENT_RUNS = 10;
const NO_LDAP_SOURCE = 'no LDAP source: server.identity.ldap is not configured';

const syncParams = z.object({
  confirm_suspensions: intParam
    .pipe(z.number().int().min(0, 'must be 0 or more: the number of users the held sync would suspend'))
    .optional()
    .describe('after a held sync: apply it if it suspends or removes at most this many users (the held run says how many)'),
});

/** Users (not removed; suspended ones too) and user groups (those gone from LDAP left out) of each source. */
async function ownedCounts(ctx: RouteContext): Promise<Record<IdentitySource, { users: number; groups: number }>> {
  const counts = Object.fromEntries(IDENTITY_SOURCES.map((s) => [s, { users: 0, groups: 0 }])) as Record<IdentitySource, { users: number; groups: number }>;
  const bySource = async (sql: string) => ctx.db.all<{ source: IdentitySource; n: number | string }>(sql);
  for (const r of await bySource('SELECT source, count(*) AS n FROM users WHERE removed_at IS NULL GROUP BY source')) counts[r.source].users = Number(r.n);
  for (const r of await bySource("SELECT source, count(*) AS n FROM groups WHERE type = 'users' AND source_gone_at IS NULL GROUP BY source")) {
    counts[r.source].groups = Number(r.n);
  }
  return counts;
}

const timeOf = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : serviceTimestamp(ms));

/**
 * Where people come from (docs/identity-sources.md), ADMIN: each source's users and groups, the LDAP sync's last runs
 * and schedule (GET /identity-sources), and an LDAP sync now (POST /identity-sources/ldap/sync). Neither runs in
 * a route transaction (server.ts): a sync writes in transactions of its own, each with its directory revision.
 */
export function registerIdentityRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.get(
    '/identity-sources',
    documented({
      summary: "Each identity source's users and groups, and the LDAP sync's last runs and schedule.",
      description:
        'users: those not removed (suspended ones too); groups: user groups (an LDAP group gone from LDAP left out). ' +
        'ldap.recent: the last 10 syncs, the newest first. docs/identity-sources.md.',
      tag: 'Identity sources',
      key: 'ADMIN',
      answer: identitySourcesSchema,
    }),
    async (request): Promise<IdentitySourcesAnswer> => {
      ctx.requireRank(request, 'ADMIN');
      // One snapshot: the counts, the runs and the state agree with each other.
      return ctx.db.transaction(async () => {
        const counts = await ownedCounts(ctx);
        const recent = await recentSyncRuns(ctx.db, 'ldap', RECENT_RUNS);
        const state = await ctx.db.get<{ last_ok_at: number | null; next_at: number | null }>(
          "SELECT last_ok_at, next_at FROM identity_sync_state WHERE source = 'ldap'",
        );
        return {
          local: counts.local,
          scim: Object.assign({}, counts.scim, { enabled: ctx.identity?.scim?.enabled === true }),
          ldap: Object.assign({}, counts.ldap, {
            enabled: ctx.identity?.ldap !== undefined,
            url: ctx.identity?.ldap?.url ?? null,
            last: recent[0] ?? null,
            last_ok_at: timeOf(state?.last_ok_at),
            next_at: ctx.identity?.ldap ? timeOf(state?.next_at) : null,
            recent,
          }),
        };
      });
    },
  );

  app.post(
    '/identity-sources/ldap/sync',
    documented({
      summary: 'Runs an LDAP sync now and answers its run: ok, held (it would suspend too many: nothing applied) or failed.',
      description:
        "ok, held and failed are all 200: the run's outcome says which. A held sync is applied by asking again with confirm_suspensions " +
        'set to its would_suspend (the console\'s Apply button). docs/identity-sources.md, "The guard".',
      tag: 'Identity sources',
      key: 'ADMIN',
      params: syncParams,
      answer: syncRunSchema,
      statuses: { 404: 'server.identity.ldap is not configured.', 409: 'Another sync is running (in this process or another).' },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      const p = parseParams(syncParams, request.query, request.body);
      if (!ctx.ldapSync) throw new BadRequest(NO_LDAP_SOURCE, 404);
      const trigger = callerOf(request);
      return ctx.ldapSync.runNow(p.confirm_suspensions === undefined ? { trigger } : { trigger, confirmSuspensions: p.confirm_suspensions });
    },
  );
}
