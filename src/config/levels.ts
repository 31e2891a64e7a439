import * as z from 'zod';
import { wholeNumber } from '../api/wholeNumber.js';
import type { AccessLevel } from '../core/accessLevels.js';
import { isCalendarDate } from '../core/schedule.js';
import { thousands } from '../util/plural.js';
import { clockText, compileWeeklySchedule, skippedLocalMinutes, WEEKDAY_KEYS, type WeeklySchedule } from '../core/weeklySchedule.js';

/** Limits: each level is compiled into per-door maps and each schedule into a 1,260-byte bitmap. */
const MAX_LEVELS = 1000;
const MINUTES_PER_DAY = 24 * 60;
const MAX_SCHEDULES = 500;

/** A calendar date, YYYY-MM-DD, that exists (2026-02-30 does not). */
export const calendarDate = z.preprocess(
  (v) => (v instanceof Date ? v.toISOString().slice(0, 10) : v),
  z.string().refine(isCalendarDate, 'expected a date YYYY-MM-DD'),
);

const NAME = /^[^\s](.{0,98}[^\s])?$/;

/**
 * A schedule entry compiled once per parsed configuration: the checks across keys and the options built from the
 * same parse both need it (entries are the parsed objects themselves, so they key the memo).
 */
const compiledEntries = new WeakMap<object, ReturnType<typeof compileWeeklySchedule>>();
function compileEntry(spec: unknown): ReturnType<typeof compileWeeklySchedule> {
  if (spec === null || typeof spec !== 'object') return compileWeeklySchedule(spec);
  let compiled = compiledEntries.get(spec);
  if (!compiled) {
    compiled = compileWeeklySchedule(spec);
    compiledEntries.set(spec, compiled);
  }
  return compiled;
}

/** `schedules:` named weekly schedules; each entry is checked whole by compileWeeklySchedule (refineLevels). */
export const schedulesSchema = z
  .record(
    z.string().regex(NAME, 'a schedule name is 1-100 characters without leading or trailing spaces'),
    // Checked by compileEntry below; for the JSON Schema (schema/config.schema.json), a description.
    z.unknown().meta({ description: 'a weekly schedule: sun ... sat and holidays, each a list of local time ranges, e.g. mon: ["07:30-18:00"]' }),
  )
  .refine((s) => Object.keys(s).length <= MAX_SCHEDULES, `at most ${MAX_SCHEDULES} schedules`)
  .default({});

const levelSchema = z
  .strictObject({
    name: z.string().regex(NAME, 'a level name is 1-100 characters without leading or trailing spaces'),
    /** Who: members of any of these user groups or policies. */
    groups: z.array(z.string().min(1)).default([]),
    policies: z.array(z.string().min(1)).default([]),
    /** Where: doors of this agent by name, uuid or resourceId. */
    doors: z.array(z.union([z.string().min(1), wholeNumber().min(0)])).default([]),
    /** Where: the doors of this agent in a resource group of the service (as the directory lists it). */
    resourceGroup: z.string().min(1).optional(),
    /** When: a name under `schedules:`; none = always. */
    schedule: z.string().min(1).optional(),
    /** In force from this local date (inclusive) ... */
    from: calendarDate.optional(),
    /** ... until this local date (inclusive). */
    until: calendarDate.optional(),
  })
  .superRefine((level, ctx) => {
    if (level.groups.length + level.policies.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['groups'], message: 'who: list at least one group or policy whose members hold this level' });
    }
    if (level.doors.length === 0 && level.resourceGroup === undefined) {
      ctx.addIssue({ code: 'custom', path: ['doors'], message: 'where: list at least one door (name, uuid or resourceId) or a resourceGroup' });
    }
    if (level.from !== undefined && level.until !== undefined && level.until < level.from) {
      ctx.addIssue({ code: 'custom', path: ['until'], message: `ends (${level.until}) before it starts (from ${level.from})` });
    }
  });

export const levelsSchema = z
  .array(levelSchema)
  .max(MAX_LEVELS, `at most ${thousands(MAX_LEVELS)} levels per agent`)
  .default([]);

type ConfigLevel = z.output<typeof levelSchema>;
interface DoorRef {
  uuid: string;
  resourceId: number;
  name?: string | undefined;
}

function doorNameOf(door: DoorRef): string {
  return door.name ?? `Door ${door.resourceId}`;
}

/** The door a level (or emergency.doors) names: by name, uuid or resourceId; undefined when none. */
export function findDoor(doors: readonly DoorRef[], ref: string | number): DoorRef | undefined {
  if (typeof ref === 'number') return doors.find((d) => d.resourceId === ref);
  const lower = ref.toLowerCase();
  return (
    doors.find((d) => doorNameOf(d) === ref) ??
    doors.find((d) => d.uuid.toLowerCase() === lower) ??
    (/^\d+$/.test(ref) ? doors.find((d) => d.resourceId === Number(ref)) : undefined)
  );
}

const NOT_A_DOOR = 'is not a door of this agent';

/** A door reference that names no door of this agent, and the doors it could have named. */
export function unknownDoorMessage(ref: string | number, doors: readonly DoorRef[]): string {
  return `${JSON.stringify(ref)} ${NOT_A_DOOR} (doors: ${doors.map((d) => `${doorNameOf(d)} / ${d.resourceId}`).join(', ')})`;
}

/** Whether a problem is unknownDoorMessage's (config/acrossKeys.ts leaves it out while a door's identity is unreadable). */
export function isUnknownDoorMessage(message: string): boolean {
  return message.includes(NOT_A_DOOR);
}

/**
 * The checks across keys: each schedule compiles (ranges, overlaps) and none has a boundary the agent's time
 * zone skips (a spring-forward gap); each level's doors are doors of this agent, its schedule exists, names are
 * unique.
 */
export function refineLevels(
  config: { agent: { timezone: string }; schedules: Record<string, unknown>; access: { levels: ConfigLevel[] }; doors: readonly DoorRef[] },
  ctx: z.RefinementCtx,
  now = Date.now(),
): void {
  let gaps: ReturnType<typeof skippedLocalMinutes> | undefined;
  for (const [name, spec] of Object.entries(config.schedules)) {
    const compiled = compileEntry(spec);
    if ('problems' in compiled) {
      for (const p of compiled.problems) ctx.addIssue({ code: 'custom', path: ['schedules', name, ...p.path], message: p.message });
      continue;
    }
    gaps ??= skippedLocalMinutes(config.agent.timezone, now);
    for (const problem of dstGapProblems(compiled.schedule, gaps, config.agent.timezone)) {
      ctx.addIssue({ code: 'custom', path: ['schedules', name, ...problem.path], message: problem.message });
    }
  }
  const names = new Map<string, number>();
  config.access.levels.forEach((level, i) => {
    const seen = names.get(level.name);
    if (level.name === 'every_door') {
      ctx.addIssue({
        code: 'custom',
        path: ['access', 'levels', i, 'name'],
        message: '"every_door" is the name of access.groups/policies (every door, always): choose another',
      });
    } else if (seen !== undefined) ctx.addIssue({ code: 'custom', path: ['access', 'levels', i, 'name'], message: `same name as access.levels[${seen}]` });
    else names.set(level.name, i);
    level.doors.forEach((ref, j) => {
      if (!findDoor(config.doors, ref)) {
        ctx.addIssue({ code: 'custom', path: ['access', 'levels', i, 'doors', j], message: unknownDoorMessage(ref, config.doors) });
      }
    });
    if (level.schedule !== undefined && !Object.hasOwn(config.schedules, level.schedule)) {
      const known = Object.keys(config.schedules);
      ctx.addIssue({
        code: 'custom',
        path: ['access', 'levels', i, 'schedule'],
        message: `unknown schedule ${JSON.stringify(level.schedule)} (${known.length ? `schedules: ${known.join(', ')}` : 'no schedules: are defined'})`,
      });
    }
  });
}

/** Boundaries of a schedule that fall in a time the zone skips on that weekday: they would never happen that day. */
function dstGapProblems(
  schedule: WeeklySchedule,
  gaps: ReturnType<typeof skippedLocalMinutes>,
  timeZone: string,
): Array<{ path: Array<string | number>; message: string }> {
  const out: Array<{ path: Array<string | number>; message: string }> = [];
  for (const { day, start, end, index } of schedule.ranges) {
    // A range past midnight ends on the next day.
    const boundaries = [
      [start, day],
      [end % MINUTES_PER_DAY, end > MINUTES_PER_DAY ? (day + 1) % 7 : day],
    ] as const;
    for (const [boundary, onDay] of boundaries) {
      const gap = gaps.find((g) => g.day === onDay && boundary > g.start && boundary < g.end);
      if (!gap) continue;
      out.push({
        path: [WEEKDAY_KEYS[day]!, index],
        message: `${clockText(boundary)} does not exist on ${gap.date} in ${timeZone} (clocks go from ${clockText(gap.start)} to ${clockText(gap.end)}): use ${clockText(gap.start)} or ${clockText(gap.end)}`,
      });
      break;
    }
  }
  return out;
}

/** The configured levels as the core takes them (doors resolved to uuids; a resource group resolved at run time). */
export function configLevels(config: { schedules: Record<string, unknown>; access: { levels: ConfigLevel[] }; doors: readonly DoorRef[] }): AccessLevel[] {
  const schedules = new Map<string, WeeklySchedule>();
  for (const [name, spec] of Object.entries(config.schedules)) {
    const compiled = compileEntry(spec);
    if ('schedule' in compiled) schedules.set(name, compiled.schedule);
  }
  return config.access.levels.map((level) => {
    const out: AccessLevel = {
      name: level.name,
      source: 'config',
      groups: level.groups,
      policies: level.policies,
      doors: [...new Set(level.doors.map((ref) => findDoor(config.doors, ref)!.uuid.toLowerCase()))],
      schedule: level.schedule === undefined ? null : schedules.get(level.schedule)!,
    };
    if (level.schedule !== undefined) out.scheduleName = level.schedule;
    if (level.resourceGroup !== undefined) out.resourceGroup = level.resourceGroup;
    if (level.from !== undefined) out.fromDate = level.from;
    if (level.until !== undefined) out.untilDate = level.until;
    return out;
  });
}
