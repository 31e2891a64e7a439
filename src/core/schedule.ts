/** time_mapping: 7 elements, Sunday first; each a list of [startHour, endHour) ranges. */
export type HourRange = readonly [number, number];
export type TimeMapping = ReadonlyArray<ReadonlyArray<HourRange>>;

export const ALL_WEEK: TimeMapping = Array.from({ length: 7 }, () => [[0, 24] as const]);

export interface LocalTime {
  /** 0 = Sunday, as time_mapping counts. */
  weekday: number;
  hour: number;
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

const WEEKDAYS: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 };
// Every zone offset in use is a multiple of 15 minutes, so local weekday and hour are constant within one.
const BUCKET_MS = 15 * 60 * 1000;

/**
 * Returns a function giving the weekday and hour of an instant in an IANA time zone. Daylight-saving changes
 * follow the zone's rules: the skipped hour never occurs, the repeated hour occurs twice.
 */
export function localTimeIn(timeZone: string): (epochMs: number) => LocalTime {
  const format = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', hour: 'numeric', hourCycle: 'h23' });
  let cachedBucket = Number.NaN;
  let cached: LocalTime = { weekday: 0, hour: 0 };
  return (epochMs) => {
    const bucket = Math.floor(epochMs / BUCKET_MS);
    if (bucket !== cachedBucket) {
      let weekday = 0;
      let hour = 0;
      for (const part of format.formatToParts(epochMs)) {
        if (part.type === 'weekday') weekday = WEEKDAYS[part.value] ?? 0;
        else if (part.type === 'hour') hour = Number(part.value);
      }
      cached = { weekday, hour };
      cachedBucket = bucket;
    }
    return cached;
  };
}

/** Whether time_mapping allows this local time: start <= hour < end for some range of that weekday. */
export function scheduleAllows(mapping: TimeMapping, at: LocalTime): boolean {
  const ranges = mapping[at.weekday];
  if (!ranges) return false;
  return ranges.some(([start, end]) => start <= at.hour && at.hour < end);
}
