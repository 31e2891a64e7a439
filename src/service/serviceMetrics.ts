import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { metricsRegistry, statusClass } from '../util/metricsRegistry.js';

/** From a cached answer (a millisecond) to a large directory built and sent (seconds). */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** A request no route matched: its path is not a label (it could be anything a client sends). */
const UNMATCHED = 'unmatched';

/**
 * The reference service's Prometheus metrics (docs/reference-service.md, "Metrics"): requests and their durations
 * per route pattern (never the URL: no query, key or id in a label) and status class, the directory revision,
 * the process. Served by root.ts on a listener of its own.
 */
export class ServiceMetrics {
  readonly registry: Registry;
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly durations: Histogram<'method' | 'route'>;
  private revision: (() => Promise<number>) | null = null;
  private fingerprinted: (() => number) | null = null;

  constructor(version: string) {
    const registry = metricsRegistry('door_agent_service_', version);
    this.registry = registry;
    this.requests = new Counter({
      name: 'door_agent_service_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status class (2xx, 4xx, ...)',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    });
    this.durations = new Histogram({
      name: 'door_agent_service_http_request_duration_seconds',
      help: 'From the request to its answer sent, by method and route pattern',
      labelNames: ['method', 'route'] as const,
      buckets: DURATION_BUCKETS,
      registers: [registry],
    });
    const metrics = this;
    new Gauge({
      name: 'door_agent_service_directory_revision',
      help: 'The directory revision the service holds (the agents sync up to it)',
      registers: [registry],
      // Read from the database at each scrape (several processes share it): prom-client awaits it.
      async collect() {
        if (metrics.revision) this.set(await metrics.revision());
      },
    });
    let counted = 0;
    new Counter({
      name: 'door_agent_service_directory_users_fingerprinted_total',
      help: 'Users read and fingerprinted to bring the directory revision up to date: the work its changes cost',
      registers: [registry],
      collect() {
        const total = metrics.fingerprinted?.() ?? counted;
        if (total > counted) this.inc(total - counted);
        counted = total;
      },
    });
  }

  /**
   * Counts and times every answer of `app` (those refused before a route, too); `revision` and `fingerprinted` (the
   * directory's running count) are read at each scrape.
   */
  instrument(app: FastifyInstance, revision: () => Promise<number>, fingerprinted?: () => number): void {
    this.revision = revision;
    this.fingerprinted = fingerprinted ?? null;
    app.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url ?? UNMATCHED;
      this.requests.inc({ method: request.method, route, status: statusClass(reply.statusCode) });
      this.durations.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    });
  }
}
