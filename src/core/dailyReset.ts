import { localTimeIn, zonedInstant } from './schedule.js';

const CLOCK = /^([01]\d|2[0-3]):([0-5]\d)$/;
const DAY_MS = 86_400_000;
const MINUTES_PER_DAY = 1440;

/** Minutes since local midnight of a daily time "HH:MM" (00:00 to 23:59); null when it is not one. */
export function parseDailyTime(text: string): number | null {
  const m = CLOCK.exec(text);
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
}

/** The calendar date `days` after `date` (YYYY-MM-DD). */
function addDays(date: string, days: number): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(y, m - 1, d) + days * DAY_MS).toISOString().slice(0, 10);
}

/**
 * When a daily time falls on a date in a zone. A time the zone skips that day (a spring-forward gap) falls at the
 * first minute after the gap; a time the zone shows twice (fall back) falls at its first occurrence only.
 */
function dailyInstantOn(date: string, minuteOfDay: number, timeZone: string): number {
  // Wall minutes from the time on, across midnight if need be: the first one the zone shows ends the gap. A gap is
  // an hour or less in practice; the bound covers a zone that skipped a whole day (Pacific/Apia, 2011-12-30).
  for (let m = minuteOfDay; m < minuteOfDay + 2 * MINUTES_PER_DAY; m++) {
    const instant = zonedInstant(timeZone, addDays(date, Math.floor(m / MINUTES_PER_DAY)), m % MINUTES_PER_DAY);
    if (instant !== null) return instant;
  }
  throw new RangeError(`${timeZone} shows no time within two days of ${date}`);
}

/**
 * The first instant after `afterEpochMs` at which a daily time "HH:MM" falls in an IANA time zone: the next
 * scheduled reset. On a spring-forward day a time in the gap falls at the first minute after it (02:30 in
 * Europe/Berlin on 2026-03-29 falls at 03:00 CEST); on a fall-back day a time shown twice falls once, at its first
 * occurrence. Throws on a malformed time (the configuration is checked before).
 */
export function nextReset(afterEpochMs: number, hhmm: string, timeZone: string): number {
  const minuteOfDay = parseDailyTime(hhmm);
  if (minuteOfDay === null) throw new RangeError(`"${hhmm}" is not a daily time HH:MM`);
  const today = localTimeIn(timeZone)(afterEpochMs).date;
  // Yesterday's too: its time may have been moved past midnight by a gap.
  for (let day = -1; day <= 2; day++) {
    const instant = dailyInstantOn(addDays(today, day), minuteOfDay, timeZone);
    if (instant > afterEpochMs) return instant;
  }
  throw new RangeError(`no ${hhmm} in ${timeZone} within two days of ${today}`);
}
