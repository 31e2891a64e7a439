import type { Logger } from 'pino';
import { olderThan, orderIssuedAt, type HeldIssuedAt, type Ordered } from '../protocol/issuedAt.js';
import type { NewEvent } from '../store/eventLog.js';
import type { Clock } from '../util/clock.js';

/** Where a time from the network came from, for clock_skew (logged once per source, not once per message). */
export type TimeSource = 'lockdown' | 'holidays' | 'guest_links' | 'guest_link_index';

/**
 * The agent's rules for the issued_at of signed retained messages (protocol/issuedAt.ts) against its own clock:
 * ordering with times from the future clamped to now + mqtt.futureSkewSeconds, the maximum ages, and the
 * clock_skew report: one warn log and one audit event per source while its messages keep coming from the
 * future, again only after one came in time.
 */
export class RetainedClock {
  private readonly ahead = new Set<TimeSource>();

  constructor(
    private readonly deps: {
      clock: Clock;
      futureSkewSeconds: number;
      record: (event: NewEvent) => void;
      logger: Logger;
    },
  ) {}

  nowSeconds(): number {
    return Math.floor(this.deps.clock.wallNow() / 1000);
  }

  /** How `issuedAt` orders against what is held; reports a clamped one. */
  order(source: TimeSource, held: HeldIssuedAt, issuedAt: number): Ordered {
    const now = this.nowSeconds();
    const ordered = orderIssuedAt(held, issuedAt, now, this.deps.futureSkewSeconds);
    this.observe(source, issuedAt, now);
    return ordered;
  }

  /** Whether a message signed at `issuedAt` is older than `maxAgeSeconds`. */
  tooOld(issuedAt: number, maxAgeSeconds: number): boolean {
    return olderThan(issuedAt, this.nowSeconds(), maxAgeSeconds);
  }

  /** `issuedAt` clamped to now + skew: what a signature's age is counted from. */
  clamp(source: TimeSource, issuedAt: number): number {
    const now = this.nowSeconds();
    this.observe(source, issuedAt, now);
    return Math.min(issuedAt, now + this.deps.futureSkewSeconds);
  }

  private observe(source: TimeSource, issuedAt: number, now: number): void {
    const aheadBy = issuedAt - now;
    if (aheadBy <= this.deps.futureSkewSeconds) {
      this.ahead.delete(source);
      return;
    }
    if (this.ahead.has(source)) return;
    this.ahead.add(source);
    const { logger, record, clock, futureSkewSeconds } = this.deps;
    logger.warn(
      { source, aheadSeconds: aheadBy, skewSeconds: futureSkewSeconds },
      "clock skew: a signed message is dated ahead of this agent by more than mqtt.futureSkewSeconds; it counts as dated now + the skew (is the sender's clock right?)",
    );
    try {
      record({ type: 'clock_skew', door: null, at: clock.wallNow(), data: { source, ahead_seconds: aheadBy, skew_seconds: futureSkewSeconds } });
    } catch (err) {
      logger.error({ err }, 'cannot record clock_skew');
    }
  }
}
