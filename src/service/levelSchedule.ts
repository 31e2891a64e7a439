import * as z from 'zod';
import { timeMappingSchema } from '../api/shapes.js';
import type { HourRange } from '../core/schedule.js';
import { compileWeeklySchedule, WEEKDAY_KEYS, type HolidayRule, type WeekdayKey } from '../core/weeklySchedule.js';

/**
 * The weekly schedule of an access level (POST and PUT /policies, GET /directory's `levels`): the same shape as an
 * agent's config `schedules:` entry. Optional weekdays `sun` .. `sat`, each a non-empty list of "HH:MM-HH:MM"
 * ranges (minute resolution, 00:00..24:00; an end before the start runs past midnight into the next day), plus
 * `holidays: "closed" | "open"` (default closed). Overlapping ranges, an overnight tail included, are refused
 * naming both. The check is the agents' own (core/weeklySchedule.ts): what the service accepts, every door
 * accepts, and an operator reads the same words wherever a schedule is refused.
 */

export type LevelSchedule = { [K in WeekdayKey]?: string[] } & { holidays: HolidayRule };

/**
 * A schedule as given, checked by the agents' own compiler (every problem an issue at its path below the
 * schedule), answered with its ranges trimmed, its days in week order and `holidays` last and always present.
 */
export const levelScheduleSchema = z.unknown().transform((spec, ctx): LevelSchedule => {
  const compiled = compileWeeklySchedule(spec);
  if ('problems' in compiled) {
    for (const problem of compiled.problems) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
    return z.NEVER;
  }
  const out: Partial<LevelSchedule> = {};
  for (const key of WEEKDAY_KEYS) {
    const ranges = compiled.schedule.spec[key];
    if (ranges) out[key] = [...ranges];
  }
  out.holidays = compiled.schedule.holidays;
  return out as LevelSchedule;
});

const hh = (hour: number) => `${String(hour).padStart(2, '0')}:00`;

/**
 * A guest link's time_mapping (7 lists of [startHour, endHour) ranges, Sunday first) as a schedule: hour h is
 * "hh:00", [0, 24] is "00:00-24:00". Ranges of a day that overlap or touch are merged (the same hours either way);
 * a day without ranges is left out; holidays closed, as the doors treat guest links. Null when no day has a range.
 */
export function timeMappingToSchedule(mapping: ReadonlyArray<ReadonlyArray<HourRange>>): LevelSchedule | null {
  const out: Partial<LevelSchedule> = {};
  mapping.forEach((day, i) => {
    const merged: Array<[number, number]> = [];
    for (const [start, end] of [...day].sort((a, b) => a[0] - b[0])) {
      const last = merged.at(-1);
      if (last && start <= last[1]) last[1] = Math.max(last[1], end);
      else merged.push([start, end]);
    }
    if (merged.length > 0) out[WEEKDAY_KEYS[i]!] = merged.map(([s, e]) => `${hh(s)}-${hh(e)}`);
  });
  if (!WEEKDAY_KEYS.some((k) => out[k] !== undefined)) return null;
  out.holidays = 'closed';
  return out as LevelSchedule;
}

export { timeMappingSchema };
