import type { AgentOptions } from '../config/options.js';
import { NO_AREAS, occupants, replay, resetDue } from '../core/areas.js';
import { musterList, type MusterEntry } from '../protocol/areas.js';
import { readAreaFacts } from '../store/areaFacts.js';
import { CredentialCache } from '../store/credentialCache.js';
import type { Db } from '../store/database.js';

/** A door's name (doors are named by uuid in the options of areas and interlocks). */
function doorName(config: AgentOptions, uuid: string): string {
  return config.doors.find((d) => d.uuid === uuid)?.name ?? uuid;
}

/** `config check`: each area, interlock and two-person door (docs/areas.md). */
export function doorGroupLines(config: AgentOptions, indent = '  '): string[] {
  const areas = (config.areas ?? []).map((area) => {
    const { mode, rule, seconds } = area.antiPassback;
    const passback = mode === 'off' ? 'anti-passback off' : `anti-passback ${mode} ${rule === 'timed' ? `timed (${seconds} s)` : 'in/out'}`;
    return (
      `${indent}area ${area.id}${area.name !== area.id ? ` (${area.name})` : ''}: doors ${area.doors.map((d) => doorName(config, d)).join(', ')}; ${passback}; ` +
      `${area.maxOccupancy === null ? 'no maximum' : `at most ${area.maxOccupancy} inside`}; ` +
      `${area.resetAt === null ? 'reset by command only' : `reset daily at ${area.resetAt} (${config.agent.timezone})`}`
    );
  });
  const interlocks = (config.interlocks ?? []).map(
    (interlock) => `${indent}interlock: ${interlock.doors.map((d) => doorName(config, d)).join(', ')} (one unlocked or open at a time)`,
  );
  const twoPerson = config.doors.flatMap((d) =>
    d.twoPerson ? [`${indent}two-person rule at ${d.name}: two different holders within ${d.twoPerson.windowSeconds} s`] : [],
  );
  return [...areas, ...interlocks, ...twoPerson];
}

/** An area as `status` shows it: its count and muster list, replayed from the audit log as the daemon does. */
export interface AreaView {
  id: string;
  name: string;
  count: number;
  maxOccupancy: number | null;
  antiPassback: string;
  occupants: MusterEntry[];
  /** A daily reset that fell while no daemon ran (the daemon makes it when it starts), ISO; null: none. */
  resetDue: string | null;
}

/**
 * Each area's state from state.db: the same facts and the same fold (core/areas.ts) as the daemon's, so `status`
 * shows what the daemon holds, without asking it (a grant not yet through its door is not counted by either).
 */
export function areaStatus(config: AgentOptions, state: Db | null, cache: Db, now: number): AreaView[] {
  const configured = config.areas ?? [];
  if (configured.length === 0) return [];
  const replayed = state
    ? replay(
        readAreaFacts(
          state,
          configured.map((a) => a.id),
        ).facts,
      )
    : NO_AREAS;
  const credentials = new CredentialCache(cache);
  const user = (emailId: number) => {
    try {
      return credentials.userName(emailId);
    } catch {
      return null;
    }
  };
  return configured.map((area) => {
    const due = area.resetAt === null ? null : resetDue(replayed, area.id, now, area.resetAt, config.agent.timezone);
    const list = due === null ? musterList(occupants(replayed, area.id), { user, door: (uuid) => doorName(config, uuid) }) : [];
    const { mode, rule, seconds } = area.antiPassback;
    return {
      id: area.id,
      name: area.name,
      count: list.length,
      maxOccupancy: area.maxOccupancy,
      antiPassback: mode === 'off' ? 'off' : `${mode} ${rule === 'timed' ? `timed ${seconds} s` : 'inout'}`,
      occupants: list,
      resetDue: due === null ? null : new Date(due).toISOString(),
    };
  });
}

/** `status`: each area's count and who is in. */
export function areaLines(areas: readonly AreaView[]): string[] {
  if (areas.length === 0) return [];
  return [
    'areas:',
    ...areas.flatMap((a) => [
      `  ${a.name} (${a.id}): ${a.count} inside${a.maxOccupancy === null ? '' : ` of at most ${a.maxOccupancy}`}; anti-passback ${a.antiPassback}` +
        (a.resetDue ? `; reset due since ${a.resetDue} (the daemon resets it when it starts)` : ''),
      ...a.occupants.map((o) => `    ${o.name ?? o.holder} (${o.holder}) since ${o.since}, through ${o.door_name}`),
    ]),
  ];
}
