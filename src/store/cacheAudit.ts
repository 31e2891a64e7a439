import { basename } from 'node:path';
import type { Logger } from 'pino';
import { REBUILD_BY_HAND } from './cacheDamage.js';
import type { CacheChange } from './cacheConnection.js';
import type { EventLog } from './eventLog.js';

/** How a damaged cache is rebuilt: `automatic` by the daemon from the service, `manual` by the operator (no service). */
export type CacheRebuild = 'automatic' | 'manual';

/**
 * A change of the cache, recorded once: an audit event of the agent (no door; `cache_damaged`, `cache_rebuilt`)
 * and a line in the log saying what it means for the doors and what happens next.
 */
export function recordCacheChange(change: CacheChange, deps: { events: EventLog; logger: Logger; rebuild: CacheRebuild; at: number }): void {
  const { events, logger, rebuild, at } = deps;
  if (change.kind === 'damaged') {
    const { error } = change.damage;
    const next =
      rebuild === 'automatic'
        ? 'door-agent rebuilds it from the service (a full sync into a new file; the damaged one is kept aside, renamed), ' +
          'trying again with backoff while the service cannot be reached'
        : `no service is configured to rebuild it from: ${REBUILD_BY_HAND}`;
    logger.error(
      { error, atStart: change.atStart },
      `the cache is damaged (${error}): every card, PIN and guest link is refused and the doors stay locked; ${next}`,
    );
    append(events, logger, { type: 'cache_damaged', at, data: { error, at_start: change.atStart, rebuild } });
    return;
  }
  const seconds = Math.max(0, Math.round((at - change.damage.since) / 1000));
  logger.info({ keptAs: change.keptAs, seconds }, 'the cache was rebuilt from the service: decisions resume (the damaged file is kept aside)');
  append(events, logger, {
    type: 'cache_rebuilt',
    at,
    data: { kept_as: basename(change.keptAs), damaged_since: new Date(change.damage.since).toISOString(), seconds },
  });
}

function append(events: EventLog, logger: Logger, event: { type: 'cache_damaged' | 'cache_rebuilt'; at: number; data: Record<string, unknown> }): void {
  try {
    events.append({ type: event.type, door: null, at: event.at, data: event.data });
  } catch (err) {
    logger.error({ err, type: event.type }, 'cannot record event');
  }
}
