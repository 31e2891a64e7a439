import { BadRequest } from '../badRequest.js';
import { ReportZone } from './reportZone.js';

const DATE = /^\d{4}-\d{2}-\d{2}$/;
/** An ISO 8601 time: with its offset (Z, +01:00) an instant, without one a wall time of the site. */
const TIME = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})?$/;
const DAY_MS = 86_400_000;
/** A range of whole days is one hour longer than its days across the autumn's DST change. */
const DST_SLACK_MS = 3_600_000;

/** A report's range: [start, end) in ms, and the local dates it covers (for a file name). */
export interface ReportRange {
  start: number;
  end: number;
  firstDate: string;
  lastDate: string;
}

/**
 * A report's `from` and `to` (docs/audit.md, "Reports"), read in the site's zone: a date is a local day (`from`
 * its start, `to` its end: the whole day is in), a time with its offset that instant, a time without one the
 * site's wall time. Refused with a 400 naming the parameter: a text that is no date or time, `from` not before
 * `to`, a range longer than `maxDays`.
 */
export function readReportRange(zone: ReportZone, from: string, to: string, maxDays: number): ReportRange {
  const start = instantOf(zone, 'from', from, false);
  const end = instantOf(zone, 'to', to, true);
  if (start >= end) throw new BadRequest(`from: ${from} is not before to (${to})`);
  const days = (end - start) / DAY_MS;
  if (end - start > maxDays * DAY_MS + DST_SLACK_MS) {
    throw new BadRequest(`to: the range is ${Math.ceil(days - DST_SLACK_MS / DAY_MS)} days; a report covers at most ${maxDays} (server.audit.maxReportDays)`);
  }
  return { start, end, firstDate: zone.dateOf(start), lastDate: zone.dateOf(end - 1) };
}

function instantOf(zone: ReportZone, name: 'from' | 'to', text: string, endOfDay: boolean): number {
  const problem = () => new BadRequest(`${name}: "${text.slice(0, 40)}" is not a date (YYYY-MM-DD) or an ISO 8601 time`);
  if (DATE.test(text)) {
    const at = zone.dayStart(endOfDay ? ReportZone.nextDate(text) : text);
    if (at === null || zone.dayStart(text) === null) throw problem();
    return at;
  }
  const m = TIME.exec(text);
  if (!m) throw problem();
  const [, date = '', hour, minute, second = '00', fraction = '', offset] = m;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59 || zone.dayStart(date) === null) throw problem();
  if (offset !== undefined) {
    const at = Date.parse(text);
    if (Number.isNaN(at)) throw problem();
    return at;
  }
  // A wall time of the site: the instant whose local wall clock reads it (the earlier one in the hour the autumn repeats).
  const wallAsUtc = Date.parse(`${date}T${hour}:${minute}:${second}${fraction || ''}Z`);
  for (const guess of [wallAsUtc - zone.offsetAt(wallAsUtc - DAY_MS), wallAsUtc - zone.offsetAt(wallAsUtc + DAY_MS)].sort((a, b) => a - b)) {
    if (guess + zone.offsetAt(guess) === wallAsUtc) return guess;
  }
  throw new BadRequest(`${name}: ${date} ${hour}:${minute} does not exist in ${zone.zone} (the clocks go forward then)`);
}
