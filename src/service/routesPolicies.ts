import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as z from 'zod';
import { policiesAnswerSchema, policyCreatedSchema, successAnswerSchema } from '../api/answers.js';
import { parseServiceTime } from '../core/schedule.js';
import { levelScheduleSchema, timeMappingSchema, timeMappingToSchedule, type LevelSchedule } from './levelSchedule.js';
import { MAX_LEVELS, type Level, type LevelDefinition } from './levels.js';
import { documented } from './openapi/routeDoc.js';
import { BadRequest, intParam, jsonArrayParam, jsonParam, parseParams, refuseNeverOpening } from './params.js';
import { REQUEST_LIMITS as LIMITS } from './requestLimits.js';
import type { RouteContext } from './routeContext.js';
import { thousands } from '../util/plural.js';

/** `schema`, or null ("null" from a form or the query string): clears the field (PUT), or says "none" (POST). */
const nullable = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === 'null' ? null : v), schema.nullable());

const serviceTime = z.string().refine((s) => parseServiceTime(s) !== null, 'expected a UTC date "YYYY-MM-DD hh:mm:ss"');
const levelName = z.string().trim().min(1, 'a name of 1 to 100 characters').max(100, 'a name of 1 to 100 characters');
const memberIds = (field: string) => jsonArrayParam(intParam, { field, max: LIMITS.ids });
/** A schedule in a form or the query string is JSON text; text that is not JSON is left to the schedule's own words. */
const scheduleParam = z.preprocess((value) => {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value; // "expected an object with weekdays ..."
  }
}, levelScheduleSchema.nullable());
const timeMappingParam = jsonParam(timeMappingSchema.nullable(), 'a serialized JSON array');

/** The definition fields POST takes and PUT may replace. */
const definitionFields = {
  resource_ids: jsonArrayParam(intParam, { field: 'resource_ids', max: LIMITS.resources }).optional(),
  resource_group_id: nullable(intParam).optional(),
  schedule: scheduleParam.optional(),
  time_mapping: timeMappingParam.optional(),
  start_time: nullable(serviceTime).optional(),
  end_time: nullable(serviceTime).optional(),
};

const createSchema = z.object({ name: levelName, email_ids: memberIds('email_ids').optional(), ...definitionFields });
const updateSchema = z.object({
  policy_id: intParam,
  name: levelName.optional(),
  add_ids: memberIds('add_ids').optional(),
  del_ids: memberIds('del_ids').optional(),
  ...definitionFields,
});
const idSchema = z.object({ policy_id: intParam.optional().describe('one level, with its members; absent: every level') });
const deleteSchema = z.object({ policy_id: intParam });
const NO_LEVEL = 'No access level with that policy_id.';
const NAME_TAKEN = 'An access level or a guest link already has that name.';

type DefinitionParams = { [K in keyof typeof definitionFields]?: z.output<(typeof definitionFields)[K]> };

/**
 * Access levels (an extension beside the seed's API, docs/reference-service.md "Access levels"): POST, PUT, GET and
 * DELETE /policies, ADMIN keys and above. A level is a named policy (its members hold it, as GET /user shows) with
 * doors, a weekly schedule and an optional start and end; GET /directory gives every level to the doors. Guest
 * links' policies are not levels and are never listed or changed here. Every change is one transaction; the
 * server's change hook advances the directory revision and pushes it.
 */
export function registerPolicyRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { db, users, levels } = ctx;
  const params = <T extends z.ZodType>(schema: T, request: FastifyRequest) => parseParams(schema, request.query, request.body);

  /** Members must be active users of tag USER: GUEST users cannot hold policies (docs/access-control-api.md). */
  const checkMembers = async (field: string, ids: readonly number[]) => {
    const active = await users.activeIds(ids);
    const unknown = [...new Set(ids.filter((id) => !active.has(id)))];
    if (unknown.length > 0) throw new BadRequest(`${field}: no user with email_id ${unknown.join(', ')}`);
    const guests: number[] = [];
    for (const id of new Set(ids)) if ((await users.get(id))?.tag === 'GUEST') guests.push(id);
    if (guests.length > 0) {
      throw new BadRequest(`${field}: GUEST users cannot hold policies (promote them with PUT /promoteguest first): email_id ${guests.join(', ')}`);
    }
  };

  const checkName = async (name: string, except?: number) => {
    const taken = await levels.named(name, except);
    if (taken) throw new BadRequest(`name: an access level named "${taken.name}" already exists (policy_id ${taken.policy_id})`, 409);
    // Doors match a level by policy name: a guest link's policy of the same name would carry the level to its guests.
    if (await levels.nameUsedByOtherPolicy(name))
      throw new BadRequest(`name: a guest link's policy is named "${name}": choose another name for the level`, 409);
  };

  /** Whether a resource group holds a door of this organization (server.resources). */
  const groupHasDoor = async (groupId: number) => {
    const members = await db.column<number>('SELECT member_id FROM group_members WHERE group_id = ?', [groupId]);
    return members.some((id) => ctx.resources.find((r) => r.resourceId === id)?.type === 'DOOR');
  };

  /** The definition after `p` is applied over `base` (POST: nothing), checked as a whole. */
  const definition = async (p: DefinitionParams, base: LevelDefinition | null): Promise<LevelDefinition> => {
    if (p.schedule !== undefined && p.time_mapping !== undefined) {
      throw new BadRequest('schedule, time_mapping: give one of them, not both (time_mapping is converted to a schedule)');
    }
    let schedule: LevelSchedule | null = base?.schedule ?? null;
    if (p.schedule !== undefined) schedule = p.schedule;
    if (p.time_mapping !== undefined) {
      if (p.time_mapping !== null) refuseNeverOpening(p.time_mapping);
      schedule = p.time_mapping === null ? null : timeMappingToSchedule(p.time_mapping);
    }
    const def: LevelDefinition = {
      resource_ids: p.resource_ids ?? base?.resource_ids ?? [],
      resource_group_id: p.resource_group_id === undefined ? (base?.resource_group_id ?? null) : p.resource_group_id,
      schedule,
      start_time: p.start_time === undefined ? (base?.start_time ?? null) : p.start_time,
      end_time: p.end_time === undefined ? (base?.end_time ?? null) : p.end_time,
    };
    if (p.resource_ids !== undefined) {
      const notDoors = [...new Set(p.resource_ids.filter((id) => ctx.resources.find((r) => r.resourceId === id)?.type !== 'DOOR'))];
      if (notDoors.length > 0) throw new BadRequest(`resource_ids: not doors of this organization (server.resources): ${notDoors.join(', ')}`);
    }
    if (p.resource_group_id !== undefined && p.resource_group_id !== null) {
      const group = await levels.resourceGroup(p.resource_group_id);
      if (!group) throw new BadRequest(`resource_group_id: no resource group with group_id ${p.resource_group_id}`);
      if (group.resource_type === 'COMPUTER')
        throw new BadRequest(`resource_group_id: group ${p.resource_group_id} (${group.name}) is a group of computers, not doors`);
    }
    if (def.resource_ids.length === 0 && def.resource_group_id === null) {
      throw new BadRequest('resource_ids, resource_group_id: a level needs doors: give resource_ids, resource_group_id or both');
    }
    // The doors of a level's group are its door members (computers never are): a group without one opens nothing.
    // Checked when the level's doors are given, not when a group loses its doors later (the level stays, doorless).
    const whereGiven = p.resource_ids !== undefined || p.resource_group_id !== undefined;
    if (whereGiven && def.resource_ids.length === 0 && def.resource_group_id !== null && !(await groupHasDoor(def.resource_group_id))) {
      const group = await levels.resourceGroup(def.resource_group_id);
      const named = group ? ` (${group.name})` : '';
      throw new BadRequest(
        `resource_ids, resource_group_id: a level needs doors: group ${def.resource_group_id}${named} holds no door: add doors to it, or give resource_ids`,
      );
    }
    if (def.start_time !== null && def.end_time !== null && parseServiceTime(def.end_time)! <= parseServiceTime(def.start_time)!) {
      throw new BadRequest(`end_time: ${def.end_time} is not after start_time ${def.start_time}`);
    }
    return def;
  };

  const levelOr404 = async (policyId: number): Promise<Level> => {
    const level = await levels.get(policyId);
    if (!level) throw new BadRequest(`no access level with policy_id ${policyId} (only policies made by POST /policies are levels)`, 404);
    return level;
  };

  /** A level as GET /policies shows it; `groups` holds the resource groups looked up already (a list shares them). */
  const shown = async (level: Level, memberCount: number, groups = new Map<number, Awaited<ReturnType<typeof levels.resourceGroup>>>()) => {
    const groupId = level.resource_group_id;
    if (groupId !== null && !groups.has(groupId)) groups.set(groupId, await levels.resourceGroup(groupId));
    const group = groupId === null ? undefined : groups.get(groupId);
    return {
      policy_id: level.policy_id,
      name: level.name,
      resource_ids: level.resource_ids,
      resource_group: group ? { group_id: group.group_id, name: group.name } : null,
      schedule: level.schedule,
      start_time: level.start_time,
      end_time: level.end_time,
      member_count: memberCount,
    };
  };

  const createDoc = {
    summary: 'Creates an access level: doors, a weekly schedule, an optional start and end, and its members.',
    description: 'Give schedule or time_mapping, not both; neither: always. Members are USER users (not guests).',
    tag: 'Access levels',
    key: 'ADMIN',
    params: createSchema,
    answer: policyCreatedSchema,
    statuses: {
      409: `${NAME_TAKEN} Or: there are ${MAX_LEVELS} levels already.`,
      413: `More than ${LIMITS.ids} email_ids or ${LIMITS.resources} resource_ids.`,
    },
  } as const;
  app.post('/policies', documented(createDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(createSchema, request);
    const members = p.email_ids ?? [];
    const policyId = await db.transaction(async () => {
      const def = await definition(p, null);
      await checkMembers('email_ids', members);
      await checkName(p.name);
      if ((await levels.count()) >= MAX_LEVELS) {
        throw new BadRequest(`there are already ${thousands(MAX_LEVELS)} access levels, the most the doors take: delete one first`, 409);
      }
      return levels.create(p.name, def, members);
    });
    return { success: `access level ${p.name} created with ${new Set(members).size} member(s)`, policy_id: policyId };
  });

  const updateDoc = {
    summary: 'Changes an access level: what is given replaces its definition, add_ids and del_ids its members.',
    description: 'null clears start_time, end_time, schedule (always) or resource_group_id.',
    tag: 'Access levels',
    key: 'ADMIN',
    params: updateSchema,
    answer: successAnswerSchema,
    statuses: { 404: NO_LEVEL, 409: NAME_TAKEN, 413: `More than ${LIMITS.ids} add_ids or del_ids, or ${LIMITS.resources} resource_ids.` },
  } as const;
  app.put('/policies', documented(updateDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(updateSchema, request);
    const add = p.add_ids ?? [];
    const del = p.del_ids ?? [];
    const name = await db.transaction(async () => {
      const level = await levelOr404(p.policy_id);
      const def = await definition(p, level);
      await checkMembers('add_ids', add);
      const both = add.filter((id) => del.includes(id));
      if (both.length > 0) throw new BadRequest(`add_ids, del_ids: email_id ${[...new Set(both)].join(', ')} is in both`);
      const name = p.name ?? level.name;
      if (p.name !== undefined) await checkName(p.name, level.policy_id);
      await levels.update(level.policy_id, name, def, add, del);
      return name;
    });
    return { success: `access level ${name} updated` };
  });

  const listDoc = {
    summary: 'Every access level, or one with its members.',
    tag: 'Access levels',
    key: 'ADMIN',
    params: idSchema,
    answer: policiesAnswerSchema,
    statuses: { 404: NO_LEVEL },
  } as const;
  app.get('/policies', documented(listDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(idSchema, request);
    const policyId = p.policy_id;
    // Read in one transaction: the levels, their groups and their members of one moment.
    return db.transaction(async () => {
      if (policyId !== undefined) {
        const level = await levelOr404(policyId);
        const members = await levels.members(level.policy_id);
        return { ...(await shown(level, members.length)), email_ids: members };
      }
      const counts = await levels.memberCounts();
      const groups = new Map<number, Awaited<ReturnType<typeof levels.resourceGroup>>>();
      const policies = [];
      for (const level of await levels.list()) policies.push(await shown(level, counts.get(level.policy_id) ?? 0, groups));
      return { policies };
    });
  });

  const deleteDoc = {
    summary: 'Deletes an access level.',
    tag: 'Access levels',
    key: 'ADMIN',
    params: deleteSchema,
    answer: successAnswerSchema,
    statuses: { 404: NO_LEVEL },
  } as const;
  app.delete('/policies', documented(deleteDoc), async (request) => {
    ctx.requireRank(request, 'ADMIN');
    const p = params(deleteSchema, request);
    const level = await db.transaction(async () => {
      const level = await levelOr404(p.policy_id);
      await levels.delete(level.policy_id);
      return level;
    });
    return { success: `access level ${level.name} deleted` };
  });
}
