import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { lockdownListSchema, lockdownSetSchema } from '../api/answers.js';
import { scopeName, type LockdownScope } from '../protocol/lockdown.js';
import { LockdownStore } from './lockdowns.js';
import { documented } from './openapi/routeDoc.js';
import { BadRequest, boolParam, parseParams } from './params.js';
import type { RouteContext } from './routeContext.js';

const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

const lockdownParams = z.object({
  active: boolParam.describe('true: start the lockdown; false: end it'),
  uuid: z.string().min(1).max(100).optional().describe("a door's uuid: that door"),
  agent_id: z.string().regex(AGENT_ID, 'an agent id: 1 to 64 letters, digits, _ or -').optional().describe("an agent's id: every door it controls"),
  reason: z.string().max(256, 'at most 256 characters').optional(),
  by: z
    .string()
    .trim()
    .min(1, 'name who sets it (or leave it out)')
    .max(128, 'at most 128 characters')
    .optional()
    .describe("who sets it (default: the key's rank)"),
});

/**
 * Extension endpoints (issue 14; not in the API document): POST /lockdown starts or ends the lockdown of one door
 * or of every door of an agent, stored and published retained on P/doors/<uuid>/lockdown or P/agents/<id>/lockdown;
 * GET /lockdown lists what is stored. ADMIN only, reading included: who locked what down, and why, is not for
 * every key holder.
 */
export function registerLockdownRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const store = new LockdownStore(ctx.db);

  const setDoc = {
    summary: 'Starts or ends the lockdown of one door (uuid) or of every door of an agent (agent_id).',
    description: 'Give exactly one of uuid and agent_id. It reaches the doors as a retained MQTT message.',
    tag: 'Lockdown',
    key: 'ADMIN',
    params: lockdownParams,
    answer: lockdownSetSchema,
    statuses: { 404: 'No resource with that uuid.', 503: 'Or: the service has no MQTT broker configured.' },
  } as const;
  app.post('/lockdown', documented(setDoc), async (request: FastifyRequest, reply: FastifyReply) => {
    ctx.requireRank(request, 'ADMIN');
    const p = parseParams(lockdownParams, request.query, request.body);
    if ((p.uuid === undefined) === (p.agent_id === undefined)) {
      throw new BadRequest("uuid, agent_id: give exactly one of them: a door's uuid (that door) or an agent's id (every door it controls)");
    }
    let scope: LockdownScope;
    let label: string;
    if (p.uuid !== undefined) {
      const door = ctx.resources.find((r) => r.uuid === p.uuid!.toLowerCase());
      if (!door) throw new BadRequest(`no resource with uuid ${p.uuid}`, 404);
      if (door.type !== 'DOOR') throw new BadRequest(`uuid: ${door.name} is a ${door.type}, not a door`);
      scope = { kind: 'door', uuid: door.uuid };
      label = door.name;
    } else {
      scope = { kind: 'agent', id: p.agent_id! };
      label = `agent ${p.agent_id}`;
    }
    // Checked before anything is stored: a lockdown recorded here but unable to reach any door would read as
    // applied in GET /lockdown.
    if (!ctx.doors) {
      return reply.code(503).send({ error: 'no MQTT broker is configured for the service (mqtt section): a lockdown cannot reach the doors' });
    }
    const reason = p.reason === undefined || p.reason.trim() === '' ? null : p.reason;
    // Stored and owed to the doors in one transaction: the publisher sends it (an end too: it also clears a
    // lockdown set on the broker directly), from whichever process holds the publisher lock.
    const { previous, stored } = await ctx.db.transaction(async () => {
      const change = await store.set(scope, { active: p.active, by: p.by ?? `API key (${request.rank})`, reason }, ctx.clock.wallNow());
      await ctx.owe('lockdown', scopeName(scope));
      return change;
    });
    const sent = ctx.doors.connected;
    ctx.logger.info(
      { scope: scopeName(scope), active: stored.active, by: stored.by, reason: stored.reason, sent },
      stored.active ? 'lockdown started' : 'lockdown ended',
    );
    const wasActive = previous?.active === true;
    const success = stored.active
      ? wasActive
        ? `${label} was already in lockdown`
        : `lockdown started for ${label}`
      : wasActive
        ? `lockdown ended for ${label}`
        : `${label} was not in lockdown`;
    return sent ? { success } : { success, warning: 'the MQTT broker is not reachable now: the doors get this when the service reconnects to it' };
  });

  const listDoc = { summary: 'Every lockdown stored, in force or ended.', tag: 'Lockdown', key: 'ADMIN', answer: lockdownListSchema } as const;
  app.get('/lockdown', documented(listDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    return {
      lockdowns: (await store.all()).map((l) => ({
        scope: scopeName(l.scope),
        active: l.active,
        by: l.by,
        reason: l.reason,
        changed_at: new Date(l.changedAt).toISOString(),
      })),
    };
  });
}
