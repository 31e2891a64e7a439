import type { Logger } from 'pino';
import type { Clock } from '../util/clock.js';

/**
 * Why the service refused or shed a request for load (issue 28 items 2 and 6):
 * - `directory_answers`: more full GET /directory answers in flight than `server.maxDirectoryAnswers`;
 * - `directory_builds`: more directory bodies being built or compressed than `server.maxDirectoryBuilds`;
 * - `connections`: a connection past `server.maxConnections`, closed as it arrived (httpLimits.ts logs those);
 * - `stopping`: a request that arrived while the service stops;
 * - `database`: a request that needed the database while it could not be reached (PostgreSQL stopped).
 */
export const REFUSAL_REASONS = ['directory_answers', 'directory_builds', 'connections', 'stopping', 'database'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** At most one log line per reason this often; the line says how many were refused since the one before. */
const LOG_EVERY_MS = 60_000;

/**
 * The count of every refused or shed request since the service started, by reason (GET /status), its log lines
 * (warn, at most one a minute per reason, naming the path and never a query string, header or body: they may
 * carry an API key), and the Retry-After the client is given: `retryAfterSeconds` to twice that, drawn at random
 * so that doors refused together do not come back together.
 */
export class Refusals {
  private readonly totals = Object.fromEntries(REFUSAL_REASONS.map((r) => [r, 0])) as Record<RefusalReason, number>;
  private readonly unlogged = Object.fromEntries(REFUSAL_REASONS.map((r) => [r, 0])) as Record<RefusalReason, number>;
  private readonly lastLog = new Map<RefusalReason, number>();

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly retryAfterSeconds: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** Counts a refusal that is logged elsewhere (the connection limit's own line). */
  count(reason: RefusalReason): void {
    this.totals[reason]++;
  }

  /**
   * Counts and logs (rate-limited) a request refused for `reason` on `path` (without its query string), with
   * `message` (the one the client is sent); answers the Retry-After in seconds.
   */
  refuse(reason: RefusalReason, path: string, message: string): number {
    this.totals[reason]++;
    this.unlogged[reason]++;
    const now = this.clock.monoNow();
    const last = this.lastLog.get(reason);
    if (last === undefined || now - last >= LOG_EVERY_MS) {
      this.logger.warn(
        { reason, path, refused: this.unlogged[reason], total: this.totals[reason] },
        `requests refused (503 with Retry-After): ${message}${last === undefined ? '' : ' (one line a minute at most)'}`,
      );
      this.unlogged[reason] = 0;
      this.lastLog.set(reason, now);
    }
    return this.retryAfterSeconds + Math.floor(this.random() * this.retryAfterSeconds);
  }

  /** Every reason's count since the service started. */
  counts(): Record<RefusalReason, number> {
    return { ...this.totals };
  }
}
