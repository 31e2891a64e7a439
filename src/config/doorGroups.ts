import * as z from 'zod';
import { wholeNumber } from '../api/wholeNumber.js';
import { doorGroupProblems, type AreaOptions, type GroupProblem, type InterlockOptions } from '../core/doorGroupChecks.js';
import type { DoorOptions } from '../door/options.js';
import type { doorSchema } from './doorSchema.js';
import { findDoor, unknownDoorMessage } from './levels.js';

/**
 * `areas:` and `interlocks:` (issue 26, docs/areas.md): the doors that lead into a space (anti-passback, occupancy)
 * and the doors of a mantrap. The checks across them are the pure core's (`core/doorGroupChecks.ts`), run on the
 * doors as the file gives them; a door is named as in `access.levels` and `emergency.doors` (name, uuid or resourceId).
 */

const doorRef = z.union([z.string().min(1), wholeNumber().min(0)]);

const areaSchema = z.strictObject({
  // In MQTT topics (`P/agents/<id>/areas/<area>/occupancy`): topic-safe.
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, "-" or "_" (it is part of MQTT topics)'),
  name: z.string().min(1).max(100).optional(),
  /** The doors that lead into the area: their entry readers let holders in, their exit readers out. */
  doors: z.array(doorRef).max(64),
  antiPassback: z
    .strictObject({
      mode: z.enum(['off', 'soft', 'hard']).default('off'),
      rule: z.enum(['timed', 'inout']).default('inout'),
      seconds: wholeNumber().optional(),
    })
    .prefault({}),
  /** An entry that would take the occupancy past this is refused (area_full); absent: no maximum. */
  maxOccupancy: wholeNumber().optional(),
  /** "HH:MM" in agent.timezone: anti-passback and occupancy start again each day; absent: by command only. */
  resetAt: z.string().optional(),
});

export const areasSchema = z.array(areaSchema).max(64).default([]);
export const interlocksSchema = z
  .array(z.strictObject({ doors: z.array(doorRef).max(16) }))
  .max(64)
  .default([]);

type Area = z.output<typeof areaSchema>;
type Door = z.output<typeof doorSchema>;
interface Groups {
  doors: readonly Door[];
  areas: readonly Area[];
  interlocks: ReadonlyArray<{ doors: ReadonlyArray<string | number> }>;
}

/** A door a group names, as its lower-case uuid; a name that is no door stays as written (the check reports it). */
function resolve(doors: readonly Door[], ref: string | number): string {
  return findDoor(doors, ref)?.uuid.toLowerCase() ?? String(ref);
}

/** The areas with their doors resolved: what the check and the runtime take. @internal */
export function areaOptions(config: Pick<Groups, 'doors' | 'areas'>): Array<AreaOptions & { name: string }> {
  return config.areas.map((area) => ({
    id: area.id,
    name: area.name ?? area.id,
    doors: area.doors.map((ref) => resolve(config.doors, ref)),
    antiPassback: { mode: area.antiPassback.mode, rule: area.antiPassback.rule, seconds: area.antiPassback.seconds ?? null },
    maxOccupancy: area.maxOccupancy ?? null,
    resetAt: area.resetAt ?? null,
  }));
}

export function interlockOptions(config: Pick<Groups, 'doors' | 'interlocks'>): InterlockOptions[] {
  return config.interlocks.map((interlock) => ({ doors: interlock.doors.map((ref) => resolve(config.doors, ref)) }));
}

/** The core's check on the file's doors, areas and interlocks; an unknown door is named with the doors there are. */
function errorsOf(config: Groups): GroupProblem[] {
  const { errors } = doorGroupProblems({
    doors: config.doors.map((d) => ({
      uuid: d.uuid.toLowerCase(),
      entryReader: d.reader !== undefined || d.readers?.entry !== undefined,
      exitReader: d.readers?.exit !== undefined,
      contact: d.contact !== undefined,
      unlockSchedule: d.unlockSchedule !== undefined,
    })),
    areas: areaOptions(config),
    interlocks: interlockOptions(config),
  });
  return errors.map((problem) => {
    const at = /^(areas|interlocks)\[(\d+)\]\.doors\[(\d+)\]$/.exec(problem.path);
    if (!at || !problem.message.endsWith('is not a configured door')) return problem;
    const group = at[1] === 'areas' ? config.areas[Number(at[2])] : config.interlocks[Number(at[2])];
    const ref = group?.doors[Number(at[3])];
    return ref === undefined ? problem : { path: problem.path, message: unknownDoorMessage(ref, config.doors) };
  });
}

/** `areas[0].antiPassback.seconds` as a zod path. */
function pathOf(text: string): Array<string | number> {
  return [...text.matchAll(/([^.[\]]+)|\[(\d+)\]/g)].map((m) => (m[2] !== undefined ? Number(m[2]) : m[1]!));
}

/** The errors across doors, areas and interlocks (docs/areas.md, "Configuration checks"), each at its key. */
export function refineDoorGroups(config: Groups, ctx: z.RefinementCtx): void {
  if (config.areas.length === 0 && config.interlocks.length === 0) return;
  for (const error of errorsOf(config)) ctx.addIssue({ code: 'custom', path: pathOf(error.path), message: error.message });
}

/**
 * The warnings on the loader's options (an exit reader on a door of an area without a contact, an unlock schedule
 * on an interlocked door): `config check` prints them and `run` logs them.
 */
export function doorGroupWarnings(config: {
  doors: readonly DoorOptions[];
  areas?: readonly AreaOptions[];
  interlocks?: readonly InterlockOptions[];
}): string[] {
  const areas = config.areas ?? [];
  const interlocks = config.interlocks ?? [];
  if (areas.length === 0 && interlocks.length === 0) return [];
  const { warnings } = doorGroupProblems({
    doors: config.doors.map((d) => ({
      uuid: d.uuid,
      entryReader: d.reader !== undefined,
      exitReader: d.exitReader !== undefined,
      contact: d.contact !== undefined,
      unlockSchedule: d.unlockSchedule !== undefined,
    })),
    areas,
    interlocks,
  });
  return warnings.map((w) => `${w.path}: ${w.message}`);
}
