import type { Db } from '../store/database.js';
import type { DirectoryVersion } from '../protocol/directory.js';
import { readHeldVersion, writeHeldRevision } from '../store/heldRevision.js';
import { readMeta, writeMeta } from '../store/meta.js';
import { MassRemovalError, mergeStage, type MergeSummary } from '../store/snapshotMerge.js';
import { SnapshotStage } from '../store/snapshotStage.js';
import { writeServiceLevels } from '../store/serviceLevels.js';
import type { ResponseSpool } from './responseSpool.js';
import { ServiceError, type ServiceClient } from './serviceClient.js';
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
export { readHeldRevision, readHeldVersion } from '../store/heldRevision.js';

const NO_CHANGE = { added: 0, changed: 0, removed: 0, unchanged: 0 };

export function readSyncStatus(db: Db): SyncStatus {
  return readMeta<SyncStatus>(db, STATUS_KEY) ?? { lastSuccessAt: null, lastAttemptAt: null, lastError: null, lastSummary: null };
}

/**
 * One sync (docs/sync.md): GET /directory when the service offers it (the changes since the revision held),
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
    const heldVersion = readHeldVersion(db);
    let held = options.full ? null : heldVersion;
    let answer = await client.directory(held);
    if (answer === 'unchanged') {
      const lastSummary = {
        users: NO_CHANGE,
        credentials: NO_CHANGE,
        guestLinks: NO_CHANGE,
        rowsWritten: 0,
        revision: held?.revision ?? null,
        mode: 'unchanged' as const,
      };
      writeMeta(db, STATUS_KEY, { lastSuccessAt: attemptAt, lastAttemptAt: attemptAt, lastError: null, lastSummary } satisfies SyncStatus);
      return { ...lastSummary, durationMs: performance.now() - started };
    }
    while (answer !== 'unsupported' && answer !== 'unchanged') {
      const applying = performance.now();
      let result: ReturnType<typeof applyDirectory>;
      try {
        result = applyDirectory(db, answer, options, attemptAt, heldVersion);
      } finally {
        answer.dispose();
      }
      if (result !== 'another_history') return { ...result, durationMs: performance.now() - started, applyMs: performance.now() - applying };
      if (held === null) throw new ServiceError('GET /directory: a full answer was asked for and a delta came', '/directory', 200);
      // A delta of another history than the one held: never applied on top of this cache; everything instead.
      held = null;
      answer = await client.directory(null);
    }
    // Staged in the connection's own temp tables first; the cache's write lock is held only for the merge.
    const stage = new SnapshotStage(db);
    try {
      const total = await stageUserList(
        db,
        stage,
        () => client.listUsers(),
        () => client.listUsers('GUEST'),
      );
      await stageDetails(db, stage, (emailId) => client.userDetail(emailId), { concurrency: options.concurrency, total, onProgress: options.onProgress });
      const result = db
        .transaction(() => {
          const summary = mergeStage(db, { maxRemovalRatio: options.maxRemovalRatio, includeLinks: false });
          // The seed's calls carry no level definitions: the config's levels alone apply.
          writeServiceLevels(db, null);
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
function applyDirectory(
  db: Db,
  body: ResponseSpool,
  options: SyncOptions,
  attemptAt: string,
  held: DirectoryVersion | null,
): Omit<SyncResult, 'durationMs'> | 'another_history' {
  const stage = new SnapshotStage(db);
  try {
    const answer = stageDirectory(db, stage, body);
    // The service's history changed (restored from a backup): only a full answer may replace this cache, and the
    // mass-removal guard still judges it (a restore is no reason to trust a mass removal).
    const history = held?.history && answer.history && held.history !== answer.history ? { from: held.history, to: answer.history } : undefined;
    if (history && !answer.full) return 'another_history';
    return db
      .transaction(() => {
        let summary: MergeSummary;
        try {
          summary = mergeStage(db, { maxRemovalRatio: options.maxRemovalRatio, includeLinks: false, scoped: !answer.full });
        } catch (err) {
          if (history && err instanceof MassRemovalError) throw new MassRemovalError(err.removed, err.current, err.maxRatio, history);
          throw err;
        }
        const lastSummary = { ...summary, revision: answer.revision, mode: answer.full ? ('directory_full' as const) : ('directory_delta' as const) };
        writeHeldRevision(db, answer);
        writeServiceLevels(db, answer.levels);
        writeMeta(db, STATUS_KEY, { lastSuccessAt: attemptAt, lastAttemptAt: attemptAt, lastError: null, lastSummary } satisfies SyncStatus);
        return lastSummary;
      })
      .immediate();
  } finally {
    stage.drop();
    dropDirectoryScope(db);
  }
}
