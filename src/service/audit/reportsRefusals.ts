import { filterSql, type Report, type ReportFilter, type ReportPage, type ReportSource } from './reports.js';
import type { ReportRange } from './reportRange.js';

/** One count, as refusalsReportSchema's rows (src/api/reports.ts): by reason, or by door. */
export interface RefusalRow {
  reason?: string | null;
  door?: string | null;
  door_uuid?: string | null;
  count: number;
}

/**
 * `refusals`: the `access_denied` events of the range counted by reason (`by=reason`, the default) or by door
 * (`by=door`), most first. One grouped query over (type, at): a page is the whole report.
 */
export const refusalsReport: Report<RefusalRow> = {
  name: 'refusals',
  csvHeader: (filter) => (filter.by === 'door' ? ['door', 'door_uuid', 'count'] : ['reason', 'count']),
  csvValues: (r, filter) => (filter.by === 'door' ? [r.door ?? null, r.door_uuid ?? null, r.count] : [r.reason ?? null, r.count]),
  async page(source: ReportSource, range: ReportRange, filter: ReportFilter): Promise<ReportPage<RefusalRow>> {
    const column = filter.by === 'door' ? 'door_uuid' : 'reason';
    const where = filterSql(filter);
    const counts = await source.db.all<{ k: string | null; n: number }>(
      `SELECT ${column} AS k, COUNT(*) AS n FROM audit_events WHERE type = 'access_denied' AND at >= ? AND at < ?${where.sql} GROUP BY ${column}`,
      [range.start, range.end, ...where.params],
    );
    // Most first; a tie by key, the refusals of no reason or no door last (the engines sort NULL differently).
    counts.sort((a, b) => b.n - a.n || (a.k === null ? 1 : b.k === null ? -1 : a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
    const rows = counts.map((c) => (filter.by === 'door' ? { door: source.doorName(c.k), door_uuid: c.k, count: c.n } : { reason: c.k, count: c.n }));
    return { rows, nextAfter: null };
  },
};
