import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { fleetExchangeSchema, fleetReportSchema } from '../../api/fleet.js';
import { agentConfigAnswerSchema, configStoredSchema, configVersionAnswerSchema } from '../../api/fleetConfig.js';
import { successAnswerSchema } from '../../api/answers.js';
import { signFleet } from '../../protocol/fleetSigning.js';
import { documented } from '../openapi/routeDoc.js';
import { callerOf } from '../keyCheck.js';
import { BadRequest, intParam, parseParams } from '../params.js';
import type { RouteContext } from '../routeContext.js';
import { AgentConfigs, type ConfigVersion, type ConfigVersionInfo } from './agentConfigs.js';
import { FleetAgents } from './fleetAgents.js';
import { fleetOf } from './fleetDeps.js';
import { FleetReports } from './fleetReports.js';
import { Firmware } from './firmware.js';
import { Rollouts } from './rollouts.js';
import { keyDigest } from '../apiKeys.js';

const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;
const agentPath = z.object({ agent_id: z.string().regex(AGENT_ID, 'an agent id: 1 to 64 letters, digits, _ or -').describe("the agent's id (agent.id)") });
const versionPath = agentPath.extend({
  version: z
    .string()
    .regex(/^[1-9]\d{0,8}$/, 'a version number: 1, 2, ...')
    .transform(Number)
    .describe('the version number'),
});
const putParams = z.object({
  document: z.string().min(1, 'the YAML of the configuration').max(1_000_000, 'at most 1,000,000 characters').describe("the agent's configuration, YAML"),
  note: z.string().max(500, 'at most 500 characters').optional().describe('what changed, for the version list'),
});
const restoreParams = z.object({
  version: intParam.pipe(z.number().int().positive('a version number: 1, 2, ...')).describe('the version whose document is restored'),
});
const selfParams = z.object({
  config: intParam
    .pipe(z.number().int().min(0, 'the version held: 0 or more'))
    .optional()
    .describe('the configuration version the agent holds (0 or absent: none)'),
});

/** A route's path parameters, validated: a problem is a 400 naming the parameter. */
function pathParams<T extends z.ZodType>(schema: T, request: FastifyRequest): z.output<T> {
  return parseParams(schema, request.params, undefined);
}

const iso = (ms: number) => new Date(ms).toISOString();
const infoAnswer = (v: ConfigVersionInfo) => ({ version: v.version, sha256: v.sha256, created_at: iso(v.createdAt), created_by: v.createdBy, note: v.note });
const versionAnswer = (agentId: string, v: ConfigVersion) => Object.assign({ agent_id: agentId, document: v.document }, infoAnswer(v));

/**
 * Each agent's configuration kept at the service (docs/fleet.md, "Configuration from the service"): an operator's
 * ADMIN key stores versions, lists them, reads one, restores one; an adopted agent's own DOOR key takes the newest
 * (signed) through GET /fleet/self and reports what it did with it through POST /fleet/self/report.
 */
export function registerAgentConfigRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const configs = new AgentConfigs(ctx.db);
  const reports = new FleetReports(ctx.db);
  const agents = new FleetAgents(ctx.db);
  // The update a rollout offers the agent and its reader firmware tasks (rollouts.ts, firmware.ts).
  const rollouts = new Rollouts(ctx.db);
  const firmware = new Firmware(ctx.db);
  const by = (request: FastifyRequest) => callerOf(request);

  /** The adopted agent of that id, or a 404 naming it. */
  const adopted = async (agentId: string) => {
    if (!(await reports.isAdopted(agentId))) {
      throw new BadRequest(`no adopted agent ${agentId}: an agent has a configuration at the service once it is enrolled and adopted`, 404);
    }
  };

  const putDoc = {
    summary: "Stores a new version of an agent's configuration.",
    description:
      'The document is checked as `door-agent config check` checks it on the board, less what only the board knows (the files ' +
      'it names, its devices); one that fails is refused with its problems and nothing is stored. The agent takes it at its ' +
      'next poll (docs/fleet.md).',
    tag: 'Fleet',
    key: 'ADMIN',
    pathParams: agentPath,
    params: putParams,
    answer: configStoredSchema,
    statuses: { 404: 'No adopted agent of that id.' },
  } as const;
  app.put('/fleet/agents/:agent_id/config', documented(putDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const { agent_id } = pathParams(agentPath, request);
    const p = parseParams(putParams, request.query, request.body);
    await adopted(agent_id);
    const check = fleetOf(ctx).checkConfig;
    if (!check) throw new BadRequest('this service process cannot check an agent configuration: nothing was stored', 503);
    const problems = check(p.document, agent_id);
    if (problems.length > 0) {
      throw new BadRequest(`document: the configuration fails its check, nothing was stored:\n${problems.map((line) => `  ${line}`).join('\n')}`);
    }
    const stored = await configs.add(agent_id, p.document, by(request), p.note ?? '', ctx.clock.wallNow());
    ctx.logger.info({ agent: agent_id, version: stored.version, by: stored.createdBy }, 'agent configuration stored');
    return Object.assign({ agent_id, success: `version ${stored.version} of ${agent_id}'s configuration stored` }, infoAnswer(stored));
  });

  const listDoc = {
    summary: "An agent's configuration: the current version, every version, and what the agent last reported.",
    tag: 'Fleet',
    key: 'ADMIN',
    pathParams: agentPath,
    answer: agentConfigAnswerSchema,
    statuses: { 404: 'No adopted agent of that id.' },
  } as const;
  app.get('/fleet/agents/:agent_id/config', documented(listDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const { agent_id } = pathParams(agentPath, request);
    await adopted(agent_id);
    const [current, versions, report] = await Promise.all([configs.current(agent_id), configs.versions(agent_id), reports.last(agent_id)]);
    return {
      agent_id,
      current: current ? versionAnswer(agent_id, current) : null,
      versions: versions.map(infoAnswer),
      reported: report ? { at: iso(report.at), version: report.report.version, config: report.report.config ?? null } : null,
    };
  });

  const oneDoc = {
    summary: "One version of an agent's configuration, with its document.",
    tag: 'Fleet',
    key: 'ADMIN',
    pathParams: versionPath,
    answer: configVersionAnswerSchema,
    statuses: { 404: 'No adopted agent of that id, or no such version.' },
  } as const;
  app.get('/fleet/agents/:agent_id/config/:version', documented(oneDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const { agent_id, version } = pathParams(versionPath, request);
    await adopted(agent_id);
    const found = await configs.get(agent_id, version);
    if (!found) throw new BadRequest(`${agent_id} has no configuration version ${version}`, 404);
    return versionAnswer(agent_id, found);
  });

  const restoreDoc = {
    summary: "Restores an earlier version of an agent's configuration, as a new version.",
    description: 'The new version holds the old one\'s document and the note "restored from version N"; the agent takes it at its next poll.',
    tag: 'Fleet',
    key: 'ADMIN',
    pathParams: agentPath,
    params: restoreParams,
    answer: configStoredSchema,
    statuses: { 404: 'No adopted agent of that id, or no such version.' },
  } as const;
  app.post('/fleet/agents/:agent_id/config/restore', documented(restoreDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const { agent_id } = pathParams(agentPath, request);
    const p = parseParams(restoreParams, request.query, request.body);
    await adopted(agent_id);
    const stored = await configs.restore(agent_id, p.version, by(request), ctx.clock.wallNow());
    if (!stored) throw new BadRequest(`version: ${agent_id} has no configuration version ${p.version}`, 404);
    ctx.logger.info({ agent: agent_id, version: stored.version, from: p.version, by: stored.createdBy }, 'agent configuration restored');
    return Object.assign(
      { agent_id, success: `version ${p.version} of ${agent_id}'s configuration restored as version ${stored.version}` },
      infoAnswer(stored),
    );
  });

  /** The adopted agent whose own DOOR key made the request; a 403 saying whose key this call takes otherwise. */
  const self = async (request: FastifyRequest, call: string): Promise<string> => {
    if (request.rank !== 'DOOR') {
      throw new BadRequest(`${call} is an agent's own call: it takes the DOOR key the agent was given at adoption, not a key of rank ${request.rank}`, 403);
    }
    const key = request.keyGiven?.key;
    const agentId = key ? await agents.agentOfKeyDigest(keyDigest(key)) : null;
    if (agentId === null) {
      throw new BadRequest(`${call}: this DOOR key is not an adopted agent's own (a door key made by hand has no place in the fleet: enrol the agent)`, 403);
    }
    return agentId;
  };

  const selfDoc = {
    summary: "The fleet's exchange with an agent: a newer configuration, signed, when there is one.",
    description:
      'Called by the agent every `fleet.pollSeconds` with the version it holds; `config` is null when that one is current. The ' +
      "signature (purpose `config`, docs/fleet.md) is by the service's identity key over agent_id, version, document and sha256.",
    tag: 'Fleet',
    key: 'any',
    params: selfParams,
    answer: fleetExchangeSchema,
  } as const;
  app.get('/fleet/self', documented(selfDoc), async (request) => {
    const agentId = await self(request, 'GET /fleet/self');
    const p = parseParams(selfParams, request.query, request.body);
    const current = await configs.current(agentId);
    const held = p.config ?? 0;
    let config = null;
    if (current && current.version > held) {
      const signed = { agent_id: agentId, version: current.version, document: current.document, sha256: current.sha256 };
      config = Object.assign(signed, { signature: signFleet(fleetOf(ctx).keys.identity, 'config', signed) });
    }
    const update = await rollouts.offerFor(agentId, ctx.clock.wallNow());
    return { agent_id: agentId, config, update, tasks: await firmware.tasksFor(agentId) };
  });

  const reportDoc = {
    summary: 'An agent reports where it stands: the configuration it applied or refused (with the problems), and how.',
    description: 'Each part is optional: the parts sent replace the ones stored, the others are kept. GET /fleet/agents/{agent_id}/config shows them.',
    tag: 'Fleet',
    key: 'any',
    params: fleetReportSchema,
    answer: successAnswerSchema,
  } as const;
  app.post('/fleet/self/report', documented(reportDoc, { config: { doorMayPost: true } }), async (request) => {
    const agentId = await self(request, 'POST /fleet/self/report');
    const report = parseParams(fleetReportSchema, undefined, request.body);
    const now = ctx.clock.wallNow();
    // One transaction: the report stored, its update moving the agent's rollout, its tasks recorded (rollouts.ts).
    await ctx.db.transaction(async () => {
      await reports.store(agentId, report, now);
      if (report.update) await rollouts.recordUpdateReport(agentId, report.update, now);
      if (report.tasks) await firmware.recordTaskReports(agentId, report.tasks, now);
    });
    if (report.config?.refused) {
      ctx.logger.warn(
        { agent: agentId, version: report.config.refused.version, problems: report.config.refused.problems.length },
        'an agent refused a configuration version',
      );
    }
    return { success: `report of ${agentId} stored` };
  });
}
