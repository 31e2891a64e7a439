import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { successAnswerSchema } from '../api/answers.js';
import { documented } from './openapi/routeDoc.js';
import { boolParam, BadRequest, intParam, parseParams } from './params.js';
import type { RouteContext } from './routeContext.js';

const lockParams = z.object({
  uuid: z.string().min(1).describe("the door's uuid (server.resources)"),
  lock_state: boolParam.describe('true: lock; false: unlock'),
  unlock_time: intParam.optional().describe('with lock_state false: seconds it stays unlocked, 1 to 604800'),
});

/** POST /setlockstatus: the command goes to the door over MQTT; the answer is the door's own reply. */
export function registerDoorRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const lockDoc = {
    summary: 'Locks or unlocks a door: the command goes to the door over MQTT, the answer is its reply.',
    description: "A refusal of the door itself (a lockdown, a signature) keeps the door's status: 400, 401 or 409.",
    tag: 'Doors',
    key: 'ADMIN',
    params: lockParams,
    answer: successAnswerSchema,
    statuses: {
      404: 'No resource with that uuid.',
      409: 'The door refused the command.',
      502: 'The door answered without a status.',
      503: 'Or: the service has no MQTT broker configured, or cannot reach it.',
      504: 'The door did not answer in time (server.lockReplyTimeoutSeconds).',
    },
  } as const;
  app.post('/setlockstatus', documented(lockDoc), async (request: FastifyRequest, reply: FastifyReply) => {
    ctx.requireRank(request, 'ADMIN');
    const p = parseParams(lockParams, request.query, request.body);
    const door = ctx.resources.find((r) => r.uuid === p.uuid.toLowerCase());
    if (!door) throw new BadRequest(`no resource with uuid ${p.uuid}`, 404);
    if (door.type !== 'DOOR') throw new BadRequest(`${door.name} is a ${door.type}, not a door`);
    if (p.unlock_time !== undefined && (p.lock_state || p.unlock_time < 1 || p.unlock_time > 604_800)) {
      throw new BadRequest('unlock_time: a whole number from 1 to 604800 s, with lock_state false');
    }
    if (!ctx.doors) {
      return reply.code(503).send({ error: 'no MQTT broker is configured for the service (mqtt section): commands cannot reach the doors' });
    }
    const answer = await ctx.doors.command(door.uuid, p.lock_state, p.unlock_time, ctx.lockReplyTimeoutMs);
    const { request_id: _requestId, status: _status, ...body } = answer.body;
    return reply.code(answer.status).send(answer.status === 200 ? { success: body.success } : { error: body.error ?? 'the door refused the command' });
  });
}
