import { BadRequest } from '../badRequest.js';
import { filterSql, textOf, type Report, type ReportFilter, type ReportPage, type ReportSource } from './reports.js';
import type { ReportRange } from './reportRange.js';

/** One passage: a grant, as passagesReportSchema's rows (src/api/reports.ts). */
export interface PassageRow {
  at: string;
  person_id: number | null;
  person: string | null;
  door: string | null;
  door_uuid: string | null;
  kind: string | null;
  level: string | null;
  area: string | null;
  agent: string;
}

interface PassageRecord {
  event_id: number;
  agent_id: string;
  at: number;
  door_uuid: string | null;
  person_id: number | null;
  person: string | null;
  area: string | null;
  body: string;
}

/** The cursor: the last row's time (ms) and event id; rows are in that order. */
const CURSOR = /^(\d{1,15})\.(\d{1,15})$/;

/**
 * `passages`: who went through which door and when, from the `access_granted` events, oldest first. Each filter
 * has its index (person_id, at), (door_uuid, at), (area, at); without one, (type, at).
 */
export const passagesReport: Report<PassageRow> = {
  name: 'passages',
  csvHeader: () => ['at', 'person_id', 'person', 'door', 'door_uuid', 'kind', 'level', 'area', 'agent'],
  csvValues: (r) => [r.at, r.person_id, r.person, r.door, r.door_uuid, r.kind, r.level, r.area, r.agent],
  async page(source: ReportSource, range: ReportRange, filter: ReportFilter, after: string | null, limit: number): Promise<ReportPage<PassageRow>> {
    let from = range.start;
    let afterId = -1;
    if (after !== null) {
      const m = CURSOR.exec(after);
      if (!m) throw new BadRequest('after: not a cursor of this report (give next_after as it came)');
      // Rows are in (at, event_id) order: the next page starts at the cursor's time, past its event.
      if (Number(m[1]) >= from) {
        from = Number(m[1]);
        afterId = Number(m[2]);
      }
    }
    const where = filterSql(filter);
    const records = await source.db.all<PassageRecord>(
      `SELECT event_id, agent_id, at, door_uuid, person_id, person, area, body FROM audit_events
       WHERE type = 'access_granted' AND at >= ? AND at < ?${where.sql} AND (at > ? OR event_id > ?)
       ORDER BY at, event_id LIMIT ?`,
      [from, range.end, ...where.params, from, afterId, limit],
    );
    const rows = records.map((r) => passageRow(source, r));
    const last = records.at(-1);
    return { rows, nextAfter: records.length === limit && last ? `${last.at}.${last.event_id}` : null };
  },
};

function passageRow(source: ReportSource, r: PassageRecord): PassageRow {
  const body = parseBody(r.body);
  return {
    at: source.zone.iso(r.at),
    person_id: r.person_id,
    person: r.person,
    door: source.doorName(r.door_uuid),
    door_uuid: r.door_uuid,
    kind: textOf(body, 'kind'),
    level: textOf(body, 'level'),
    area: r.area,
    agent: r.agent_id,
  };
}

/** The wire event as stored; an unreadable one (never written so by the ingest) reads as no fields. */
function parseBody(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
