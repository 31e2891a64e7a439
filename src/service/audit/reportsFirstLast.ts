import { BadRequest } from '../badRequest.js';
import { filterSql, type Report, type ReportFilter, type ReportPage, type ReportSource } from './reports.js';
import type { ReportRange } from './reportRange.js';
import { ReportZone } from './reportZone.js';

/** One person's day, as firstLastReportSchema's rows (src/api/reports.ts). */
export interface FirstLastRow {
  date: string;
  person_id: number;
  person: string | null;
  first_in: string;
  first_door: string | null;
  last_out: string;
  last_door: string | null;
  grants: number;
}

interface DayRecord {
  person_id: number;
  n: number;
  first_at: number;
  first_door: string | null;
  last_at: number;
  last_door: string | null;
  person: string | null;
}

/** The cursor: the local day and the last person (email_id) of it given. */
const CURSOR = /^(\d{4}-\d{2}-\d{2})\.(\d{1,15})$/;

/**
 * `first-last`: per person per local day, the first grant (first in) and the last (last out), with their doors
 * and the day's count. A local day is not a UTC day (and is 23 or 25 hours long across a DST change), so the days
 * are walked here and each day's range of instants asked of the database, which groups it by person: one indexed
 * query per day (bench/README.md, "reports"). A grant that names no user (a guest link) is in `passages` only.
 */
export const firstLastReport: Report<FirstLastRow> = {
  name: 'first-last',
  csvHeader: () => ['date', 'person_id', 'person', 'first_in', 'first_door', 'last_out', 'last_door', 'grants'],
  csvValues: (r) => [r.date, r.person_id, r.person, r.first_in, r.first_door, r.last_out, r.last_door, r.grants],
  async page(source: ReportSource, range: ReportRange, filter: ReportFilter, after: string | null, limit: number): Promise<ReportPage<FirstLastRow>> {
    let date = range.firstDate;
    let afterPerson = -1;
    if (after !== null) {
      const m = CURSOR.exec(after);
      if (!m || source.zone.dayStart(m[1]!) === null) throw new BadRequest('after: not a cursor of this report (give next_after as it came)');
      if (m[1]! > date) date = m[1]!;
      if (m[1] === date) afterPerson = Number(m[2]);
    }
    const rows: FirstLastRow[] = [];
    for (; date <= range.lastDate; date = ReportZone.nextDate(date), afterPerson = -1) {
      const dayStart = source.zone.dayStart(date)!;
      const start = Math.max(dayStart, range.start);
      const end = Math.min(source.zone.dayStart(ReportZone.nextDate(date)) ?? dayStart + 86_400_000, range.end);
      const wanted = limit - rows.length;
      const records = await dayOf(source, start, end, filter, afterPerson, wanted);
      for (const r of records) rows.push(firstLastRow(source, date, r));
      if (records.length === wanted) return { rows, nextAfter: `${date}.${records.at(-1)!.person_id}` };
    }
    return { rows, nextAfter: null };
  },
};

/** One local day's [start, end): each person's count, and the first and last grant (the earliest event id of a tie). */
async function dayOf(source: ReportSource, start: number, end: number, filter: ReportFilter, afterPerson: number, limit: number): Promise<DayRecord[]> {
  const inner = filterSql(filter, 'e');
  const outer = filterSql(filter);
  return source.db.all<DayRecord>(
    `SELECT g.person_id, g.n, f.at AS first_at, f.door_uuid AS first_door, l.at AS last_at, l.door_uuid AS last_door, l.person
     FROM (SELECT s.person_id, s.n,
             (SELECT e.event_id FROM audit_events e WHERE e.person_id = s.person_id AND e.at = s.first_at
                AND e.type = 'access_granted'${inner.sql} ORDER BY e.event_id LIMIT 1) AS first_id,
             (SELECT e.event_id FROM audit_events e WHERE e.person_id = s.person_id AND e.at = s.last_at
                AND e.type = 'access_granted'${inner.sql} ORDER BY e.event_id DESC LIMIT 1) AS last_id
           FROM (SELECT person_id, MIN(at) AS first_at, MAX(at) AS last_at, COUNT(*) AS n FROM audit_events
                 WHERE type = 'access_granted' AND at >= ? AND at < ? AND person_id > ?${outer.sql}
                 GROUP BY person_id ORDER BY person_id LIMIT ?) s) g
     JOIN audit_events f ON f.event_id = g.first_id
     JOIN audit_events l ON l.event_id = g.last_id
     ORDER BY g.person_id`,
    [...inner.params, ...inner.params, start, end, afterPerson, ...outer.params, limit],
  );
}

function firstLastRow(source: ReportSource, date: string, r: DayRecord): FirstLastRow {
  return {
    date,
    person_id: r.person_id,
    person: r.person,
    first_in: source.zone.iso(r.first_at),
    first_door: source.doorName(r.first_door),
    last_out: source.zone.iso(r.last_at),
    last_door: source.doorName(r.last_door),
    grants: r.n,
  };
}
