import type { UserDetail, UserListItem } from '../api/shapes.js';
import type { Db } from '../store/database.js';
import { readMeta, writeMeta } from '../store/meta.js';
import { mergeStage, type MergeSummary } from '../store/snapshotMerge.js';
import { SnapshotStage } from '../store/snapshotStage.js';
import { toStagedDetail, toStagedUser } from '../snapshot/toStaged.js';
import { ServiceError, type DirectoryAnswer, type ServiceClient } from './serviceClient.js';

export interface SyncOptions {
  concurrency: number;
  /** null: apply any removal (--allow-mass-removal). */
  maxRemovalRatio: number | null;
  now: () => number;
  onProgress?: (done: number, total: number) => void;
  /** Ask the service for everything, not the changes since the revision held (a revision that went backwards). */
  full?: boolean;
}

export interface SyncResult extends MergeSummary {
  durationMs: number;
  users: MergeSummary['users'];
  /** The service's directory revision now held (null: the service offers no GET /directory). */
  revision: number | null;
  /** How: GET /directory (everything, or the changes, or 304 unchanged), or the seed's GET /multipleusers + GET /user. */
  mode: 'directory_full' | 'directory_delta' | 'unchanged' | 'lists';
  /** The agent's own work on the answer (staging and the apply), without the time waiting for the service. */
  applyMs?: number;
}

export interface SyncStatus {
  lastSuccessAt: string | null;
  lastAttemptAt: string | null;
  lastError: string | null;
  lastSummary: Omit<SyncResult, 'durationMs'> | null;
}

const STATUS_KEY = 'sync_status';
const REVISION_KEY = 'directory_revision';

/** The service's directory revision this cache holds (null: never synced through GET /directory). */
export function readHeldRevision(db: Db): number | null {
  return readMeta<number>(db, REVISION_KEY) ?? null;
}

const NO_CHANGE = { added: 0, changed: 0, removed: 0, unchanged: 0 };

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
    // The extension endpoint first: one request, and only what changed; the seed's calls when it is absent (404).
    const held = options.full ? null : readHeldRevision(db);
    const answer = await client.directory(held ?? undefined);
    if (answer === 'unchanged') {
      const lastSummary = { users: NO_CHANGE, credentials: NO_CHANGE, guestLinks: NO_CHANGE, rowsWritten: 0, revision: held, mode: 'unchanged' as const };
      writeMeta(db, STATUS_KEY, { lastSuccessAt: attemptAt, lastAttemptAt: attemptAt, lastError: null, lastSummary } satisfies SyncStatus);
      return { ...lastSummary, durationMs: performance.now() - started };
    }
    if (answer !== 'unsupported') {
      const applying = performance.now();
      const result = applyDirectory(db, answer, options, attemptAt);
      return { ...result, durationMs: performance.now() - started, applyMs: performance.now() - applying };
    }
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
    let result: Omit<SyncResult, 'durationMs'>;
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
          const lastSummary = { ...summary, revision: null, mode: 'lists' as const };
          writeMeta(db, STATUS_KEY, { lastSuccessAt: attemptAt, lastAttemptAt: attemptAt, lastError: null, lastSummary } satisfies SyncStatus);
          return lastSummary;
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

/**
 * Applies a GET /directory answer. A delta is applied to the users held: the unchanged ones are carried over from
 * the cache into the stage, the changed ones replace theirs, the removed ones are left out; then the same merge as
 * a full sync (one transaction, unchanged rows not rewritten, the mass-removal guard judged on the result).
 */
function applyDirectory(db: Db, answer: DirectoryAnswer, options: SyncOptions, attemptAt: string): Omit<SyncResult, 'durationMs'> {
  const stage = new SnapshotStage(db);
  try {
    db.transaction(() => {
      if (!answer.full) {
        // A delta replaces or removes exactly these users; everyone else is left as it is.
        db.exec('CREATE TEMP TABLE IF NOT EXISTS stage_scope (email_id INTEGER PRIMARY KEY) STRICT; DELETE FROM temp.stage_scope;');
        const scope = db.prepare('INSERT OR IGNORE INTO temp.stage_scope VALUES (?)');
        for (const id of [...answer.users.map((u) => u.email_id), ...answer.removed]) scope.run(id);
      }
      answer.users.forEach((user, i) => {
        if (user.user_tag === undefined) throw new ServiceError(`GET /directory: $.users[${i}].user_tag: required`, '/directory', 200);
        if (!stage.addUser(toStagedUser(user, user.user_tag))) {
          throw new ServiceError(`GET /directory: email_id ${user.email_id} is listed twice`, '/directory', 200);
        }
        stage.addDetail(toStagedDetail(user.email_id, answer.details[String(user.email_id)]!));
      });
    })();
    return db
      .transaction(() => {
        const summary = mergeStage(db, { maxRemovalRatio: options.maxRemovalRatio, includeLinks: false, scoped: !answer.full });
        const lastSummary = { ...summary, revision: answer.revision, mode: answer.full ? ('directory_full' as const) : ('directory_delta' as const) };
        writeMeta(db, REVISION_KEY, answer.revision);
        writeMeta(db, STATUS_KEY, { lastSuccessAt: attemptAt, lastAttemptAt: attemptAt, lastError: null, lastSummary } satisfies SyncStatus);
        return lastSummary;
      })
      .immediate();
  } finally {
    stage.drop();
    db.exec('DROP TABLE IF EXISTS temp.stage_scope');
  }
}
