/** time_mapping: 7 elements, Sunday first; each a list of [startHour, endHour) ranges. */
export type HourRange = readonly [number, number];
export type TimeMapping = ReadonlyArray<ReadonlyArray<HourRange>>;

export const ALL_WEEK: TimeMapping = Array.from({ length: 7 }, () => [[0, 24] as const]);

export interface LocalTime {
  /** 0 = Sunday, as time_mapping counts. */
  weekday: number;
  hour: number;
  /** Minutes since local midnight (0-1439). */
  minuteOfDay: number;
  /** The local calendar date, YYYY-MM-DD (holidays are dates). */
  date: string;
}

const SERVICE_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

/** Parses the service's UTC `YYYY-MM-DD hh:mm:ss` into epoch ms; null when malformed or not a real date. */
export function parseServiceTime(text: string): number | null {
  const m = SERVICE_TIME.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  const d = new Date(ms);
  const roundTrips =
    d.getUTCFullYear() === year &&
    d.getUTCMonth() === month - 1 &&
    d.getUTCDate() === day &&
    d.getUTCHours() === hour &&
    d.getUTCMinutes() === minute &&
    d.getUTCSeconds() === second;
  return roundTrips ? ms : null;
}

/** Whether `text` is a calendar date YYYY-MM-DD that exists (2026-02-30 and 2026-13-01 do not). */
export function isCalendarDate(text: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const d = new Date(Date.UTC(year, month - 1, day));
  return d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day;
}

const WEEKDAYS: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };
// Every zone offset in use is a whole number of minutes, so local weekday and minute are constant within one.
const BUCKET_MS = 60 * 1000;

/**
 * Returns a function giving the weekday and hour of an instant in an IANA time zone. Daylight-saving changes
 * follow the zone's rules: the skipped hour never occurs, the repeated hour occurs twice.
 */
export function localTimeIn(timeZone: string): (epochMs: number) => LocalTime {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    weekday: 'short',
    hour: 'numeric',
    minute: 'numeric',
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  });
  let cachedBucket = Number.NaN;
  let cached: LocalTime = { weekday: 0, hour: 0, minuteOfDay: 0, date: '1970-01-01' };
  return (epochMs) => {
    const bucket = Math.floor(epochMs / BUCKET_MS);
    if (bucket !== cachedBucket) {
      let weekday = 0;
      let hour = 0;
      let minute = 0;
      let year = '1970';
      let month = '01';
      let day = '01';
      for (const part of format.formatToParts(epochMs)) {
        if (part.type === 'weekday') weekday = WEEKDAYS[part.value] ?? 0;
        else if (part.type === 'hour') hour = Number(part.value);
        else if (part.type === 'minute') minute = Number(part.value);
        else if (part.type === 'year') year = part.value.padStart(4, '0');
        else if (part.type === 'month') month = part.value;
        else if (part.type === 'day') day = part.value;
      }
      cached = { weekday, hour, minuteOfDay: hour * 60 + minute, date: `${year}-${month}-${day}` };
      cachedBucket = bucket;
    }
    return cached;
  };
}

/** Whether time_mapping allows this local time: start <= hour < end for some range of that weekday. */
export function scheduleAllows(mapping: TimeMapping, at: Pick<LocalTime, 'weekday' | 'hour'>): boolean {
  const ranges = mapping[at.weekday];
  if (!ranges) return false;
  return ranges.some(([start, end]) => start <= at.hour && at.hour < end);
}

/**
 * The instant a local wall-clock time has in a time zone, or null when the zone skips it (a spring-forward gap).
 * A time the zone has twice (fall back) gives the first.
 */
export function zonedInstant(timeZone: string, date: string, minuteOfDay: number): number | null {
  if (!isCalendarDate(date)) return null;
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const wallAsUtc = Date.UTC(y, m - 1, d, Math.floor(minuteOfDay / 60), minuteOfDay % 60);
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
  });
  const offsetAt = (ms: number) => {
    const p: Record<string, number> = {};
    for (const part of format.formatToParts(ms)) p[part.type] = Number(part.value);
    return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!) - Math.floor(ms / 60_000) * 60_000;
  };
  // The offsets around the wall time: the earlier instant that shows it wins.
  const candidates = new Set([wallAsUtc - offsetAt(wallAsUtc - 86_400_000), wallAsUtc - offsetAt(wallAsUtc + 86_400_000), wallAsUtc - offsetAt(wallAsUtc)]);
  const matching = [...candidates].filter((t) => t + offsetAt(t) === wallAsUtc).sort((a, b) => a - b);
  return matching[0] ?? null;
}
