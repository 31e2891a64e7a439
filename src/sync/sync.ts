import type { UserDetail, UserListItem } from '../api/shapes.js';
import type { Db } from '../store/database.js';
import { readMeta, writeMeta } from '../store/meta.js';
import { mergeStage, type MergeSummary } from '../store/snapshotMerge.js';
import { SnapshotStage } from '../store/snapshotStage.js';
import { toStagedDetail, toStagedUser } from '../snapshot/toStaged.js';
import { ServiceError, type ServiceClient } from './serviceClient.js';

export interface SyncOptions {
  concurrency: number;
  /** null: apply any removal (--allow-mass-removal). */
  maxRemovalRatio: number | null;
  now: () => number;
  onProgress?: (done: number, total: number) => void;
}

export interface SyncResult extends MergeSummary {
  durationMs: number;
  users: MergeSummary['users'];
}

export interface SyncStatus {
  lastSuccessAt: string | null;
  lastAttemptAt: string | null;
  lastError: string | null;
  lastSummary: Omit<SyncResult, 'durationMs'> | null;
}

const STATUS_KEY = 'sync_status';

export function readSyncStatus(db: Db): SyncStatus {
  return readMeta<SyncStatus>(db, STATUS_KEY) ?? { lastSuccessAt: null, lastAttemptAt: null, lastError: null, lastSummary: null };
}

/** Runs `work` over `items` with at most `limit` at a time; the first failure stops new work and is thrown. */
async function pool<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let failed: unknown = null;
  const worker = async () => {
    while (failed === null && next < items.length) {
      const i = next++;
      try {
        results[i] = await work(items[i]!);
      } catch (err) {
        failed ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failed !== null) throw failed;
  return results;
}

/**
 * One sync (design section 6): GET /multipleusers, then GET /user per user with bounded concurrency, every body
 * validated; the whole result applied in one transaction, unchanged rows not rewritten, guest links untouched
 * (they come over MQTT). Any failure, or the mass-removal guard, leaves the cache as it was.
 */
export async function syncOnce(db: Db, client: ServiceClient, options: SyncOptions): Promise<SyncResult> {
  const started = performance.now();
  const attemptAt = new Date(options.now()).toISOString();
  const status = readSyncStatus(db);
  try {
    const list = await client.listUsers();
    // Items without user_tag: the GUEST list says who is a guest (design section 4).
    const guests = list.some((u) => u.user_tag === undefined) ? new Set((await client.listUsers('GUEST')).map((u) => u.email_id)) : new Set<number>();
    let done = 0;
    options.onProgress?.(0, list.length);
    const details = await pool(list, options.concurrency, async (user: UserListItem): Promise<UserDetail> => {
      const detail = await client.userDetail(user.email_id);
      options.onProgress?.(++done, list.length);
      return detail;
    });
    // Staged in the connection's own temp tables first; the cache's write lock is held only for the merge.
    const stage = new SnapshotStage(db);
    let result: MergeSummary;
    try {
      db.transaction(() => {
        list.forEach((user, i) => {
          if (!stage.addUser(toStagedUser(user, user.user_tag ?? (guests.has(user.email_id) ? 'GUEST' : 'USER')))) {
            throw new ServiceError(`GET /multipleusers: email_id ${user.email_id} is listed twice`, '/multipleusers', 200);
          }
          stage.addDetail(toStagedDetail(user.email_id, details[i]!));
        });
      })();
      result = db
        .transaction(() => {
          const summary = mergeStage(db, { maxRemovalRatio: options.maxRemovalRatio, includeLinks: false });
          const { durationMs: _d, ...lastSummary } = { ...summary, durationMs: 0 };
          writeMeta(db, STATUS_KEY, { lastSuccessAt: attemptAt, lastAttemptAt: attemptAt, lastError: null, lastSummary } satisfies SyncStatus);
          return summary;
        })
        .immediate();
    } finally {
      stage.drop();
    }
    return { ...result, durationMs: performance.now() - started };
  } catch (err) {
    try {
      writeMeta(db, STATUS_KEY, { ...status, lastAttemptAt: attemptAt, lastError: err instanceof Error ? err.message : String(err) } satisfies SyncStatus);
    } catch {
      // the error itself is what matters to the caller
    }
    throw err;
  }
}
