/**
 * The cache's age for the offline limit (access.maxCacheAgeHours, docs/sync.md "The offline limit"). A clock set
 * back must never make the cache younger than it was seen to be:
 * - within one boot (the daemon restarted or not) the age is the monotonic time since boot elapsed since the sync,
 *   which no clock setting moves;
 * - after a reboot (another boot id, or none known) it is the wall time since the sync, but never less than the
 *   age the daemon last checkpointed.
 */

/** When the last successful sync was, on the clocks the age is measured with. */
export interface SyncMark {
  /** Wall-clock ms of the sync. */
  wallMs: number;
  /** Monotonic ms since boot at the sync; null when not known (a sync seen only by its wall time). */
  monoMs: number | null;
  /** The boot the monotonic reading belongs to (/proc/sys/kernel/random/boot_id); null: not known. */
  bootId: string | null;
  /** The age last checkpointed for this sync (ms): the least the age can be after a reboot. */
  checkpointAgeMs: number;
}

/** The clocks now. */
export interface AgeReading {
  wallMs: number;
  monoMs: number;
  bootId: string | null;
}

/** The cache's age in ms: Infinity when it was never synced (its age is not known). */
export function cacheAgeMs(mark: SyncMark | null, now: AgeReading): number {
  if (mark === null) return Number.POSITIVE_INFINITY;
  if (mark.monoMs !== null && mark.bootId !== null && mark.bootId === now.bootId) return Math.max(0, now.monoMs - mark.monoMs);
  return Math.max(0, now.wallMs - mark.wallMs, mark.checkpointAgeMs);
}

/** Whether the offline limit is in force: the cache is older than the limit (null: no limit configured). */
export function pastLimit(ageMs: number, limitMs: number | null): boolean {
  return limitMs !== null && ageMs > limitMs;
}
