/**
 * Weekly schedules of access levels: per weekday, ranges "HH:MM-HH:MM" at minute resolution, in the agent's time
 * zone; an end before the start runs past midnight into the next day ("22:00-06:00" on Monday is Monday 22:00 to
 * Tuesday 06:00). Compiled once into a bitmap of the 10,080 minutes of a week, so a tap costs one bit test.
 * The same shape is the agent's config `schedules:` entry and a level's `schedule` from the service.
 */

export const WEEKDAY_KEYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type WeekdayKey = (typeof WEEKDAY_KEYS)[number];

export type HolidayRule = 'closed' | 'open';

export type WeeklyScheduleSpec = { readonly [K in WeekdayKey]?: readonly string[] } & { readonly holidays?: HolidayRule };

export interface WeeklySchedule {
  /** Bit m set: minute m of the week (0 = Sunday 00:00) is inside the schedule. */
  readonly minutes: Uint32Array;
  /** closed: no access on a holiday; open: holidays are ordinary days. */
  readonly holidays: HolidayRule;
  /** The ranges as given, per weekday (for explanations). */
  readonly spec: WeeklyScheduleSpec;
  /** The ranges parsed, in the order given (their boundaries, for the daylight-saving check). */
  readonly ranges: readonly ParsedRange[];
}

export interface ScheduleProblem {
  /** Below the schedule: ['mon', 1] */
  path: Array<string | number>;
  message: string;
}

const MINUTES_PER_DAY = 24 * 60;
const MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY;
const RANGE = /^(\d{2}):(\d{2})-(\d{2}):(\d{2})$/;

/** A parsed range: minutes from its weekday's midnight; end > MINUTES_PER_DAY runs into the next day. */
export interface ParsedRange {
  /** 0 = Sunday: the weekday it is listed under. */
  day: number;
  start: number;
  /** Past MINUTES_PER_DAY when it runs into the next day. */
  end: number;
  text: string;
  /** Its place in the weekday's list. */
  index: number;
}

function parseClock(hh: string, mm: string, text: string, which: 'start' | 'end'): number | string {
  const hours = Number(hh);
  const minutes = Number(mm);
  if (minutes > 59) return `"${text}": minutes run from 00 to 59`;
  const total = hours * 60 + minutes;
  if (total > MINUTES_PER_DAY) return `"${text}" is past 24:00`;
  if (total === MINUTES_PER_DAY && which === 'start') return `"${text}" starts at 24:00: write 00:00 on the next day`;
  return total;
}

function parseRange(text: unknown, day: number, index: number): ParsedRange | string {
  if (typeof text !== 'string') return 'expected a range "HH:MM-HH:MM"';
  const m = RANGE.exec(text.trim());
  if (!m) return `"${text}": expected a range "HH:MM-HH:MM" (e.g. "07:30-18:00")`;
  const start = parseClock(m[1]!, m[2]!, text, 'start');
  if (typeof start === 'string') return start;
  const end = parseClock(m[3]!, m[4]!, text, 'end');
  if (typeof end === 'string') return end;
  if (start === end) return `"${text}" is empty (start and end are the same)`;
  // An end before the start crosses midnight.
  return { day, start, end: end < start ? end + MINUTES_PER_DAY : end, text: text.trim(), index };
}

/** Formats minutes of a day as HH:MM. */
export function clockText(minuteOfDay: number): string {
  return `${String(Math.floor(minuteOfDay / 60)).padStart(2, '0')}:${String(minuteOfDay % 60).padStart(2, '0')}`;
}

/**
 * Compiles a schedule, or lists every problem (key paths below the schedule): a day with an empty list, a
 * malformed range, one past 24:00, an empty range, ranges that overlap (an overnight tail included), no day at all.
 */
export function compileWeeklySchedule(spec: unknown): { schedule: WeeklySchedule } | { problems: ScheduleProblem[] } {
  const problems: ScheduleProblem[] = [];
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
    return { problems: [{ path: [], message: 'expected an object with weekdays (sun, mon, ..., sat) and optional holidays' }] };
  }
  const record = spec as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (key !== 'holidays' && !(WEEKDAY_KEYS as readonly string[]).includes(key)) {
      problems.push({ path: [key], message: `unknown key: use sun, mon, tue, wed, thu, fri, sat and holidays` });
    }
  }
  const holidays = record.holidays ?? 'closed';
  if (holidays !== 'closed' && holidays !== 'open') problems.push({ path: ['holidays'], message: 'expected "closed" or "open"' });
  const ranges: ParsedRange[] = [];
  WEEKDAY_KEYS.forEach((key, day) => {
    const list = record[key];
    if (list === undefined) return;
    if (!Array.isArray(list)) {
      problems.push({ path: [key], message: 'expected a list of ranges "HH:MM-HH:MM"' });
      return;
    }
    if (list.length === 0) problems.push({ path: [key], message: 'an empty list: leave the day out for no access that day' });
    if (list.length > 48) problems.push({ path: [key], message: `${list.length} ranges; at most 48 a day` });
    list.forEach((text, index) => {
      const range = parseRange(text, day, index);
      if (typeof range === 'string') problems.push({ path: [key, index], message: range });
      else ranges.push(range);
    });
  });
  if (ranges.length === 0 && problems.length === 0) problems.push({ path: [], message: 'no weekday has a range: list at least one day' });
  // Overlaps: the ranges as segments of the week (an overnight one on Saturday wraps to Sunday), sorted by start.
  const segments = ranges.flatMap((range) => {
    const from = range.day * MINUTES_PER_DAY + range.start;
    const to = range.day * MINUTES_PER_DAY + range.end;
    return to > MINUTES_PER_WEEK
      ? [
          { from, to: MINUTES_PER_WEEK, range },
          { from: 0, to: to - MINUTES_PER_WEEK, range },
        ]
      : [{ from, to, range }];
  });
  segments.sort((a, b) => a.from - b.from || a.to - b.to);
  const clashing = new Set<ParsedRange>();
  let reach: (typeof segments)[number] | undefined;
  for (const segment of segments) {
    if (reach && segment.from < reach.to && segment.range !== reach.range && !clashing.has(segment.range)) {
      // Reported on the later range, naming the one it runs into.
      const [later, earlier] =
        segment.range.day * 10_000 + segment.range.index >= reach.range.day * 10_000 + reach.range.index
          ? [segment.range, reach.range]
          : [reach.range, segment.range];
      clashing.add(later);
      problems.push({
        path: [WEEKDAY_KEYS[later.day]!, later.index],
        message: `"${later.text}" overlaps "${earlier.text}" (${WEEKDAY_KEYS[earlier.day]}[${earlier.index}]): merge them into one range`,
      });
    }
    if (!reach || segment.to > reach.to) reach = segment;
  }
  const minutes = new Uint32Array(MINUTES_PER_WEEK / 32);
  for (const { from, to } of segments) for (let m = from; m < to; m++) minutes[m >>> 5]! |= 1 << (m & 31);
  if (problems.length > 0) return { problems };
  const kept: Record<string, unknown> = { holidays };
  for (const key of WEEKDAY_KEYS) if (Array.isArray(record[key])) kept[key] = (record[key] as string[]).map((t) => t.trim());
  return { schedule: { minutes, holidays: holidays as HolidayRule, spec: kept as WeeklyScheduleSpec, ranges } };
}

/** A schedule open at no minute (what a stored schedule that no longer compiles stands for: never "always"). */
export const NEVER_OPEN: WeeklySchedule = { minutes: new Uint32Array(MINUTES_PER_WEEK / 32), holidays: 'closed', spec: {}, ranges: [] };

/** Whether minute `minuteOfWeek` (0 = Sunday 00:00, local) is inside the schedule. */
export function scheduleOpenAt(schedule: WeeklySchedule, minuteOfWeek: number): boolean {
  return (schedule.minutes[minuteOfWeek >>> 5]! & (1 << (minuteOfWeek & 31))) !== 0;
}

/** The schedule written back as text, e.g. "mon 07:30-18:00; tue 07:30-18:00 (holidays closed)". */
export function describeSchedule(schedule: WeeklySchedule): string {
  const days = WEEKDAY_KEYS.filter((k) => schedule.spec[k]).map((k) => `${k} ${schedule.spec[k]!.join(', ')}`);
  return `${days.join('; ')} (holidays ${schedule.holidays})`;
}

/**
 * The local wall-clock times the time zone skips (spring forward) within two years of `from`: a range boundary
 * inside one never happens on that day. Each as its weekday and [start, end) minutes of the day, with its date.
 */
export function skippedLocalMinutes(timeZone: string, from: number): Array<{ day: number; start: number; end: number; date: string }> {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: 'numeric',
    minute: 'numeric',
    weekday: 'short',
  });
  const wall = (ms: number) => {
    const p: Record<string, string> = {};
    for (const part of format.formatToParts(ms)) p[part.type] = part.value;
    const [y, mo, d, h, mi] = [Number(p.year), Number(p.month), Number(p.day), Number(p.hour), Number(p.minute)];
    return {
      offset: Math.round((Date.UTC(y, mo - 1, d, h, mi) - Math.floor(ms / 60_000) * 60_000) / 60_000),
      day: WEEKDAY_KEYS.indexOf(p.weekday!.toLowerCase().slice(0, 3) as WeekdayKey),
      minute: h * 60 + mi,
      date: `${p.year}-${p.month}-${p.day}`,
    };
  };
  const out: Array<{ day: number; start: number; end: number; date: string }> = [];
  const DAY = 86_400_000;
  const QUARTER = 15 * 60_000;
  // From a quarter hour: every offset change happens on one, so the first instant found with the new offset is the change.
  from = Math.floor(from / QUARTER) * QUARTER;
  let before = wall(from);
  // Day by day, then in quarter hours within a day whose offset grew (every offset is a multiple of 15 minutes).
  for (let t = from + DAY; t <= from + 2 * 366 * DAY; t += DAY) {
    const now = wall(t);
    if (now.offset > before.offset) {
      for (let s = t - DAY + QUARTER; s <= t; s += QUARTER) {
        const at = wall(s);
        if (at.offset === before.offset) continue;
        const skipped = at.offset - before.offset;
        out.push({ day: at.day, start: Math.max(0, at.minute - skipped), end: at.minute, date: at.date });
        break;
      }
    }
    before = now;
  }
  return out;
}
