import { syncCountsSchema, type SyncCounts, type SyncRunAnswer } from '../../api/identity.js';
import type { SqlDb } from '../sql/sqlDb.js';
import { serviceTimestamp } from '../users.js';

/** A row of identity_sync_runs (schema 14): times in ms, `counts` and `sample` as JSON text. */
export interface SyncRunRow {
  run_id: number;
  source: string;
  trigger: string;
  started_at: number;
  finished_at: number | null;
  outcome: SyncRunAnswer['outcome'];
  reason: string | null;
  counts: string;
  would_suspend: number | null;
  sample: string | null;
}

const COUNT_NAMES = syncCountsSchema.keyof().options;

/** The stored counts with every count present: a running sync's '{}' (or a count added later) reads as 0. */
function countsOf(text: string): SyncCounts {
  let stored: Record<string, unknown> = {};
  try {
    stored = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // A damaged text shows as no counts rather than failing the page that lists it.
  }
  return Object.fromEntries(COUNT_NAMES.map((name) => [name, Number.isInteger(stored[name]) ? stored[name] : 0])) as SyncCounts;
}

function sampleOf(text: string | null): string[] | null {
  if (text === null) return null;
  try {
    const sample: unknown = JSON.parse(text);
    return Array.isArray(sample) ? sample.map(String) : null;
  } catch {
    return null;
  }
}

/** One sync as GET /identity-sources and POST /identity-sources/ldap/sync answer it, times as the service's others. */
export function syncRunAnswer(row: SyncRunRow): SyncRunAnswer {
  return {
    run_id: row.run_id,
    trigger: row.trigger,
    started_at: serviceTimestamp(row.started_at),
    finished_at: row.finished_at === null ? null : serviceTimestamp(row.finished_at),
    outcome: row.outcome,
    reason: row.reason,
    counts: countsOf(row.counts),
    would_suspend: row.would_suspend,
    sample: sampleOf(row.sample),
  };
}

/** The last `limit` syncs of `source`, the newest first. */
export async function recentSyncRuns(db: SqlDb, source: string, limit: number): Promise<SyncRunAnswer[]> {
  const rows = await db.all<SyncRunRow>('SELECT * FROM identity_sync_runs WHERE source = ? ORDER BY run_id DESC LIMIT ?', [source, limit]);
  return rows.map(syncRunAnswer);
}
