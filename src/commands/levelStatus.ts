import { describeLevel, LEVEL_REFUSAL_TEXT, levelsAtDoor } from '../core/accessLevels.js';
import { levelTime } from '../core/decision.js';
import { localTimeIn } from '../core/schedule.js';
import type { AgentOptions } from '../config/options.js';
import { buildLevelSet } from '../door/levelSet.js';
import type { Db } from '../store/database.js';
import { readServiceLevels } from '../store/serviceLevels.js';

export interface LevelView {
  name: string;
  source: 'config' | 'service' | 'every_door';
  /** Where and when, in words. */
  rule: string;
  inForce: boolean;
  /** Why it is not in force now (null when it is). */
  why: string | null;
}

export interface LevelStatus {
  /** Per door uuid: the levels covering it. */
  doors: Record<string, LevelView[]>;
  /** Levels the service defines (null: it defines none, or the cache holds none yet). */
  serviceLevels: number | null;
  /** Service levels ignored: a config level has the same name. */
  shadowed: string[];
  /** Resource groups named by config levels that the service does not list. */
  unknownResourceGroups: string[];
}

/** Each door's levels (config, service, every_door) and whether each is in force at `now` (status, config check). */
export function levelStatus(config: AgentOptions, db: Db | null, now: number, holidays: ReadonlySet<string>): LevelStatus {
  const service = db ? readServiceLevels(db) : null;
  const set = buildLevelSet(config.access, config.doors, service);
  const t = levelTime(now, { localTime: localTimeIn(config.agent.timezone), holidays });
  const doorName = (uuid: string) => config.doors.find((d) => d.uuid === uuid)?.name ?? uuid;
  const doors: Record<string, LevelView[]> = {};
  for (const door of config.doors) {
    doors[door.uuid] = levelsAtDoor(set.index, door.uuid, t).map(({ level, refusal }) => ({
      name: level.name,
      source: level.source,
      rule: `${level.groups.length ? `groups ${level.groups.join(', ')}` : ''}${level.groups.length && level.policies.length ? '; ' : ''}${level.policies.length ? `policies ${level.policies.join(', ')}` : ''}: ${describeLevel(level, doorName)}`,
      inForce: refusal === null,
      why: refusal === null ? null : LEVEL_REFUSAL_TEXT[refusal],
    }));
  }
  return { doors, serviceLevels: service ? service.levels.length : null, shadowed: set.shadowed, unknownResourceGroups: set.unknownResourceGroups };
}

/** The levels in words, per door, with the warnings (a shadowed service level, an unknown resource group). */
export function levelLines(status: LevelStatus, config: AgentOptions, indent = ''): string[] {
  const lines = [`${indent}access levels${status.serviceLevels === null ? ' (none from the service)' : ` (${status.serviceLevels} from the service)`}:`];
  for (const door of config.doors) {
    const levels = status.doors[door.uuid] ?? [];
    lines.push(`${indent}  ${door.name}: ${levels.length === 0 ? 'no level covers this door: it admits guest links only' : ''}`);
    for (const l of levels) lines.push(`${indent}    ${l.name} [${l.source}] ${l.inForce ? 'in force now' : `NOT in force now: ${l.why}`} - ${l.rule}`);
  }
  for (const name of status.shadowed) {
    lines.push(`${indent}WARNING: the service defines a level "${name}" too: the config's level of that name applies, the service's is ignored`);
  }
  for (const group of status.unknownResourceGroups) {
    lines.push(`${indent}WARNING: resource group "${group}" is not listed by the service (yet): its levels cover only the doors they name`);
  }
  return lines;
}
