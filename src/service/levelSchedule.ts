import { z } from 'zod';
import { timeMappingSchema } from '../api/shapes.js';
import type { HourRange } from '../core/schedule.js';

/**
 * The weekly schedule of an access level (POST and PUT /policies, GET /directory's `levels`): the same shape as an
 * agent's config `schedules:` entry. Optional weekdays `sun` .. `sat`, each a non-empty list of "HH:MM-HH:MM"
 * ranges (minute resolution, 00:00..24:00; an end before the start runs past midnight into the next day), plus
 * `holidays: "closed" | "open"` (default closed). Overlapping ranges, an overnight tail included, are refused
 * naming both. The messages are the agent's own (core/weeklySchedule.ts), so an operator reads the same words
 * wherever a schedule is refused.
 */

export const WEEKDAY_KEYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type WeekdayKey = (typeof WEEKDAY_KEYS)[number];
export type LevelSchedule = { [K in WeekdayKey]?: string[] } & { holidays: 'closed' | 'open' };

const MINUTES_PER_DAY = 24 * 60;
const MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY;
const MAX_RANGES_A_DAY = 48;
const RANGE = /^(\d{2}):(\d{2})-(\d{2}):(\d{2})$/;

interface ParsedRange {
  day: number;
  index: number;
  text: string;
  /** Minutes from its weekday's midnight; an end above 1440 runs into the next day. */
  start: number;
  end: number;
}

function parseClock(hh: string, mm: string, text: string, which: 'start' | 'end'): number | string {
  const minutes = Number(mm);
  if (minutes > 59) return `"${text}": minutes run from 00 to 59`;
  const total = Number(hh) * 60 + minutes;
  if (total > MINUTES_PER_DAY) return `"${text}" is past 24:00`;
  if (total === MINUTES_PER_DAY && which === 'start') return `"${text}" starts at 24:00: write 00:00 on the next day`;
  return total;
}

function parseRange(raw: string, day: number, index: number): ParsedRange | string {
  const text = raw.trim();
  const m = RANGE.exec(text);
  if (!m) return `"${raw}": expected a range "HH:MM-HH:MM" (e.g. "07:30-18:00")`;
  const start = parseClock(m[1]!, m[2]!, text, 'start');
  if (typeof start === 'string') return start;
  const end = parseClock(m[3]!, m[4]!, text, 'end');
  if (typeof end === 'string') return end;
  if (start === end) return `"${text}" is empty (start and end are the same)`;
  return { day, index, text, start, end: end < start ? end + MINUTES_PER_DAY : end };
}

const dayList = z
  .array(z.string({ error: 'expected a range "HH:MM-HH:MM"' }), { error: 'expected a list of ranges "HH:MM-HH:MM"' })
  .min(1, 'an empty list: leave the day out for no access that day')
  .max(MAX_RANGES_A_DAY, `at most ${MAX_RANGES_A_DAY} ranges a day`);

/** A schedule as given: every range checked (issue paths below the schedule), overlaps refused, days in week order. */
export const levelScheduleSchema = z
  .strictObject(
    {
      sun: dayList.optional(),
      mon: dayList.optional(),
      tue: dayList.optional(),
      wed: dayList.optional(),
      thu: dayList.optional(),
      fri: dayList.optional(),
      sat: dayList.optional(),
      holidays: z.enum(['closed', 'open'], { error: 'expected "closed" or "open"' }).optional(),
    },
    { error: (issue) => (issue.code === 'invalid_type' ? 'expected an object with weekdays (sun, mon, ..., sat) and optional holidays' : undefined) },
  )
  .transform((spec, ctx): LevelSchedule => {
    const ranges: ParsedRange[] = [];
    WEEKDAY_KEYS.forEach((key, day) => {
      spec[key]?.forEach((text, index) => {
        const range = parseRange(text, day, index);
        if (typeof range === 'string') ctx.addIssue({ code: 'custom', path: [key, index], message: range });
        else ranges.push(range);
      });
    });
    if (!WEEKDAY_KEYS.some((k) => spec[k] !== undefined)) {
      ctx.addIssue({ code: 'custom', path: [], message: 'no weekday has a range: list at least one day' });
    }
    // Each minute of the week belongs to one range at most: the first range found on a minute is named.
    const owner = new Array<ParsedRange | undefined>(MINUTES_PER_WEEK);
    for (const range of ranges) {
      let clash: ParsedRange | undefined;
      for (let m = range.start; m < range.end; m++) {
        const minute = (range.day * MINUTES_PER_DAY + m) % MINUTES_PER_WEEK;
        const held = owner[minute];
        if (held !== undefined) clash ??= held;
        else owner[minute] = range;
      }
      if (clash) {
        ctx.addIssue({
          code: 'custom',
          path: [WEEKDAY_KEYS[range.day]!, range.index],
          message: `"${range.text}" overlaps "${clash.text}" (${WEEKDAY_KEYS[clash.day]}[${clash.index}]): merge them into one range`,
        });
      }
    }
    const out: Partial<LevelSchedule> = {};
    for (const key of WEEKDAY_KEYS) if (spec[key]) out[key] = spec[key].map((t) => t.trim());
    out.holidays = spec.holidays ?? 'closed';
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
