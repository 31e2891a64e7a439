import type { Logger } from 'pino';
import type { Timers } from '../util/clock.js';

export interface PendingWritesOptions {
  timers: Timers;
  logger: Logger;
  /** How many writes may wait in memory; past it the newest are refused and counted (see `refused`). */
  maxPending?: number;
  /**
   * How each write is run: the daemon's commits state.db without waiting for the disk, and syncs it right after
   * off the event loop (store/walSync.ts). Default: the write as it is.
   */
  runWrite?: (write: () => void) => void;
}

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5000;
const DEFAULT_MAX_PENDING = 50_000;

/**
 * Writes the daemon must not lose and must not wait for: each is tried at once; when the database is busy
 * (another process holds its write lock), full, or failing, the write waits in memory, in order, and is retried
 * with backoff until it succeeds. Writes with the same key replace one another while waiting (the latest lock
 * state, the latest runtime status); an event has a key of its own. Nothing here ever blocks the event loop
 * for longer than one write attempt (the connection's busy timeout is short).
 */
export class PendingWrites {
  private readonly queue = new Map<string, () => void>();
  private timer: unknown = null;
  private failures = 0;
  private refusedCount = 0;
  private stopped = false;

  private readonly runWrite: (write: () => void) => void;

  constructor(private readonly options: PendingWritesOptions) {
    this.runWrite = options.runWrite ?? ((write) => write());
  }

  /** Runs `write` now, or after the writes already waiting. */
  run(key: string, write: () => void): void {
    if (this.queue.size === 0) {
      try {
        this.runWrite(write);
        return;
      } catch (err) {
        this.failed(err);
      }
    } else if (!this.queue.has(key) && this.queue.size >= (this.options.maxPending ?? DEFAULT_MAX_PENDING)) {
      this.refusedCount++;
      return;
    }
    this.queue.set(key, write);
    this.arm();
  }

  /** Writes waiting to be retried. */
  get pending(): number {
    return this.queue.size;
  }

  /** Writes refused because too many were waiting (memory is bounded too). */
  get refused(): number {
    return this.refusedCount;
  }

  /** Tries every waiting write now, in order; returns whether none is left. */
  flush(): boolean {
    for (const [key, write] of this.queue) {
      try {
        this.runWrite(write);
      } catch (err) {
        this.failed(err);
        this.arm();
        return false;
      }
      this.queue.delete(key);
    }
    if (this.failures > 0) this.options.logger.info({ after: this.failures }, 'pending writes saved');
    this.failures = 0;
    return true;
  }

  /** Stops retrying (what is still waiting is reported); a last flush is the caller's choice. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.options.timers.clearTimeout(this.timer);
    this.timer = null;
    if (this.queue.size > 0) this.options.logger.error({ pending: this.queue.size }, 'writes still pending at stop: they are lost');
  }

  private failed(err: unknown): void {
    this.failures++;
    // One line at the first failure and then at powers of two: a full disk must not also flood the journal.
    if ((this.failures & (this.failures - 1)) === 0) {
      this.options.logger.error({ err, failures: this.failures, pending: this.queue.size + 1 }, 'cannot write to the database: kept in memory and retried');
    }
  }

  private arm(): void {
    if (this.timer !== null || this.stopped) return;
    const delay = Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, this.failures - 1), MAX_RETRY_MS);
    this.timer = this.options.timers.setTimeout(() => {
      this.timer = null;
      this.flush();
    }, delay);
  }
}
