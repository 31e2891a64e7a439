import { isCalendarDate, zonedInstant } from '../../core/schedule.js';
import { zonedClock } from '../../util/zonedClock.js';

const QUARTER_HOUR_MS = 900_000;
const DAY_MS = 86_400_000;

/**
 * The site's calendar as the reports read and write it (server.timezone): where a local day starts (a day of 23 or
 * 25 hours across a DST change, or one whose midnight the zone skips), and an instant as ISO 8601 with the zone's
 * offset. An offset only changes on a quarter hour, so it is asked of Intl once per quarter hour met, not per row.
 */
export class ReportZone {
  private readonly clock: (ms: number) => { date: string; time: string };
  private readonly offsets = new Map<number, number>();

  constructor(readonly zone: string) {
    this.clock = zonedClock(zone);
  }

  /** The first instant of a local day (YYYY-MM-DD); null for a date that does not exist. */
  dayStart(date: string): number | null {
    if (!isCalendarDate(date)) return null;
    // A zone may skip its midnight (the clocks going forward at 00:00): the day starts at the first minute it has.
    for (let minute = 0; minute <= 180; minute += 15) {
      const at = zonedInstant(this.zone, date, minute);
      if (at !== null) return at;
    }
    return null;
  }

  /** The local date (YYYY-MM-DD) of an instant. */
  dateOf(ms: number): string {
    return this.clock(ms).date;
  }

  /** The local date after `date`. */
  static nextDate(date: string): string {
    const [y, m, d] = date.split('-').map(Number) as [number, number, number];
    return new Date(Date.UTC(y, m - 1, d) + DAY_MS).toISOString().slice(0, 10);
  }

  /** The zone's offset from UTC at an instant, in ms (CET: 3,600,000). */
  offsetAt(ms: number): number {
    const quarter = Math.floor(ms / QUARTER_HOUR_MS);
    let offset = this.offsets.get(quarter);
    if (offset === undefined) {
      const at = quarter * QUARTER_HOUR_MS;
      const { date, time } = this.clock(at);
      offset = Date.parse(`${date}T${time}Z`) - at;
      if (this.offsets.size > 10_000) this.offsets.clear();
      this.offsets.set(quarter, offset);
    }
    return offset;
  }

  /** An instant as the site's wall clock with its offset: 2026-11-29T14:05:09+01:00 (to the second). */
  iso(ms: number): string {
    const offset = this.offsetAt(ms);
    const wall = new Date(Math.floor(ms / 1000) * 1000 + offset).toISOString().slice(0, 19);
    const minutes = Math.abs(offset) / 60_000;
    const sign = offset < 0 ? '-' : '+';
    return `${wall}${sign}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`;
  }
}

const pad = (n: number) => String(n).padStart(2, '0');
