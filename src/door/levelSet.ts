import type { DirectoryLevel } from '../api/shapes.js';
import { compileLevels, type AccessLevel, type LevelIndex } from '../core/accessLevels.js';
import { parseServiceTime } from '../core/schedule.js';
import { compileWeeklySchedule, NEVER_OPEN } from '../core/weeklySchedule.js';
import type { ServiceLevels } from '../store/serviceLevels.js';
import type { AccessOptions, DoorOptions } from './options.js';
import { withProps } from '../core/objects.js';

/** The name of the level access.groups/policies stand for: every door, always. */
const EVERY_DOOR_LEVEL = 'every_door';

export interface LevelSet {
  index: LevelIndex;
  /** Service levels left out because a config level has the same name (the config wins). */
  shadowed: string[];
  /** Resource groups named by config levels that the service does not (or not yet) list. */
  unknownResourceGroups: string[];
}

function serviceLevel(level: DirectoryLevel, doors: readonly DoorOptions[]): AccessLevel {
  const ids = new Set(level.resource_ids);
  const out: AccessLevel = {
    name: level.name,
    source: 'service',
    groups: [],
    // Who holds a service level: the users the service lists with the policy of that name.
    policies: [level.name],
    doors: doors.filter((d) => ids.has(d.resourceId)).map((d) => d.uuid),
    schedule: null,
    startAt: level.start_time ? parseServiceTime(level.start_time) : null,
    endAt: level.end_time ? parseServiceTime(level.end_time) : null,
  };
  if (level.schedule != null) {
    const compiled = compileWeeklySchedule(level.schedule);
    // Validated when the sync stored it; a schedule that no longer compiles grants nothing (never "always").
    out.schedule = 'schedule' in compiled ? compiled.schedule : NEVER_OPEN;
  }
  if (level.resource_group) out.resourceGroup = level.resource_group;
  return out;
}

/**
 * Every level in force for this agent, compiled: access.groups/policies (every door, always), the config's
 * levels (a resource group resolved against the service's), and the service's levels (a config level of the
 * same name wins).
 */
export function buildLevelSet(access: AccessOptions, doors: readonly DoorOptions[], service: ServiceLevels | null): LevelSet {
  const levels: AccessLevel[] = [];
  if (access.groups.length + access.policies.length > 0) {
    levels.push({ name: EVERY_DOOR_LEVEL, source: 'every_door', groups: access.groups, policies: access.policies, doors: 'all', schedule: null });
  }
  const unknownResourceGroups: string[] = [];
  const groups = new Map((service?.resourceGroups ?? []).map((g) => [g.name, new Set(g.resource_ids)]));
  for (const level of access.levels) {
    if (level.resourceGroup === undefined || level.doors === 'all') {
      levels.push(level);
      continue;
    }
    const members = groups.get(level.resourceGroup);
    if (!members) unknownResourceGroups.push(level.resourceGroup);
    const inGroup = members ? doors.filter((d) => members.has(d.resourceId)).map((d) => d.uuid) : [];
    levels.push(withProps(level, { doors: [...new Set([...level.doors, ...inGroup])] }));
  }
  const configNames = new Set(access.levels.map((l) => l.name));
  const shadowed: string[] = [];
  for (const level of service?.levels ?? []) {
    if (configNames.has(level.name)) shadowed.push(level.name);
    else levels.push(serviceLevel(level, doors));
  }
  return {
    index: compileLevels(
      levels,
      doors.map((d) => d.uuid),
    ),
    shadowed,
    unknownResourceGroups,
  };
}
