import type { SqlDb, SqlValue } from '../sql/sqlDb.js';
import type { CsvValue } from './csv.js';
import type { ReportRange } from './reportRange.js';
import type { ReportZone } from './reportZone.js';

/**
 * What the three reports (docs/audit.md, "Reports") share: where they read (the service's audit_events, as the
 * ingest stores them: the columns it fills for this, the wire event in `body`), how a door is named, the filters,
 * and the contract each report keeps so that one route answers it as a JSON page or a CSV stream.
 */

/** What a report reads from. */
export interface ReportSource {
  db: SqlDb;
  zone: ReportZone;
  /** A door's name as server.resources gives it; its uuid when it is not listed; null for no door. */
  doorName(uuid: string | null): string | null;
}

/** A report's filters: a person (email_id), a door (uuid, lower case), an area; refusals are counted `by`. */
export interface ReportFilter {
  person?: number;
  door?: string;
  area?: string;
  by?: 'reason' | 'door';
}

export interface ReportPage<Row> {
  rows: Row[];
  /** The cursor of the next page (the `after` parameter); null: this was the last. */
  nextAfter: string | null;
}

export interface Report<Row> {
  readonly name: 'passages' | 'first-last' | 'refusals';
  /** The CSV's header row, and one row's fields in its order. */
  csvHeader(filter: ReportFilter): readonly string[];
  csvValues(row: Row, filter: ReportFilter): CsvValue[];
  /** Up to `limit` rows after the cursor `after` (null: from the start). */
  page(source: ReportSource, range: ReportRange, filter: ReportFilter, after: string | null, limit: number): Promise<ReportPage<Row>>;
}

/** The filters as SQL conditions (`AND ...`) on the table's alias, and their parameters in order. */
export function filterSql(filter: ReportFilter, alias = ''): { sql: string; params: SqlValue[] } {
  const column = (name: string) => (alias ? `${alias}.${name}` : name);
  let sql = '';
  const params: SqlValue[] = [];
  if (filter.person !== undefined) {
    sql += ` AND ${column('person_id')} = ?`;
    params.push(filter.person);
  }
  if (filter.door !== undefined) {
    sql += ` AND ${column('door_uuid')} = ?`;
    params.push(filter.door);
  }
  if (filter.area !== undefined) {
    sql += ` AND ${column('area')} = ?`;
    params.push(filter.area);
  }
  return { sql, params };
}

/** The names of the doors in server.resources, by uuid (lower case). */
export function doorNamer(resources: ReadonlyArray<{ uuid: string; name: string }>): (uuid: string | null) => string | null {
  const names = new Map(resources.map((r) => [r.uuid.toLowerCase(), r.name]));
  return (uuid) => (uuid === null ? null : (names.get(uuid.toLowerCase()) ?? uuid));
}

/** A field of the wire event (`body`) that is text, else null. */
export function textOf(body: Record<string, unknown>, key: string): string | null {
  const value = body[key];
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : null;
}
