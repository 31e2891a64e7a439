import type { Logger } from 'pino';
import type { Timers } from '../util/clock.js';
import { firstSyncDelay, intervalDelay, retryDelay } from '../util/pollDelays.js';
import { FleetError } from './fleetClient.js';

/**
 * When the agent asks the service's fleet routes (docs/fleet.md): as the sync's schedule, with the sync's own
 * delays (sync/syncDelays.ts). The first time a random delay after start, up to one interval (full jitter: agents
 * started together by a power cut do not ask together); then every `fleet.pollSeconds` ±10 %; after a failure,
 * full-jitter backoff capped at the interval; a 503 or 429 with Retry-After is not tried again before it (capped
 * at the interval too); a refused key waits a whole interval.
 */
export class FleetSchedule {
  private timer: unknown = null;
  private attempt = 0;
  private stopped = false;
  private running: Promise<void> | null = null;

  constructor(
    private readonly deps: {
      /** One exchange with the service; rejects when it failed. */
      run: () => Promise<void>;
      intervalMs: number;
      timers: Timers;
      logger: Logger;
      random?: () => number;
    },
  ) {}

  private get random(): () => number {
    return this.deps.random ?? Math.random;
  }

  start(): void {
    this.schedule(firstSyncDelay(this.deps.intervalMs, this.random));
  }

  /** No further exchange; resolves once the one under way (if any) has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.deps.timers.setTimeout(() => {
      this.timer = null;
      this.running = this.runNow().finally(() => {
        this.running = null;
      });
    }, ms);
  }

  private async runNow(): Promise<void> {
    const { logger, intervalMs } = this.deps;
    let next = intervalDelay(intervalMs, this.random);
    try {
      await this.deps.run();
      this.attempt = 0;
    } catch (err) {
      if (this.stopped) return;
      if (err instanceof FleetError && (err.status === 401 || err.status === 403)) {
        logger.error({ status: err.status }, `fleet: ${err.message}; next try in one interval`);
      } else {
        const retryAfterMs = err instanceof FleetError ? err.retryAfterMs : null;
        next = retryDelay(this.attempt++, retryAfterMs, intervalMs, this.random);
        logger.warn({ err: { message: (err as Error).message }, retryInMs: next }, 'fleet: cannot reach the service; the configuration applied is kept');
      }
    }
    this.schedule(next);
  }
}
