import type { SyncMark } from '../core/cacheAge.js';
import type { Db } from './database.js';
import { readMeta, writeMeta } from './meta.js';

/** The cache's record of its syncs (cache.db, written by every sync: the daemon's worker and door-agent sync). */
export const SYNC_STATUS_KEY = 'sync_status';

/** The offline limit's record in state.db (the daemon's own database): the last sync on its clocks, the age seen. */
const KEY = 'offline_limit';

export interface OfflineLimitRecord extends SyncMark {
  /** The cache's lastSuccessAt this mark belongs to: another one there is a sync the daemon did not see. */
  syncedAt: string | null;
  /** cache_too_old was raised for this sync (not raised again after a restart). */
  raised: boolean;
}

/** When the cache was last synced successfully (ISO), by anyone; null: never (an imported or new cache). */
export function lastSyncSuccessAt(cache: Db): string | null {
  return readMeta<{ lastSuccessAt: string | null }>(cache, SYNC_STATUS_KEY)?.lastSuccessAt ?? null;
}

export function readOfflineLimit(state: Db): OfflineLimitRecord | undefined {
  return readMeta<OfflineLimitRecord>(state, KEY);
}

export function writeOfflineLimit(state: Db, record: OfflineLimitRecord): void {
  writeMeta(state, KEY, record);
}

/**
 * The last sync as the age is measured from: the daemon's record when it is about the cache's last sync; else
 * (a door-agent sync while the daemon was stopped, an upgrade, a record lost) that sync's wall time alone.
 * null: the cache was never synced (its age is not known).
 */
export function syncMarkOf(record: OfflineLimitRecord | undefined, lastSuccessAt: string | null): SyncMark | null {
  if (lastSuccessAt === null) return null;
  if (record && record.syncedAt === lastSuccessAt) return record;
  return { wallMs: Date.parse(lastSuccessAt), monoMs: null, bootId: null, checkpointAgeMs: 0 };
}
