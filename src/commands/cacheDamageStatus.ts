import { REBUILD_BY_HAND } from '../store/cacheDamage.js';
import type { CacheRebuild } from '../store/cacheAudit.js';
import type { CacheRuntime } from '../store/runtimeStatus.js';

/** The cache's damage as `status` shows it: what the file check found now, and what the daemon reported of it. */
export interface CacheDamageView {
  /** What SQLite's check of the file found now (null: sound, or no file). */
  error: string | null;
  /** `automatic`: door-agent run rebuilds it from the service (a `service` section); `manual`: the operator does. */
  rebuild: CacheRebuild;
  /** Whether a daemon runs now (it rebuilds; else the next start does). */
  daemonRunning: boolean;
  /** The daemon's own record: since when it holds the cache damaged, its last failed attempt, its last rebuild. */
  daemon: CacheRuntime | null;
}

export function cacheDamageView(error: string | null, hasService: boolean, daemonRunning: boolean, runtime: CacheRuntime | undefined): CacheDamageView {
  return { error, rebuild: hasService ? 'automatic' : 'manual', daemonRunning, daemon: runtime ?? null };
}

/** The status lines: a warning with what to do while the cache is damaged; the last rebuild once it was. */
export function cacheDamageLines(view: CacheDamageView, file: string): string[] {
  const daemon = view.daemon;
  if (view.error === null) {
    return daemon?.rebuiltAt
      ? [`cache: rebuilt from the service at ${daemon.rebuiltAt} after it was found damaged; the damaged file is kept as ${daemon.keptAs}`]
      : [];
  }
  const what = `WARNING: the cache ${file} is damaged (${view.error}): every card, PIN and guest link is refused and the doors stay locked`;
  if (view.rebuild === 'manual') return [what, `  to rebuild it: ${REBUILD_BY_HAND}`];
  if (!view.daemonRunning)
    return [what, `  door-agent run rebuilds it from the service when it starts (the damaged file kept aside); or by hand: ${REBUILD_BY_HAND}`];
  const attempt = daemon?.lastAttempt ? `; last attempt ${daemon.lastAttempt.at} failed: ${daemon.lastAttempt.error}` : '';
  const since = daemon?.damagedSince ? ` (damaged since ${daemon.damagedSince})` : '';
  return [what, `  the daemon rebuilds it from the service by itself, retrying until the service answers${since}${attempt}; the damaged file is kept aside`];
}
