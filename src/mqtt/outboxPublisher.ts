import type { Logger } from 'pino';
import type { EventLog, WireEvent } from '../store/eventLog.js';
import { backoffDelay, type BackoffOptions } from '../util/backoff.js';
import { systemTimers, type Clock, type Timers } from '../util/clock.js';
import { refusalCode } from './brokerRefusals.js';

const BATCH = 500;
const WINDOW = 100;
/** Refused events are tried again after 2 s, doubling up to a minute (one publish per refused topic each time), until the broker takes them. */
const REFUSED_RETRY: BackoffOptions = { initialMs: 2000, maxMs: 60_000, jitter: 0.2 };

/**
 * Drains the SQLite event outbox to MQTT in sequence order, QoS 1; an event is marked published only after its
 * PUBACK. Runs while connected; after a broker outage or a restart it starts again from the oldest unpublished
 * event, so a QoS 1 duplicate can occur and carries the same `id`. An event the broker refuses (PUBACK reason
 * code >= 0x80: its ACL, a quota) is NOT marked: it stays in the outbox and is tried again with backoff, while
 * the events of the other topics (doors) go on; within a pass, a topic refused once is not tried again.
 */
export class OutboxPublisher {
  private running = false;
  /** Loops waiting for new events; each waits on its own resolver, so a restart never strands one. */
  private readonly waiters = new Set<() => void>();
  private generation = 0;
  private retryTimer: unknown = null;
  private retryAttempt = 0;
  private retryDue = false;
  /** Events behind the pass's cursor were made unpublished again: the next batch starts from the oldest. */
  private rewindDue = false;

  constructor(
    private readonly events: EventLog,
    /** Resolves true on PUBACK, false (or rejects with a reason code >= 0x80) when refused; rejects when the connection failed. */
    // biome-ignore lint/suspicious/noConfusingVoidType: a publish resolving with nothing (Promise<void>) is an ack; `undefined` would refuse such functions
    private readonly publish: (event: WireEvent) => Promise<boolean | void>,
    private readonly deps: { logger: Logger; clock: Clock; timers?: Timers; random?: () => number },
  ) {}

  /** New events were appended. */
  kick(): void {
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiting) wake();
  }

  /** Events older than the ones sent were made unpublished again (the service asked for them): they go out next. */
  rewind(): void {
    this.rewindDue = true;
    this.kick();
  }

  /** Starts (or restarts after a reconnect) draining from the oldest unpublished event. */
  start(): void {
    this.generation++;
    this.running = true;
    this.retryAttempt = 0;
    this.clearRetry();
    this.kick();
    void this.loop(this.generation);
  }

  stop(): void {
    this.running = false;
    this.generation++;
    this.clearRetry();
    this.kick();
  }

  private clearRetry(): void {
    const timers = this.deps.timers ?? systemTimers;
    if (this.retryTimer !== null) timers.clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.retryDue = false;
  }

  /** Some events were refused: the whole outbox is looked at again later (the refused ones are its oldest). */
  private scheduleRetry(): void {
    if (this.retryTimer !== null) return;
    const timers = this.deps.timers ?? systemTimers;
    const delay = backoffDelay(this.retryAttempt++, REFUSED_RETRY, this.deps.random);
    this.retryTimer = timers.setTimeout(() => {
      this.retryTimer = null;
      this.retryDue = true;
      this.kick();
    }, delay);
    (this.retryTimer as { unref?: () => void }).unref?.();
  }

  private async loop(generation: number): Promise<void> {
    let after = 0;
    /** Topics refused in this pass (one pass: from the oldest unpublished event to the newest). */
    let refusedTopics = new Set<string>();
    const live = () => this.running && generation === this.generation;
    while (live()) {
      if (this.retryDue) {
        // A new pass from the oldest unpublished event: each refused topic is tried once more.
        this.retryDue = false;
        after = 0;
        refusedTopics = new Set();
      }
      if (this.rewindDue) {
        this.rewindDue = false;
        after = 0;
      }
      const batch = this.events.unpublished(after, BATCH);
      if (batch.length === 0) {
        if (refusedTopics.size === 0) this.retryAttempt = 0; // a pass without a refusal: the next one starts short
        await new Promise<void>((resolve) => this.waiters.add(resolve));
        continue;
      }
      const acked: number[] = [];
      const inFlight: Array<Promise<void>> = [];
      let failed = false;
      let refused = false;
      for (const event of batch) {
        if (!live() || failed) break;
        after = event.seq;
        const topic = event.door ?? 'agent';
        if (refusedTopics.has(topic)) continue; // refused in this pass: kept for the next one
        inFlight.push(
          this.publish(event).then(
            (ok) => {
              if (ok === false) {
                refused = true;
                refusedTopics.add(topic);
              } else acked.push(event.seq);
            },
            (err: unknown) => {
              if (refusalCode(err) !== null) {
                refused = true;
                refusedTopics.add(topic);
                return;
              }
              if (!failed) this.deps.logger.warn({ err }, 'event publish interrupted; will resume after reconnect');
              failed = true;
            },
          ),
        );
        if (inFlight.length >= WINDOW) await inFlight.shift();
      }
      await Promise.all(inFlight);
      acked.sort((a, b) => a - b);
      try {
        this.events.markPublished(acked, this.deps.clock.wallNow());
      } catch (err) {
        this.deps.logger.error({ err }, 'cannot mark events published (they will be sent again)');
      }
      if (failed) return;
      if (refused) this.scheduleRetry();
    }
  }
}
