import type { RestrictionSummary } from '../store/restrictiveMerge.js';
import { CacheDamagedError, damageReason, isCacheDamage } from '../store/cacheDamage.js';
import { MassRemovalError, type HistoryChange } from '../store/snapshotMerge.js';
import { DoorAgentError } from '../util/errors.js';
import { ServiceError } from './serviceClient.js';

/** A sync's error as it crosses a thread boundary, with what the scheduler needs to tell the kinds apart. */
export type SyncFailure =
  | {
      kind: 'mass_removal';
      message: string;
      removed: number;
      current: number;
      maxRatio: number;
      history?: HistoryChange;
      restricted?: RestrictionSummary;
    }
  | { kind: 'service'; message: string; endpoint: string; status: number | null; retryAfterMs: number | null }
  | { kind: 'damaged'; message: string }
  | { kind: 'other'; message: string };

/** The thread that ran the sync: its error, as it may be posted. */
export function syncFailure(err: unknown): SyncFailure {
  if (err instanceof MassRemovalError)
    return {
      kind: 'mass_removal',
      message: err.message,
      removed: err.removed,
      current: err.current,
      maxRatio: err.maxRatio,
      history: err.history,
      restricted: err.restricted,
    };
  if (err instanceof ServiceError) return { kind: 'service', message: err.message, endpoint: err.endpoint, status: err.status, retryAfterMs: err.retryAfterMs };
  // The worker read a damaged page of the cache: the daemon rebuilds it (store/cacheConnection.ts).
  if (isCacheDamage(err)) return { kind: 'damaged', message: damageReason(err) };
  return { kind: 'other', message: err instanceof Error ? err.message : String(err) };
}

/** The thread that asked for the sync: the same error kinds as syncOnce throws. */
export function syncError(failure: SyncFailure): Error {
  switch (failure.kind) {
    case 'mass_removal':
      return new MassRemovalError(failure.removed, failure.current, failure.maxRatio, failure.history, failure.restricted);
    case 'service':
      return new ServiceError(failure.message, failure.endpoint, failure.status, { retryAfterMs: failure.retryAfterMs });
    case 'damaged':
      return new CacheDamagedError(failure.message);
    default:
      return new DoorAgentError(failure.message);
  }
}

/**
 * A sync under way when the agent stopped: not a failure. Its transaction, unless it had committed already, is
 * dropped with the thread, and the cache is as it was.
 */
export class SyncAbandoned extends DoorAgentError {
  constructor() {
    super('the agent is stopping: the sync under way was abandoned (uncommitted, it leaves the cache as it was)');
  }
}
