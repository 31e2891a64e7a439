import type { Db } from '../store/database.js';
import type { DirectoryVersion } from '../protocol/directory.js';
import { readHeldVersion, writeHeldRevision } from '../store/heldRevision.js';
import { readMeta, writeMeta } from '../store/meta.js';
import { SYNC_STATUS_KEY } from '../store/offlineLimitState.js';
import {
  countManaged,
  countRemoved,
  MassRemovalError,
  mergeStage,
  type AwaitedRestore,
  type HistoryChange,
  type MergeSummary,
} from '../store/snapshotMerge.js';
import { SnapshotStage } from '../store/snapshotStage.js';
import { NO_RESTRICTIONS, type RestrictionSummary } from '../store/restrictiveMerge.js';
import { writeServiceLevels, type ServiceLevels } from '../store/serviceLevels.js';
import { countBeyondCache } from '../store/widening.js';
import type { ResponseSpool } from './responseSpool.js';
import { ServiceError, type ServiceClient } from './serviceClient.js';
import { clearDirectoryScope, stageDetails, stageDirectory, stageUserList } from './streamedAnswers.js';
import { etagContradiction } from './etagCheck.js';
import { restrictRefused } from './refusedAnswer.js';

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
  /** The bodies of the sync's answers as received (compressed or not), in bytes. */
  wireBytes: number;
  /** The same after decompression (what was parsed). */
  bodyBytes: number;
  /** Why a delta was asked for and everything came instead (a delta of another history, an ETag that contradicts its body). */
  fullBecause?: string;
}

/** The last successful sync as status keeps it: duration and sizes are absent in a status from before they were kept. */
export type SyncSummary = Omit<SyncResult, 'durationMs' | 'applyMs' | 'wireBytes' | 'bodyBytes' | 'fullBecause'> &
  Partial<Pick<SyncResult, 'durationMs' | 'wireBytes' | 'bodyBytes'>>;

export interface SyncStatus {
  lastSuccessAt: string | null;
  lastAttemptAt: string | null;
  lastError: string | null;
  lastSummary: SyncSummary | null;
  /** An answer the mass-removal guard refused, until a sync succeeds; absent or null: none. */
  heldBack?: HeldBack | null;
}

/** A refused answer: what of it applied at once, and what waits for `door-agent sync --allow-mass-removal`. */
export interface HeldBack {
  /** The last refusal (each sync until then is refused again). */
  at: string;
  /** history_changed: a full answer of another history (the service's database restored from a backup or replaced). */
  reason: 'mass_removal' | 'history_changed';
  restricted: RestrictionSummary;
  waiting: { credentialsRemoved: number; credentialsBefore: number };
  /**
   * The answer's restore awaits acceptance at the service (reason history_changed): when the service detected it,
   * and what the answer would add or re-admit beyond the cache. Absent: the mass-removal guard alone refused it.
   */
  restore?: AwaitedRestore;
}

function heldBackOf(err: MassRemovalError, at: string): HeldBack {
  const restore = err.history?.restore;
  return {
    at,
    reason: err.history ? 'history_changed' : 'mass_removal',
    restricted: err.restricted ?? NO_RESTRICTIONS,
    waiting: { credentialsRemoved: err.removed, credentialsBefore: err.current },
    ...(restore ? { restore } : {}),
  };
}

// The offline limit reads lastSuccessAt there too (store/offlineLimitState.ts).
const STATUS_KEY = SYNC_STATUS_KEY;
export { readHeldRevision, readHeldVersion } from '../store/heldRevision.js';

const NO_CHANGE = { added: 0, changed: 0, removed: 0, unchanged: 0 };

/**
 * When the cache was last refreshed: the newer of the last successful sync and the last import (wall ms), null
 * before either (an unreadable time counts as none). The health topic and the metrics both report its age.
 */
export function lastRefreshAt(db: Db): number | null {
  const synced = readSyncStatus(db).lastSuccessAt;
  const imported = readMeta<{ at: string }>(db, 'last_import')?.at ?? null;
  const times = [synced, imported].map((t) => (t === null ? Number.NaN : Date.parse(t))).filter(Number.isFinite);
  return times.length > 0 ? Math.max(...times) : null;
}

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
  const before = { ...client.traffic };
  // What this sync has cost so far: its duration and its answers' bytes (status shows them).
  const measured = () => ({
    durationMs: performance.now() - started,
    wireBytes: client.traffic.wireBytes - before.wireBytes,
    bodyBytes: client.traffic.bodyBytes - before.bodyBytes,
  });
  const record = (lastSummary: SyncSummary) =>
    writeMeta(db, STATUS_KEY, { lastSuccessAt: attemptAt, lastAttemptAt: attemptAt, lastError: null, lastSummary } satisfies SyncStatus);
  try {
    // The extension endpoint first: one request, and only what changed; the seed's calls when it is absent (404).
    const heldVersion = readHeldVersion(db);
    let held = options.full ? null : heldVersion;
    let fullBecause: string | undefined;
    for (;;) {
      const answer = await client.directory(held);
      if (answer.kind === 'unsupported') break;
      if (answer.kind === 'unchanged') {
        const contradiction = held === null ? null : etagContradiction(answer.etag, held);
        if (contradiction !== null) {
          // "Unchanged", but not from the version held: nothing says what the cache misses. Everything instead.
          fullBecause = `${contradiction} (a 304 answer to the version held)`;
          held = null;
          continue;
        }
        const summary = {
          users: NO_CHANGE,
          credentials: NO_CHANGE,
          guestLinks: NO_CHANGE,
          rowsWritten: 0,
          revision: held?.revision ?? null,
          mode: 'unchanged' as const,
        };
        const lastSummary = { ...summary, ...measured() };
        record(lastSummary);
        return { ...lastSummary, ...measured() };
      }
      const applying = performance.now();
      let result: ReturnType<typeof applyDirectory>;
      try {
        result = applyDirectory(db, answer.body, answer.etag, options, heldVersion, (summary) => record({ ...summary, ...measured() }));
      } finally {
        answer.body.dispose();
      }
      if (typeof result !== 'string') {
        return { ...result, ...measured(), applyMs: performance.now() - applying, ...(fullBecause ? { fullBecause } : {}) };
      }
      if (held === null) throw new ServiceError('GET /directory: a full answer was asked for and a delta came', '/directory', 200);
      // A delta of another history than the one held, or one whose ETag contradicts it: never applied on top of
      // this cache; everything instead.
      fullBecause = result;
      held = null;
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
          let summary: MergeSummary;
          try {
            summary = mergeStage(db, { maxRemovalRatio: options.maxRemovalRatio, includeLinks: false });
          } catch (err) {
            // Refused: its restrictive part still applies (the levels are not the seed's to narrow).
            if (err instanceof MassRemovalError) return restrictRefused(db, err, { maxRemovalRatio: options.maxRemovalRatio });
            throw err;
          }
          // The seed's calls carry no level definitions: the config's levels alone apply.
          writeServiceLevels(db, null);
          const lastSummary = { ...summary, revision: null, mode: 'lists' as const };
          record({ ...lastSummary, ...measured() });
          return lastSummary;
        })
        .immediate();
      if (result instanceof MassRemovalError) throw result;
      return { ...result, ...measured() };
    } finally {
      stage.clear();
    }
  } catch (err) {
    try {
      // A refused answer stays held back, and says so, until a sync succeeds (whatever fails in between).
      const heldBack = err instanceof MassRemovalError ? heldBackOf(err, attemptAt) : (status.heldBack ?? null);
      writeMeta(db, STATUS_KEY, {
        ...status,
        lastAttemptAt: attemptAt,
        lastError: err instanceof Error ? err.message : String(err),
        heldBack,
      } satisfies SyncStatus);
    } catch {
      // the error itself is what matters to the caller
    }
    throw err;
  }
}

/**
 * A full answer whose restore awaits acceptance at the service, refused as a mass removal with a history change
 * is (refusedAnswer.ts): its restrictive part applies now, in the caller's transaction; what it grants beyond the
 * cache, and the users it no longer lists, wait. The revision held does not move, so each sync asks again.
 */
function refuseAwaitedRestore(
  db: Db,
  awaited: { history: HistoryChange; detectedAt: string; maxRemovalRatio: number },
  levels: ServiceLevels | null,
): MassRemovalError {
  const { maxRemovalRatio } = awaited;
  const history: HistoryChange = { ...awaited.history, restore: { detectedAt: awaited.detectedAt, beyondCache: countBeyondCache(db) } };
  const scope = { includeLinks: false, scoped: false };
  const refusal = new MassRemovalError(countRemoved(db, scope), countManaged(db, scope), maxRemovalRatio, history);
  return restrictRefused(db, refusal, { maxRemovalRatio, levels, history });
}

/**
 * Applies a GET /directory answer. A delta is applied to the users held: the unchanged ones are carried over from
 * the cache into the stage, the changed ones replace theirs, the removed ones are left out; then the same merge as
 * a full sync (one transaction, unchanged rows not rewritten, the mass-removal guard judged on the result).
 */
function applyDirectory(
  db: Db,
  body: ResponseSpool,
  etag: DirectoryVersion | null,
  options: SyncOptions,
  held: DirectoryVersion | null,
  record: (summary: Omit<SyncSummary, 'durationMs' | 'wireBytes' | 'bodyBytes'>) => void,
): Omit<SyncSummary, 'durationMs' | 'wireBytes' | 'bodyBytes'> | string {
  const stage = new SnapshotStage(db);
  try {
    const answer = stageDirectory(db, stage, body);
    // The service's history changed (restored from a backup): only a full answer may replace this cache, and the
    // mass-removal guard still judges it (a restore is no reason to trust a mass removal).
    const history = held?.history && answer.history && held.history !== answer.history ? { from: held.history, to: answer.history } : undefined;
    if (history && !answer.full) return `a delta of another history (held ${held!.history}, the answer's ${answer.history})`;
    // A full answer replaces everything and names its own version: it is applied whatever its ETag says.
    const contradiction = etagContradiction(etag, answer);
    if (contradiction !== null && !answer.full) return contradiction;
    // The new history is a restore the service has not accepted yet: it undid the revocations made after its
    // backup, which this cache still holds. Refused unless accepted here (--allow-mass-removal); a door holding no
    // history yet has nothing to keep.
    const awaited =
      history && answer.full && answer.restore !== null && options.maxRemovalRatio !== null
        ? { history, detectedAt: answer.restore.detectedAt, maxRemovalRatio: options.maxRemovalRatio }
        : null;
    const result = db
      .transaction(() => {
        if (awaited) return refuseAwaitedRestore(db, awaited, answer.levels);
        let summary: MergeSummary;
        try {
          summary = mergeStage(db, { maxRemovalRatio: options.maxRemovalRatio, includeLinks: false, scoped: !answer.full });
        } catch (err) {
          // Refused: its restrictive part still applies, in this transaction; the refusal is thrown once it committed.
          if (err instanceof MassRemovalError) return restrictRefused(db, err, { maxRemovalRatio: options.maxRemovalRatio, levels: answer.levels, history });
          throw err;
        }
        const lastSummary = { ...summary, revision: answer.revision, mode: answer.full ? ('directory_full' as const) : ('directory_delta' as const) };
        writeHeldRevision(db, answer);
        writeServiceLevels(db, answer.levels);
        record(lastSummary);
        return lastSummary;
      })
      .immediate();
    if (result instanceof MassRemovalError) throw result;
    return result;
  } finally {
    stage.clear();
    clearDirectoryScope(db);
  }
}
