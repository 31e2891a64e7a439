/**
 * The sync, in a worker thread with its own SQLite connection (see syncThread.ts): the HTTP calls, the JSON,
 * the validation and the apply never run on the daemon's event loop, so a tap or a relock timer never waits for
 * a sync. One sync at a time, on request from the main thread.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { MassRemovalError, type HistoryChange } from '../store/snapshotMerge.js';
import { ServiceError } from './serviceClient.js';
import { openSyncSession, type SyncOrder, type SyncOutcome, type SyncWorkerData } from './syncSession.js';

/** How much lower than the daemon the sync thread runs (nice +10: it gets the CPU the door does not need). */
const SYNC_NICENESS = 10;

/** An order as it crosses to the thread; the directory's scan runs here too, off the door's thread. */
export type SyncRequest = SyncOrder & { id: number };

/** An error as it crosses the thread boundary, with what the scheduler needs to tell the kinds apart. */
export type SyncFailure =
  | { kind: 'mass_removal'; message: string; removed: number; current: number; maxRatio: number; history?: HistoryChange }
  | { kind: 'service'; message: string; endpoint: string; status: number | null; retryAfterMs: number | null }
  | { kind: 'other'; message: string };

export type SyncReply = { id: number; ok: true; result: SyncOutcome } | { id: number; ok: false; error: SyncFailure };

function failure(err: unknown): SyncFailure {
  if (err instanceof MassRemovalError)
    return { kind: 'mass_removal', message: err.message, removed: err.removed, current: err.current, maxRatio: err.maxRatio, history: err.history };
  if (err instanceof ServiceError) return { kind: 'service', message: err.message, endpoint: err.endpoint, status: err.status, retryAfterMs: err.retryAfterMs };
  return { kind: 'other', message: err instanceof Error ? err.message : String(err) };
}

/**
 * The sync is background work: its thread yields the CPU to the door's main thread whenever both want it, so a
 * tap on a busy two-core board is not kept waiting behind validation and staging (Linux applies setpriority to
 * the one thread whose id it is given). Anywhere else, or if refused, the sync simply runs at normal priority.
 */
function yieldCpuToTheDoor(): void {
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(threadId) && threadId > 0) setPriority(threadId, Math.min(19, getPriority(threadId) + SYNC_NICENESS));
  } catch {
    // not Linux, or not permitted: a normal priority
  }
}

if (parentPort) {
  yieldCpuToTheDoor();
  const port = parentPort;
  const session = openSyncSession(workerData as SyncWorkerData);
  port.on('message', (request: SyncRequest) => {
    const { id, ...order } = request;
    session.sync(order).then(
      (result) => port.postMessage({ id, ok: true, result } satisfies SyncReply),
      (err: unknown) => port.postMessage({ id, ok: false, error: failure(err) } satisfies SyncReply),
    );
  });
  port.on('close', () => session.close());
}
