import type { Logger } from 'pino';
import { MassRemovalError } from '../store/snapshotMerge.js';
import type { Timers } from '../util/clock.js';
import { ServiceError } from './serviceClient.js';
import type { SyncResult } from './sync.js';
import { firstSyncDelay, intervalDelay, retryDelay } from '../util/pollDelays.js';

/**
 * Periodic sync (docs/sync.md, "Schedule"): the first one a random delay after start (`startDelayMs`, so doors
 * started together do not stampede the service); then every interval ±10 %; after a failure, full-jitter
 * backoff capped at the interval; a 503 or 429 with Retry-After is not tried again before it (capped at the
 * interval too); a refused API key or a refused mass removal waits a whole interval (no retry storm).
 *
 * Two kinds of trigger: a request (MQTT `P/agents/<id>/sync`) syncs now, also during the start delay, but not
 * before a Retry-After; a change (a pushed revision) syncs now, except during the start delay (the first sync is
 * coming: after a power cut every door gets the retained revision at once) and before a Retry-After. Either,
 * during a sync, runs one more right after it.
 */
export class SyncScheduler {
  private timer: unknown = null;
  private running = false;
  private again = false;
  private attempt = 0;
  private stopped = false;
  /** The timer pending is the start delay, or a Retry-After: a change waits for it (a request too, for a Retry-After). */
  private holding: 'start' | 'retry_after' | null = null;

  constructor(
    private readonly deps: {
      run: () => Promise<SyncResult>;
      intervalMs: number;
      /** The first sync waits a random delay up to this. */
      startDelayMs: number;
      timers: Timers;
      logger: Logger;
      random?: () => number;
    },
  ) {}

  private get random(): () => number {
    return this.deps.random ?? Math.random;
  }

  start(): void {
    const delay = firstSyncDelay(this.deps.startDelayMs, this.random);
    this.holding = 'start';
    this.schedule(delay);
    if (delay > 0) this.deps.logger.info({ inMs: delay }, 'first sync after a random start delay (service.startDelaySeconds)');
  }

  /** An explicit request: now, or right after the sync under way; not before a Retry-After the service gave. */
  trigger(): void {
    this.triggered('request');
  }

  /** The directory changed at the service: now, or right after the sync under way; not during the start delay nor before a Retry-After. */
  changed(): void {
    this.triggered('change');
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
  }

  private triggered(kind: 'request' | 'change'): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.holding === 'retry_after' || (this.holding === 'start' && kind === 'change')) {
      this.deps.logger.info(
        { kind },
        `sync ${kind === 'request' ? 'requested' : 'wanted'}: it runs when the ${this.holding === 'start' ? 'start delay' : "service's Retry-After"} ends`,
      );
      return;
    }
    this.holding = null;
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = this.deps.timers.setTimeout(() => {
      this.timer = null;
      this.holding = null;
      void this.runNow();
    }, ms);
  }

  private async runNow(): Promise<void> {
    const { logger, intervalMs } = this.deps;
    this.running = true;
    let next = intervalDelay(intervalMs, this.random);
    let retryAfter = false;
    try {
      const r = await this.deps.run();
      this.attempt = 0;
      logger.info(
        {
          mode: r.mode,
          revision: r.revision,
          users: r.users,
          credentials: r.credentials,
          rowsWritten: r.rowsWritten,
          ms: Math.round(r.durationMs),
          wireBytes: r.wireBytes,
          bodyBytes: r.bodyBytes,
          ...(r.fullBecause ? { fullBecause: r.fullBecause } : {}),
        },
        'sync done',
      );
    } catch (err) {
      if (this.stopped) {
        // The agent is stopping (the sync thread was ended under the sync): nothing failed, nothing is retried.
        logger.info({ reason: (err as Error).message }, 'sync abandoned: the agent is stopping');
        return;
      }
      if (err instanceof MassRemovalError) {
        // The answer's restrictive part was applied all the same (sync/refusedAnswer.ts): the message says what.
        logger.error({ removed: err.removed, of: err.current, restrictions: err.restricted?.total ?? 0 }, `sync refused: ${err.message}`);
      } else if (err instanceof ServiceError && err.authRefused) {
        logger.error({ endpoint: err.endpoint, status: err.status }, `sync failed: the API key was refused; next try in one interval`);
      } else {
        const retryAfterMs = err instanceof ServiceError ? err.retryAfterMs : null;
        next = retryDelay(this.attempt++, retryAfterMs, intervalMs, this.random);
        retryAfter = retryAfterMs !== null;
        logger.warn(
          { err: { message: (err as Error).message }, retryInMs: next, ...(retryAfter ? { retryAfterMs, capped: retryAfterMs! > intervalMs } : {}) },
          'sync failed; the cache is unchanged',
        );
      }
    } finally {
      this.running = false;
    }
    if (this.again && !retryAfter) next = 0;
    this.again = false;
    this.holding = retryAfter ? 'retry_after' : null;
    this.schedule(next);
  }
}
