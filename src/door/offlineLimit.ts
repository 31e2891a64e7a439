import type { Logger } from 'pino';
import { cacheAgeMs, pastLimit, type SyncMark } from '../core/cacheAge.js';
import type { Component } from '../lifecycle.js';
import type { Db } from '../store/database.js';
import type { EventLog } from '../store/eventLog.js';
import { lastSyncSuccessAt, readOfflineLimit, syncMarkOf, writeOfflineLimit } from '../store/offlineLimitState.js';
import type { PendingWrites } from '../store/pendingWrites.js';
import type { BootClock } from '../util/bootClock.js';
import type { Clock, Timers } from '../util/clock.js';
import { withProps } from '../core/objects.js';

/** How often the limit is looked at without a tap (raised on time, a door-agent sync beside the daemon noticed). */
const CHECK_INTERVAL_MS = 60_000;
/** Every this many looks the age is saved (SD card: not per tap, not per minute). */
const CHECKPOINT_EVERY = 10;
/** A tap past the limit looks for a door-agent sync beside the daemon at most this often. */
const RELOOK_MS = 10_000;

export interface OfflineLimitDeps {
  /** access.maxCacheAgeHours. */
  limitHours: number;
  /** The agent's store (started before this): the cache's sync record, state.db, the audit log, the pending writes. */
  /** `cache`: whether it is damaged (store/cacheConnection.ts), when the store can tell. */
  store: { readonly db: Db; readonly state: Db; readonly events: EventLog; readonly writes: PendingWrites; readonly cache?: { readonly damage: unknown } };
  /** The agent's wall clock (never steps back). */
  clock: Clock;
  boot: BootClock;
  timers: Timers;
  logger: Logger;
}

/**
 * The offline limit (access.maxCacheAgeHours, docs/sync.md): past it without a successful sync, the doors admit
 * only responders (and the exit button; guest links keep their own validity). Decisions ask `tooOld()` (cheap: no
 * timer needed, a tap past the limit is refused at once); the first time it is found past, `cache_too_old` is
 * recorded once; the next successful sync records `cache_fresh`. The age comes from core/cacheAge.ts: on the
 * monotonic clock since boot within a boot, from the wall clock and the checkpointed age across a reboot.
 */
export class OfflineLimit implements Component {
  readonly name = 'offline limit';
  private readonly limitMs: number;
  private mark: SyncMark | null = null;
  /** The cache's lastSuccessAt the mark belongs to. */
  private syncedAt: string | null = null;
  private raised = false;
  private timer: unknown = null;
  private looks = 0;
  private lastLook = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: OfflineLimitDeps) {
    this.limitMs = deps.limitHours * 3_600_000;
  }

  start(): void {
    const { store, logger } = this.deps;
    const syncedAt = this.readSyncedAt();
    let saved: ReturnType<typeof readOfflineLimit>;
    try {
      saved = readOfflineLimit(store.state);
    } catch (err) {
      logger.error({ err }, 'cannot read the offline limit record: the age is taken from the last sync time alone');
    }
    this.syncedAt = syncedAt;
    this.mark = syncMarkOf(saved, syncedAt);
    this.raised = saved !== undefined && saved.syncedAt === syncedAt && saved.raised;
    this.lastLook = this.deps.boot.monoNow();
    logger.info(
      { limitHours: this.deps.limitHours, ageSeconds: this.ageSeconds(this.ageMs()), lastSync: syncedAt },
      'offline limit (access.maxCacheAgeHours) on',
    );
    this.tooOld();
    this.schedule();
  }

  stop(): void {
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
    this.save();
  }

  /** Whether the cache is past the limit now: asked at every decision. */
  tooOld(): boolean {
    if (!pastLimit(this.ageMs(), this.limitMs)) return false;
    // A door-agent sync beside the daemon may have refreshed the cache since the last look.
    if (this.deps.boot.monoNow() - this.lastLook >= RELOOK_MS && this.lookForSync() && !pastLimit(this.ageMs(), this.limitMs)) return false;
    this.raise();
    return true;
  }

  /** The daemon's own sync succeeded (the worker has written the cache's record). */
  synced(): void {
    this.fresh(this.readSyncedAt());
  }

  /** The cache's age now (ms; Infinity: never synced). */
  ageMs(): number {
    const { clock, boot } = this.deps;
    return cacheAgeMs(this.mark, { wallMs: clock.wallNow(), monoMs: boot.monoNow(), bootId: boot.bootId() });
  }

  private ageSeconds(ageMs: number): number | null {
    return Number.isFinite(ageMs) ? Math.round(ageMs / 1000) : null;
  }

  private readSyncedAt(): string | null {
    // A damaged cache says nothing (the log has said so once); its rebuild is a sync (`synced`).
    if (this.deps.store.cache?.damage) return this.syncedAt;
    try {
      return lastSyncSuccessAt(this.deps.store.db);
    } catch (err) {
      this.deps.logger.error({ err }, 'cannot read the time of the last sync from the cache');
      return this.syncedAt;
    }
  }

  /** A sync the daemon did not run (door-agent sync): taken as a sync now. Returns whether there was one. */
  private lookForSync(): boolean {
    this.lastLook = this.deps.boot.monoNow();
    const syncedAt = this.readSyncedAt();
    if (syncedAt === null || syncedAt === this.syncedAt) return false;
    this.fresh(syncedAt);
    return true;
  }

  private fresh(syncedAt: string | null): void {
    if (syncedAt === null) return; // the worker's record cannot be read: the age stays as it was
    const { clock, boot, logger } = this.deps;
    const age = this.ageMs();
    this.syncedAt = syncedAt;
    this.mark = { wallMs: clock.wallNow(), monoMs: boot.monoNow(), bootId: boot.bootId(), checkpointAgeMs: 0 };
    if (this.raised) {
      this.raised = false;
      this.record('cache_fresh', { last_sync: syncedAt, age_seconds: this.ageSeconds(age), limit_hours: this.deps.limitHours });
      logger.info({ lastSync: syncedAt }, 'the cache is fresh again: every door decides as usual');
    }
    this.save();
  }

  private raise(): void {
    if (this.raised) return;
    this.raised = true;
    const age = this.ageSeconds(this.ageMs());
    this.record('cache_too_old', { last_sync: this.syncedAt, age_seconds: age, limit_hours: this.deps.limitHours });
    this.deps.logger.warn(
      { lastSync: this.syncedAt, ageSeconds: age, limitHours: this.deps.limitHours },
      'the cache is older than access.maxCacheAgeHours: only responders are admitted (and guest links) until a sync succeeds',
    );
    this.save();
  }

  private record(type: 'cache_too_old' | 'cache_fresh', data: Record<string, unknown>): void {
    try {
      this.deps.store.events.append({ type, door: null, at: this.deps.clock.wallNow(), data });
    } catch (err) {
      this.deps.logger.error({ err, type }, 'cannot record event');
    }
  }

  private schedule(): void {
    this.timer = this.deps.timers.setTimeout(() => {
      this.lookForSync();
      this.tooOld();
      if (++this.looks % CHECKPOINT_EVERY === 0) this.save();
      this.schedule();
    }, CHECK_INTERVAL_MS);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** The mark and the age seen: what a restart after a reboot (or with the clock set back) starts from. */
  private save(): void {
    const age = this.ageMs();
    // Never synced: nothing to measure from, but cache_too_old raised is kept (not raised again at each start).
    const mark = this.mark ?? { wallMs: 0, monoMs: null, bootId: null, checkpointAgeMs: 0 };
    const record = withProps(mark, {
      checkpointAgeMs: Math.max(mark.checkpointAgeMs, Number.isFinite(age) ? Math.floor(age) : 0),
      syncedAt: this.syncedAt,
      raised: this.raised,
    });
    if (this.mark !== null) this.mark = withProps(mark, { checkpointAgeMs: record.checkpointAgeMs });
    const state = this.deps.store.state;
    this.deps.store.writes.run('offline-limit', () => {
      if (state.open) writeOfflineLimit(state, record);
    });
  }
}
