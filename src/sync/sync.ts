import type { Db } from '../store/database.js';
import { readHeldRevision, writeHeldRevision } from '../store/heldRevision.js';
import { readMeta, writeMeta } from '../store/meta.js';
import { mergeStage, type MergeSummary } from '../store/snapshotMerge.js';
import { SnapshotStage } from '../store/snapshotStage.js';
import type { ResponseSpool } from './responseSpool.js';
import type { ServiceClient } from './serviceClient.js';
import { dropDirectoryScope, stageDetails, stageDirectory, stageUserList } from './streamedAnswers.js';

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
export { readHeldRevision } from '../store/heldRevision.js';

const NO_CHANGE = { added: 0, changed: 0, removed: 0, unchanged: 0 };

export function readSyncStatus(db: Db): SyncStatus {
  return readMeta<SyncStatus>(db, STATUS_KEY) ?? { lastSuccessAt: null, lastAttemptAt: null, lastError: null, lastSummary: null };
}

/**
 * One sync (design section 6): GET /directory when the service offers it (the changes since the revision held),
 * else GET /multipleusers, then GET /user per user with bounded concurrency. Every body is validated, the large
 * ones member by member from a spool (streamedAnswers.ts), so memory stays bounded whatever the directory's size; the whole result applied in one transaction, unchanged rows not rewritten, guest links untouched
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
      try {
        const result = applyDirectory(db, answer, options, attemptAt);
        return { ...result, durationMs: performance.now() - started, applyMs: performance.now() - applying };
      } finally {
        answer.dispose();
      }
    }
    // Staged in the connection's own temp tables first; the cache's write lock is held only for the merge.
    const stage = new SnapshotStage(db);
    try {
      const total = await stageUserList(db, stage, () => client.listUsers(), () => client.listUsers('GUEST'));
      await stageDetails(db, stage, (emailId) => client.userDetail(emailId), { concurrency: options.concurrency, total, onProgress: options.onProgress });
      const result = db
        .transaction(() => {
          const summary = mergeStage(db, { maxRemovalRatio: options.maxRemovalRatio, includeLinks: false });
          const lastSummary = { ...summary, revision: null, mode: 'lists' as const };
          writeMeta(db, STATUS_KEY, { lastSuccessAt: attemptAt, lastAttemptAt: attemptAt, lastError: null, lastSummary } satisfies SyncStatus);
          return lastSummary;
        })
        .immediate();
      return { ...result, durationMs: performance.now() - started };
    } finally {
      stage.drop();
    }
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
function applyDirectory(db: Db, body: ResponseSpool, options: SyncOptions, attemptAt: string): Omit<SyncResult, 'durationMs'> {
  const stage = new SnapshotStage(db);
  try {
    const answer = stageDirectory(db, stage, body);
    return db
      .transaction(() => {
        const summary = mergeStage(db, { maxRemovalRatio: options.maxRemovalRatio, includeLinks: false, scoped: !answer.full });
        const lastSummary = { ...summary, revision: answer.revision, mode: answer.full ? ('directory_full' as const) : ('directory_delta' as const) };
        writeHeldRevision(db, answer.revision);
        writeMeta(db, STATUS_KEY, { lastSuccessAt: attemptAt, lastAttemptAt: attemptAt, lastError: null, lastSummary } satisfies SyncStatus);
        return lastSummary;
      })
      .immediate();
  } finally {
    stage.drop();
    dropDirectoryScope(db);
  }
}
