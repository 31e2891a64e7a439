import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DecisionMetrics } from '../door/credentialFlow.js';
import type { Door } from '../door/door.js';
import type { DoorOptions } from '../door/options.js';
import type { Component } from '../lifecycle.js';
import type { AgentStore } from '../store/agentStore.js';
import { lastRefreshAt } from '../sync/sync.js';
import type { Clock } from '../util/clock.js';
import { metricsRegistry } from '../util/metricsRegistry.js';
import { serveMetrics, type MetricsServer } from '../util/metricsServer.js';
import type { MetricsOptions } from './options.js';

/** From a fraction of a millisecond (the decision and the relay write) to tens of milliseconds (a busy board). */
const TAP_TO_RELAY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];
/** From a 304 (nothing new) to a full sync of a large directory. */
const SYNC_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** A door as its labels name it: its configured name (the loader gives one to every door), else its uuid. */
const doorLabel = (door: Pick<DoorOptions, 'uuid' | 'name'>) => door.name || door.uuid;

export interface AgentMetricsDeps {
  options: MetricsOptions;
  version: string;
  /** The agent's doors, read at each scrape (their readers). */
  doors: readonly Door[];
  store: AgentStore;
  /** Whether events go out over MQTT: only then is there an outbox to measure. */
  outbox: boolean;
  /** Whether the agent syncs from a service: only then are there syncs to time. */
  syncs: boolean;
  clock: Clock;
  logger: Logger;
}

/**
 * The agent's Prometheus metrics (docs/operations.md, "Metrics"), served on their own listener. The tap path only counts and
 * observes, with label sets built once per door and reason; what needs a query (the outbox, the cache's age) or
 * another component (the readers) is read when Prometheus scrapes. No label carries a card number, a PIN, a user
 * or an e-mail address: the labels are the door's name, granted or denied, and the decision's reason code.
 */
export class AgentMetrics implements Component {
  readonly name = 'metrics';
  private readonly registry: Registry;
  private readonly decisions: Counter<'door' | 'result' | 'reason'>;
  private readonly tapToRelay: Histogram<'door'>;
  private readonly syncDuration: Histogram | null;
  private server: MetricsServer | null = null;

  constructor(private readonly deps: AgentMetricsDeps) {
    const registry = metricsRegistry('door_agent_', deps.version);
    this.registry = registry;
    this.decisions = new Counter({
      name: 'door_agent_decisions_total',
      help: 'Access decisions at the readers, by door, result (granted, denied) and reason code (none for a grant)',
      labelNames: ['door', 'result', 'reason'] as const,
      registers: [registry],
    });
    this.tapToRelay = new Histogram({
      name: 'door_agent_tap_to_relay_seconds',
      help: "From a credential's arrival at the door to the relay write that unlocked it (grants only)",
      labelNames: ['door'] as const,
      buckets: TAP_TO_RELAY_BUCKETS,
      registers: [registry],
    });
    this.syncDuration = deps.syncs
      ? new Histogram({
          name: 'door_agent_sync_duration_seconds',
          help: 'Duration of each successful sync with the access-control service',
          buckets: SYNC_BUCKETS,
          registers: [registry],
        })
      : null;
    const { store, doors, clock } = deps;
    if (deps.outbox) {
      new Gauge({
        name: 'door_agent_outbox_events',
        help: 'Audit events the broker has not acknowledged yet (the MQTT outbox)',
        registers: [registry],
        collect() {
          this.set(store.events.unpublishedCount());
        },
      });
    }
    new Gauge({
      name: 'door_agent_cache_age_seconds',
      help: 'Seconds since the cache was last brought up to date (the last successful sync or import); absent before the first',
      registers: [registry],
      collect() {
        this.reset();
        // A damaged cache has no age: absent until it is rebuilt.
        const updated = store.cache.damage ? null : lastRefreshAt(store.db);
        if (updated !== null) this.set(Math.max(0, (clock.wallNow() - updated) / 1000));
      },
    });
    new Gauge({
      name: 'door_agent_reader_up',
      help: "1 when the door's reader is there (opened, online on its bus), 0 when not; absent for a door without a reader",
      labelNames: ['door'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const door of doors) {
          const connected = door.readerConnected();
          if (connected !== null) this.set({ door: doorLabel(door.options) }, connected ? 1 : 0);
        }
      },
    });
  }

  /**
   * One door's decisions: its label sets are built here, once (and once per reason on its first refusal), so a
   * tap only looks one up. Its grant count and tap to relay are there from the start, at 0.
   */
  forDoor(door: Pick<DoorOptions, 'uuid' | 'name'>): DecisionMetrics {
    const name = doorLabel(door);
    const granted = { door: name, result: 'granted', reason: 'none' };
    const byDoor = { door: name };
    const denied = new Map<string, { door: string; result: string; reason: string }>();
    this.decisions.inc(granted, 0);
    this.tapToRelay.zero(byDoor);
    return {
      granted: (seconds) => {
        this.decisions.inc(granted);
        this.tapToRelay.observe(byDoor, seconds);
      },
      denied: (reason) => {
        let labels = denied.get(reason);
        if (labels === undefined) {
          labels = { door: name, result: 'denied', reason };
          denied.set(reason, labels);
        }
        this.decisions.inc(labels);
      },
    };
  }

  /** A sync succeeded in `durationMs`. */
  synced(durationMs: number): void {
    this.syncDuration?.observe(durationMs / 1000);
  }

  async start(): Promise<void> {
    this.server = await serveMetrics(this.registry, this.deps.options.listen, 'metrics.listen', this.deps.logger);
  }

  /** HOST:PORT it listens on (the port the system chose, for port 0); null before the start. */
  get address(): string | null {
    return this.server?.address ?? null;
  }

  async stop(): Promise<void> {
    await this.server?.close();
    this.server = null;
  }
}
