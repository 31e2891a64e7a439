import type { Logger } from 'pino';
import { fullJitterDelay } from '../../util/backoff.js';
import { systemTimers, type Clock, type Timers } from '../../util/clock.js';
import type { WebhookServiceOptions } from '../options.js';
import type { Leadership } from '../sql/leadership.js';
import type { SqlDb } from '../sql/sqlDb.js';
import { AddressAllowList, resolveReceiver, systemLookup, type HostLookup } from './webhookAddress.js';
import { postDelivery, type SendOutcome } from './webhookSender.js';
import { deliveryHeaders } from './webhookSignature.js';
import { WebhookStore, type DueDelivery, type Webhook } from './webhookStore.js';

/** server.webhooks's defaults, for a caller of startService that leaves it out. */
export const DEFAULT_WEBHOOK_OPTIONS: WebhookServiceOptions = { allowAddresses: [], allowHttp: false, retryHours: 24, timeoutSeconds: 10 };

/** How often the leading process looks for new events and deliveries due. */
const POLL_MS = 1000;
/** Events made deliveries per transaction. */
const FAN_OUT_BATCH = 500;
/** Requests in flight per subscription: a slow receiver holds at most these, and only its own. */
const IN_FLIGHT_PER_WEBHOOK = 4;
/** The backoff between tries: full jitter under 30 s, doubling, at most 1 h (docs/audit.md). */
const BACKOFF = { initialMs: 30_000, maxMs: 3_600_000 };
/** A claimed delivery is due again this long after its request's timeout (its process died while it sent). */
const CLAIM_MARGIN_MS = 5_000;

export interface WebhookDispatcherDeps {
  db: SqlDb;
  /** Only the process holding it delivers (one process on SQLite: always). */
  leadership: Leadership;
  /** Wall time for the rows; monotonic for an attempt's duration. */
  clock: Clock;
  /** The poll's timer (tests: a manual one). */
  timers?: Timers;
  logger: Logger;
  options: WebhookServiceOptions;
  /** [0, 1): the backoff's jitter (tests: a fixed one). */
  random?: () => number;
  /** How a receiver's host is resolved (tests: a fixed answer). */
  lookup?: HostLookup;
}

/**
 * The webhooks' deliveries (docs/audit.md, "Webhooks"). In the process that leads (storage.leadership), every
 * second: each new event stored becomes a pending delivery per subscription that takes it (webhook_deliveries, in
 * the transaction that moves the cursor), and each subscription's due deliveries are sent, at most
 * IN_FLIGHT_PER_WEBHOOK at a time per subscription and never awaited by the loop, so a slow or dead receiver holds
 * up only its own queue. A delivery is a row before it is sent, claimed for the request's time while it is, and
 * changed only by its outcome: a process that dies mid-send leaves it due again (at least once).
 */
export class WebhookDispatcher {
  private readonly store: WebhookStore;
  private readonly allow: AddressAllowList;
  private readonly timers: Timers;
  private readonly random: () => number;
  private readonly lookup: HostLookup;
  /** Per subscription, the deliveries this process is sending. */
  private readonly inFlight = new Map<number, Set<number>>();
  private readonly sends = new Set<Promise<void>>();
  private readonly aborts = new Set<AbortController>();
  private polling: Promise<void> | null = null;
  private timer: unknown = null;
  private started = false;
  private closed = false;

  constructor(private readonly deps: WebhookDispatcherDeps) {
    this.store = new WebhookStore(deps.db);
    this.allow = new AddressAllowList(deps.options.allowAddresses);
    this.timers = deps.timers ?? systemTimers;
    this.random = deps.random ?? Math.random;
    this.lookup = deps.lookup ?? systemLookup;
  }

  /** Polls every second while this process leads. */
  start(): void {
    this.started = true;
    this.deps.leadership.onChange((leading) => {
      if (leading) this.schedule(0);
    });
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.closed || !this.started) return;
    if (this.timer !== null) this.timers.clearTimeout(this.timer);
    this.timer = this.timers.setTimeout(() => {
      this.timer = null;
      void this.poll().finally(() => this.schedule(POLL_MS));
    }, ms);
  }

  /** One round: new events to deliveries, then each subscription's due ones started. Not awaiting any send. */
  poll(): Promise<void> {
    this.polling ??= this.round().finally(() => {
      this.polling = null;
    });
    return this.polling;
  }

  private async round(): Promise<void> {
    if (this.closed || !this.deps.leadership.leading) return;
    try {
      while ((await this.store.fanOut(this.deps.clock.wallNow(), FAN_OUT_BATCH)) === FAN_OUT_BATCH && !this.closed);
      for (const hook of await this.store.list()) if (hook.enabled) await this.fill(hook);
    } catch (err) {
      this.deps.logger.warn({ err: { message: (err as Error).message } }, 'webhook deliveries: cannot read or write the database; trying again in 1 s');
    }
  }

  /** Starts as many of `hook`'s due deliveries as it has free slots. */
  private async fill(hook: Webhook): Promise<void> {
    const flying = this.inFlight.get(hook.webhookId) ?? new Set<number>();
    this.inFlight.set(hook.webhookId, flying);
    const free = IN_FLIGHT_PER_WEBHOOK - flying.size;
    if (free <= 0 || this.closed) return;
    const due = await this.store.due(hook.webhookId, this.deps.clock.wallNow(), free, [...flying]);
    for (const delivery of due) {
      if (flying.size >= IN_FLIGHT_PER_WEBHOOK || flying.has(delivery.deliveryId)) continue;
      flying.add(delivery.deliveryId);
      const send = this.send(hook, delivery)
        .catch((err: unknown) =>
          this.deps.logger.warn(
            { err: { message: (err as Error).message }, webhook: hook.webhookId, delivery: delivery.deliveryId },
            'webhook delivery not recorded',
          ),
        )
        .finally(() => {
          flying.delete(delivery.deliveryId);
          this.sends.delete(send);
          // Its queue goes on at once: a backlog drains at the receiver's pace, not the poll's.
          if (!this.closed && this.deps.leadership.leading) void this.refill(hook.webhookId);
        });
      this.sends.add(send);
    }
  }

  private async refill(webhookId: number): Promise<void> {
    try {
      const hook = await this.store.get(webhookId);
      if (hook?.enabled) await this.fill(hook);
    } catch {
      // The next poll tries again.
    }
  }

  private async send(hook: Webhook, delivery: DueDelivery): Promise<void> {
    const { clock, options } = this.deps;
    const timeoutMs = options.timeoutSeconds * 1000;
    const startedAt = clock.wallNow();
    if (!(await this.store.claim(delivery, startedAt + timeoutMs + CLAIM_MARGIN_MS))) return;
    const outcome = await this.attempt(hook, delivery, timeoutMs);
    if (this.closed) return; // stopped mid-send: due again once the claim runs out
    const now = clock.wallNow();
    const delivered = outcome.error === null;
    const expired = now - delivery.pendingSince >= options.retryHours * 3_600_000;
    const state = delivered ? 'delivered' : expired ? 'failed' : 'pending';
    const nextAt = state === 'pending' ? now + fullJitterDelay(delivery.attempts, BACKOFF, this.random) : now;
    await this.store.recordAttempt(
      delivery,
      { at: startedAt, status: outcome.status, error: outcome.error, durationMs: outcome.durationMs },
      { state, nextAt },
    );
    if (state === 'failed') {
      this.deps.logger.warn(
        { webhook: hook.webhookId, delivery: delivery.deliveryId, attempts: delivery.attempts + 1, error: outcome.error },
        `webhook delivery failed: not delivered within ${options.retryHours} h`,
      );
    }
  }

  /** The POST, to the address the SSRF guard took; a refused address is the attempt's error. */
  private async attempt(hook: Webhook, delivery: DueDelivery, timeoutMs: number): Promise<SendOutcome> {
    const { clock } = this.deps;
    const url = new URL(hook.url);
    const started = clock.monoNow();
    const target = await resolveReceiver(url.hostname, this.allow, this.lookup);
    if ('refused' in target) return { status: null, error: target.refused, durationMs: Math.round(clock.monoNow() - started) };
    const body = JSON.stringify({ delivery: delivery.deliveryId, agent: delivery.agent, event: JSON.parse(delivery.body) as unknown });
    const headers = deliveryHeaders(delivery.deliveryId, hook.secret, Math.floor(clock.wallNow() / 1000), body);
    const abort = new AbortController();
    this.aborts.add(abort);
    try {
      return await postDelivery(url, target, headers, body, timeoutMs, () => clock.monoNow(), abort.signal);
    } finally {
      this.aborts.delete(abort);
    }
  }

  /** Resolves once no delivery is being sent (tests: after a poll, its sends' outcomes recorded). */
  async settled(): Promise<void> {
    while (this.sends.size > 0) await Promise.allSettled([...this.sends]);
  }

  /** Stops polling and drops the requests in flight unrecorded: each is due again when its claim runs out. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) this.timers.clearTimeout(this.timer);
    for (const abort of this.aborts) abort.abort();
    await this.polling;
    await Promise.allSettled([...this.sends]);
  }
}
