import type { AgentOptions } from '../config/options.js';
import { cacheAgeMs, pastLimit } from '../core/cacheAge.js';
import type { Db } from '../store/database.js';
import { lastSyncSuccessAt, readOfflineLimit, syncMarkOf } from '../store/offlineLimitState.js';
import type { RuntimeStatus } from '../store/runtimeStatus.js';
import type { BootClock } from '../util/bootClock.js';

/** The offline limit as `status` shows it (`--json`: `offlineLimit`). */
export interface OfflineLimitView {
  /** access.maxCacheAgeHours; null: no limit. */
  maxCacheAgeHours: number | null;
  /** The cache's age as the limit measures it (null: never synced). */
  cacheAgeSeconds: number | null;
  /** Past the limit: only responders are admitted (and guest links). */
  inForce: boolean;
}

/** The cache's age measured as the daemon does (door/offlineLimit.ts), from its record in state.db. */
export function offlineLimitStatus(config: AgentOptions, cache: Db, state: Db | null, now: number, boot: BootClock): OfflineLimitView {
  const limitHours = config.access.maxCacheAgeHours ?? null;
  if (limitHours === null) return { maxCacheAgeHours: null, cacheAgeSeconds: null, inForce: false };
  const mark = syncMarkOf(state ? readOfflineLimit(state) : undefined, lastSyncSuccessAt(cache));
  const age = cacheAgeMs(mark, { wallMs: now, monoMs: boot.monoNow(), bootId: boot.bootId() });
  return {
    maxCacheAgeHours: limitHours,
    cacheAgeSeconds: Number.isFinite(age) ? Math.round(age / 1000) : null,
    inForce: pastLimit(age, limitHours * 3_600_000),
  };
}

const hours = (seconds: number) => (seconds < 3600 ? `${Math.round(seconds / 60)} min` : `${(seconds / 3600).toFixed(1)} h`);

export function offlineLimitLines(view: OfflineLimitView): string[] {
  if (view.maxCacheAgeHours === null) return [];
  const age = view.cacheAgeSeconds === null ? 'the cache was never synced' : `cache age ${hours(view.cacheAgeSeconds)}`;
  return [
    `offline limit: ${view.maxCacheAgeHours} h (access.maxCacheAgeHours); ${age}: ` +
      (view.inForce ? 'IN FORCE, only responders are admitted (and guest links) until a sync succeeds' : 'not reached'),
  ];
}

/** The power inputs as the running daemon last saw them (`--json`: `power`); null without a power section. */
export function powerStatus(config: AgentOptions, runtime: RuntimeStatus | undefined, running: boolean): RuntimeStatus['power'] | null {
  if (!config.power) return null;
  const seen = running ? runtime?.power : undefined;
  return {
    mains: config.power.mainsPin === undefined ? null : (seen?.mains ?? null),
    battery: config.power.batteryLowPin === undefined ? null : (seen?.battery ?? null),
  };
}

export function powerLines(power: RuntimeStatus['power'] | null, config: AgentOptions): string[] {
  if (!power || !config.power) return [];
  const unknown = 'unknown (the daemon is not running)';
  const parts = [
    ...(config.power.mainsPin !== undefined ? [`mains ${power.mains === 'lost' ? 'LOST (on battery)' : (power.mains ?? unknown)}`] : []),
    ...(config.power.batteryLowPin !== undefined ? [`battery ${power.battery === 'low' ? 'LOW' : (power.battery ?? unknown)}`] : []),
  ];
  return [`power: ${parts.join(', ')}`];
}
