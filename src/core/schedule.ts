/** time_mapping: 7 elements, Sunday first; each a list of [startHour, endHour) ranges. */
export type HourRange = readonly [number, number];
export type TimeMapping = ReadonlyArray<ReadonlyArray<HourRange>>;

export const ALL_WEEK: TimeMapping = Array.from({ length: 7 }, () => [[0, 24] as const]);

export interface LocalTime {
  /** 0 = Sunday, as time_mapping counts. */
  weekday: number;
  hour: number;
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
// Every zone offset in use is a multiple of 15 minutes, so local weekday and hour are constant within one.
const BUCKET_MS = 15 * 60 * 1000;

/**
 * Returns a function giving the weekday and hour of an instant in an IANA time zone. Daylight-saving changes
 * follow the zone's rules: the skipped hour never occurs, the repeated hour occurs twice.
 */
export function localTimeIn(timeZone: string): (epochMs: number) => LocalTime {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    weekday: 'short',
    hour: 'numeric',
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  });
  let cachedBucket = Number.NaN;
  let cached: LocalTime = { weekday: 0, hour: 0, date: '1970-01-01' };
  return (epochMs) => {
    const bucket = Math.floor(epochMs / BUCKET_MS);
    if (bucket !== cachedBucket) {
      let weekday = 0;
      let hour = 0;
      let year = '1970';
      let month = '01';
      let day = '01';
      for (const part of format.formatToParts(epochMs)) {
        if (part.type === 'weekday') weekday = WEEKDAYS[part.value] ?? 0;
        else if (part.type === 'hour') hour = Number(part.value);
        else if (part.type === 'year') year = part.value.padStart(4, '0');
        else if (part.type === 'month') month = part.value;
        else if (part.type === 'day') day = part.value;
      }
      cached = { weekday, hour, date: `${year}-${month}-${day}` };
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
