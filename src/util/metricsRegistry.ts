import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * A registry of one's own (never prom-client's global one: tests run several agents and services in one
 * process), with the process and event-loop metrics prom-client collects (`process_*`, `nodejs_*`) and
 * `<prefix>build_info{version,node} 1`.
 */
export function metricsRegistry(prefix: string, version: string): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: `${prefix}build_info`,
    help: 'The version running, and the version of Node.js it runs on (always 1)',
    labelNames: ['version', 'node'] as const,
    registers: [registry],
  }).set({ version, node: process.version }, 1);
  return registry;
}

/** Status code classes, the only status label: 2xx, 3xx, 4xx, 5xx. */
export function statusClass(statusCode: number): string {
  return `${Math.floor(statusCode / 100)}xx`;
}
