import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { boardFactsSchema, enrolCodeAnswerSchema, fleetAgentsAnswerSchema, fleetReportSchema } from '../../api/fleet.js';
import { successAnswerSchema } from '../../api/answers.js';
import { documented } from '../openapi/routeDoc.js';
import { callerOf } from '../keyCheck.js';
import { intParam, parseParams } from '../params.js';
import type { RouteContext } from '../routeContext.js';
import { EnrolCodes, enrolCode } from './enrolCodes.js';
import { enrolmentParams, fleetOf } from './fleetDeps.js';
import { FleetAgents, storedJson, type FleetAgentRow } from './fleetAgents.js';

const codeParams = z.object({
  hours: intParam
    .pipe(z.number().min(1, 'must be 1 to 720 hours').max(720, 'must be 1 to 720 hours'))
    .optional()
    .describe('how long the code is good for; default server.fleet.enrolCodeHours'),
});
const adoptParams = z.object({
  agent_id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, "-" or "_"')
    .optional()
    .describe("its agent.id; default: the board's host name made an agent id, made unique"),
});
const refuseParams = z.object({ reason: z.string().trim().min(1).max(500).optional().describe('why, for the installer (the board prints it)') });
const adoptedSchema = successAnswerSchema.extend({ agent_id: z.string() });

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
/** Who decided, as the lockdowns name an API caller. */
const caller = (request: FastifyRequest) => callerOf(request);

function shown(row: FleetAgentRow) {
  return {
    enrolment_id: row.enrolment_id,
    state: row.state,
    agent_id: row.agent_id,
    facts: storedJson(boardFactsSchema, row.facts) ?? { hostname: '?', version: '0.0.0', arch: 'unknown', node: '', gpio_chips: [], serial_devices: [] },
    enrolled_at: iso(row.enrolled_at)!,
    decided_at: iso(row.decided_at),
    decided_by: row.decided_by,
    reason: row.reason,
    delivered: row.state === 'adopted' && row.poll_sha256 === null,
    reported_at: iso(row.reported_at),
    report: storedJson(fleetReportSchema, row.report),
  };
}

/**
 * The operator's side of enrolment (docs/fleet.md, "Enrolment"), ADMIN: a new code, every enrolment with what its
 * board reported, and adopting or refusing a pending one.
 */
export function registerFleetAgentRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const codes = new EnrolCodes(ctx.db);
  const agents = new FleetAgents(ctx.db);
  const notFleet = 'This service has no server.fleet section.';

  app.post(
    '/fleet/enrol-codes',
    documented({
      summary: 'Makes an enrolment code, single use, and the command the installer types on the new board.',
      tag: 'Fleet',
      key: 'ADMIN',
      params: codeParams,
      answer: enrolCodeAnswerSchema,
      statuses: { 404: notFleet },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      const fleet = fleetOf(ctx);
      const { hours } = parseParams(codeParams, request.query, request.body);
      const made = await codes.create(ctx.clock.wallNow(), hours ?? fleet.enrolCodeHours, caller(request));
      const code = enrolCode(made.secret, fleet.keys.fingerprint);
      return { code, command: `door-agent enrol ${fleet.publicUrl.replace(/\/$/, '')} ${code}`, expires_at: iso(made.expiresAt)! };
    },
  );

  app.get(
    '/fleet/agents',
    documented({
      summary: 'Every enrolment: its state, what its board reported, its agent id, its times and its last report.',
      tag: 'Fleet',
      key: 'ADMIN',
      answer: fleetAgentsAnswerSchema,
      statuses: { 404: notFleet },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      fleetOf(ctx);
      return { agents: (await agents.list()).map(shown) };
    },
  );

  app.post(
    '/fleet/agents/:enrolment_id/adopt',
    documented({
      summary: 'Adopts a pending enrolment: the board is handed its grant at its next poll.',
      tag: 'Fleet',
      key: 'ADMIN',
      pathParams: enrolmentParams,
      params: adoptParams,
      answer: adoptedSchema,
      statuses: { 404: `No such enrolment. ${notFleet}`, 409: 'It is not pending, or agent_id is taken.' },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      fleetOf(ctx);
      const { enrolment_id: id } = parseParams(enrolmentParams, request.params, undefined);
      const { agent_id } = parseParams(adoptParams, request.query, request.body);
      const agentId = await agents.adopt(id, agent_id, ctx.clock.wallNow(), caller(request));
      ctx.logger.info({ enrolment: id, agent: agentId }, 'enrolment adopted');
      return { success: `enrolment ${id} adopted as agent ${agentId}: the board takes its grant at its next poll`, agent_id: agentId };
    },
  );

  app.post(
    '/fleet/agents/:enrolment_id/refuse',
    documented({
      summary: 'Refuses a pending enrolment: the board prints the reason and writes nothing.',
      tag: 'Fleet',
      key: 'ADMIN',
      pathParams: enrolmentParams,
      params: refuseParams,
      answer: successAnswerSchema,
      statuses: { 404: `No such enrolment. ${notFleet}`, 409: 'It is not pending.' },
    }),
    async (request) => {
      ctx.requireRank(request, 'ADMIN');
      fleetOf(ctx);
      const { enrolment_id: id } = parseParams(enrolmentParams, request.params, undefined);
      const { reason } = parseParams(refuseParams, request.query, request.body);
      await agents.refuse(id, reason ?? 'refused by an operator', ctx.clock.wallNow(), caller(request));
      ctx.logger.info({ enrolment: id }, 'enrolment refused');
      return { success: `enrolment ${id} refused` };
    },
  );
}
