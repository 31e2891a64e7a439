import type { Logger } from 'pino';
import { LINK_UP, attemptFailed, attemptSucceeded, lostDueAt, outageTick, type OutageEvent, type OutagePolicy, type OutageState } from '../core/linkOutage.js';
import type { Clock, Timers } from './clock.js';

/** The broker, the service (docs/mqtt.md, "Audit events of the agent's supervision"). */
export type LinkName = 'broker' | 'service';

/** The broker: disconnected (or not connecting) for more than 30 s; a reconnect within that is a blip. */
export const BROKER_OUTAGE: OutagePolicy = { graceMs: 30_000, minFailures: 1 };
/** The service: two failed syncs in a row and 30 s since the first began (the backoff's first retries come sooner). */
export const SERVICE_OUTAGE: OutagePolicy = { graceMs: 30_000, minFailures: 2 };

/** When an attempt began: a failed one dates the outage from its start (a sync may take seconds to fail). */
export interface LinkAttempt {
  wall: number;
  mono: number;
}

export interface LinkWatchDeps {
  link: LinkName;
  policy: OutagePolicy;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  /** Records link_lost / link_restored (an agent-level audit event: through the outbox, published once it can be). */
  record: (type: OutageEvent['type'], data: Record<string, unknown>) => void;
}

/**
 * One link's outages as audit events (core/linkOutage.ts): the connection or sync code reports each attempt that
 * failed or succeeded; link_lost comes once the outage has outlasted its grace (a timer for a time-only grace),
 * link_restored when it ends, with its start and length. One pair per outage, never one per retry.
 */
export class LinkWatch {
  private state: OutageState = LINK_UP;
  private timer: unknown = null;
  private everReached = false;

  constructor(private readonly deps: LinkWatchDeps) {}

  /** An attempt begins now (pass it to `failed`). */
  attempt(): LinkAttempt {
    return this.now();
  }

  /** An attempt failed: begun at `attempt` (default: now), noticed now. */
  failed(attempt?: LinkAttempt): void {
    const now = this.now();
    const since = attempt ?? now;
    // The outage dates from the attempt's start; the grace is judged now.
    const step = attemptFailed(this.state, since, this.deps.policy);
    this.apply(step.events.length > 0 ? step : outageTick(step.state, now, this.deps.policy));
  }

  succeeded(): void {
    this.everReached = true;
    this.apply(attemptSucceeded(this.state, this.now()));
  }

  stop(): void {
    this.clearTimer();
  }

  /** Whether an attempt has succeeded since this process started (an update's health: docs/fleet.md). */
  reached(): boolean {
    return this.everReached;
  }

  private now(): LinkAttempt {
    return { wall: this.deps.clock.wallNow(), mono: this.deps.clock.monoNow() };
  }

  private apply(step: { state: OutageState; events: OutageEvent[] }): void {
    this.state = step.state;
    for (const event of step.events) {
      const since = new Date(event.since).toISOString();
      if (event.type === 'link_lost') {
        this.deps.record('link_lost', { link: this.deps.link, since });
        this.deps.logger.warn({ link: this.deps.link, since }, `${this.deps.link} unreachable (link_lost)`);
      } else {
        this.deps.record('link_restored', { link: this.deps.link, since, seconds: event.seconds });
        this.deps.logger.info({ link: this.deps.link, since, seconds: event.seconds }, `${this.deps.link} reachable again (link_restored)`);
      }
    }
    this.clearTimer();
    const due = lostDueAt(this.state, this.deps.policy);
    if (due === null) return;
    this.timer = this.deps.timers.setTimeout(
      () => {
        this.timer = null;
        this.apply(outageTick(this.state, this.now(), this.deps.policy));
      },
      Math.max(0, due - this.deps.clock.monoNow()),
    );
    (this.timer as { unref?: () => void }).unref?.();
  }

  private clearTimer(): void {
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
  }
}
