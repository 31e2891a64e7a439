import type { Logger } from 'pino';
import { MassRemovalError } from '../store/snapshotMerge.js';
import { backoffDelay } from '../util/backoff.js';
import type { Timers } from '../util/clock.js';
import { ServiceError } from './serviceClient.js';
import type { SyncResult } from './sync.js';

/**
 * Periodic sync: every interval with ±10 % jitter; after a failure, exponential backoff with jitter capped at
 * the interval; a refused API key or a refused mass removal waits a whole interval (no retry storm). A trigger
 * (MQTT `P/agents/<id>/sync`) syncs now, or right after the sync under way.
 */
export class SyncScheduler {
  private timer: unknown = null;
  private running = false;
  private again = false;
  private attempt = 0;
  private stopped = false;

  constructor(
    private readonly deps: {
      run: () => Promise<SyncResult>;
      intervalMs: number;
      timers: Timers;
      logger: Logger;
      random?: () => number;
    },
  ) {}

  start(): void {
    this.schedule(1000 + (this.deps.random ?? Math.random)() * 2000);
  }

  trigger(): void {
    if (this.stopped) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = this.deps.timers.setTimeout(() => {
      this.timer = null;
      void this.runNow();
    }, ms);
  }

  private async runNow(): Promise<void> {
    const { logger, intervalMs } = this.deps;
    const random = this.deps.random ?? Math.random;
    this.running = true;
    let next = intervalMs * (0.9 + 0.2 * random());
    try {
      const r = await this.deps.run();
      this.attempt = 0;
      logger.info(
        { mode: r.mode, revision: r.revision, users: r.users, credentials: r.credentials, rowsWritten: r.rowsWritten, ms: Math.round(r.durationMs) },
        'sync done',
      );
    } catch (err) {
      if (err instanceof MassRemovalError) {
        logger.error({ removed: err.removed, of: err.current }, `sync refused: ${err.message}`);
      } else if (err instanceof ServiceError && err.authRefused) {
        logger.error({ endpoint: err.endpoint, status: err.status }, `sync failed: the API key was refused; next try in one interval`);
      } else {
        next = backoffDelay(this.attempt++, { initialMs: 5000, maxMs: intervalMs, jitter: 0.3 }, random);
        logger.warn({ err: { message: (err as Error).message }, retryInMs: Math.round(next) }, 'sync failed; the cache is unchanged');
      }
    } finally {
      this.running = false;
    }
    if (this.again) {
      this.again = false;
      next = 0;
    }
    this.schedule(next);
  }
}
