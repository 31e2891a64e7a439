import type { Logger } from 'pino';
import type { EventLog, WireEvent } from '../store/eventLog.js';
import type { Clock } from '../util/clock.js';

const BATCH = 500;
const WINDOW = 100;

/**
 * Drains the SQLite event outbox to MQTT in sequence order, QoS 1; an event is marked published only after its
 * PUBACK. Runs while connected; after a broker outage or a restart it starts again from the oldest unpublished
 * event, so a QoS 1 duplicate can occur and carries the same `id`.
 */
export class OutboxPublisher {
  private running = false;
  /** Loops waiting for new events; each waits on its own resolver, so a restart never strands one. */
  private readonly waiters = new Set<() => void>();
  private generation = 0;

  constructor(
    private readonly events: EventLog,
    private readonly publish: (event: WireEvent) => Promise<void>,
    private readonly deps: { logger: Logger; clock: Clock },
  ) {}

  /** New events were appended. */
  kick(): void {
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiting) wake();
  }

  /** Starts (or restarts after a reconnect) draining from the oldest unpublished event. */
  start(): void {
    this.generation++;
    this.running = true;
    this.kick();
    void this.loop(this.generation);
  }

  stop(): void {
    this.running = false;
    this.generation++;
    this.kick();
  }

  private async loop(generation: number): Promise<void> {
    let after = 0;
    const live = () => this.running && generation === this.generation;
    while (live()) {
      const batch = this.events.unpublished(after, BATCH);
      if (batch.length === 0) {
        await new Promise<void>((resolve) => this.waiters.add(resolve));
        continue;
      }
      const acked: number[] = [];
      const inFlight: Array<Promise<void>> = [];
      let failed = false;
      for (const event of batch) {
        if (!live() || failed) break;
        inFlight.push(
          this.publish(event).then(
            () => void acked.push(event.seq),
            (err: unknown) => {
              const reason = (err as { code?: unknown }).code;
              if (typeof reason === 'number' && reason >= 0x80) {
                // The broker refused this one (an ACL, a quota): resending will not help, and waiting for it
                // would stop every later event. It stays in the local audit log.
                this.deps.logger.error({ seq: event.seq, id: event.id, reasonCode: reason }, 'broker refused an event; it stays in the local audit log only');
                acked.push(event.seq);
                return;
              }
              if (!failed) this.deps.logger.warn({ err }, 'event publish interrupted; will resume after reconnect');
              failed = true;
            },
          ),
        );
        after = event.seq;
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
    }
  }
}
