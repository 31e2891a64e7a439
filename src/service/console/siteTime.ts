import { isCalendarDate, parseServiceTime, zonedInstant } from '../../core/schedule.js';
import { zonedClock } from '../../util/zonedClock.js';
import { html, type Html } from './html.js';

const SHORT_NAME = /^[A-Z]{2,5}$/;
const LOCAL_FIELD = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::\d{2}(?:\.\d{1,3})?)?$/;

/** What a datetime-local field's value is as an instant in the site's zone. */
export type LocalReading = { at: number } | { problem: string };

/**
 * The console's one way to show a time: in the site's zone (server.timezone), 24-hour, with the zone named
 * ("2026-11-29 14:05:09 CET"; a zone without a common abbreviation by its offset, "GMT+5:30"). Events, guest links,
 * cards' dates, doors' relock times and agents' reports all go through it; the IANA name is in each time's title.
 * It also reads what a person types into a datetime-local field as a time of that zone.
 */
export class SiteTime {
  private readonly clock: (ms: number) => { date: string; time: string };
  /** The zone's short name as British, then American, English calls it (CET, BST; EST), else its offset. */
  private readonly names: Intl.DateTimeFormat[];

  constructor(
    readonly zone: string,
    /** The wall clock (epoch ms): what "today" is for `soon`. */
    private readonly now: () => number,
  ) {
    try {
      this.clock = zonedClock(zone);
    } catch (err) {
      throw new Error(`server.timezone: "${zone}" is not an IANA time zone (e.g. Europe/Berlin)`, { cause: err });
    }
    this.names = ['en-GB', 'en-US'].map((locale) => new Intl.DateTimeFormat(locale, { timeZone: zone, timeZoneName: 'short' }));
  }

  /**
   * An instant (epoch ms, an ISO 8601 text with its offset, or the service's UTC "YYYY-MM-DD hh:mm:ss") as
   * "2026-11-29 14:05:09 CET". A text that is no time is shown as it is, never as a blank.
   */
  format(at: number | string): string {
    const ms = typeof at === 'number' ? at : instantOfText(at);
    if (ms === null || !Number.isFinite(ms)) return String(at);
    const { date, time } = this.clock(ms);
    return `${date} ${time} ${this.zoneName(ms)}`;
  }

  /** A time coming soon (a door's relock): "14:06:30 CET" on today's date in the zone, else as `format`. */
  soon(at: number | string): string {
    const full = this.format(at);
    const today = this.format(this.now()).slice(0, 11);
    return full.startsWith(today) && /^\d{4}-/.test(full) ? full.slice(11) : full;
  }

  /**
   * `format`'s text (`soon`'s with `{ soon: true }`) in a <time> element: the instant in its datetime (UTC), the
   * zone's IANA name in its title.
   */
  element(at: number | string, options: { soon?: boolean } = {}): Html {
    const ms = typeof at === 'number' ? at : instantOfText(at);
    if (ms === null || !Number.isFinite(ms)) return html`${String(at)}`;
    return html`<time datetime="${new Date(ms).toISOString()}" title="${this.zone}">${options.soon ? this.soon(ms) : this.format(ms)}</time>`;
  }

  /** The zone's name at that instant: CET or CEST, GMT or BST, UTC; GMT+5:30 where it has no short name. */
  zoneName(ms: number): string {
    let offset = '';
    for (const names of this.names) {
      const name = names.formatToParts(ms).find((part) => part.type === 'timeZoneName')?.value ?? '';
      if (SHORT_NAME.test(name)) return name;
      offset ||= name;
    }
    return offset || this.zone;
  }

  /**
   * A datetime-local field's value ("2026-05-01T09:00") as the instant it names in the site's zone; a time the zone
   * skips (the hour the clocks go forward) is refused, saying so; a time it has twice is the first.
   */
  readLocal(value: string): LocalReading {
    const m = LOCAL_FIELD.exec(value);
    if (!m || Number(m[2]) > 23 || Number(m[3]) > 59) return { problem: `"${value}" is not a date and time (YYYY-MM-DDTHH:MM)` };
    const [date, hour, minute] = [m[1]!, m[2]!, m[3]!];
    if (!isCalendarDate(date)) return { problem: `${date} is not a date that exists` };
    const at = zonedInstant(this.zone, date, Number(hour) * 60 + Number(minute));
    if (at === null)
      return { problem: `${date} ${hour}:${minute} does not exist in ${this.zone} (the clocks go forward then): choose a time before or after it` };
    return { at };
  }
}

/** An ISO 8601 time with its offset (the agents' `at`), or the service's UTC "YYYY-MM-DD hh:mm:ss"; null otherwise. */
function instantOfText(text: string): number | null {
  const service = parseServiceTime(text);
  if (service !== null) return service;
  // Only a text that names its offset: a bare local time would be read in the machine's zone.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/.test(text)) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}
