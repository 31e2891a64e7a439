import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { cannotListen, splitListen } from './listenAddress.js';

/** A scrape is small and quick: a client that takes longer is cut off, and a few connections are plenty. */
const TIMEOUT_MS = 10_000;
const MAX_CONNECTIONS = 16;

export interface MetricsServer {
  /** HOST:PORT it listens on (the port the system chose, for port 0). */
  readonly address: string;
  close(): Promise<void>;
}

/**
 * Serves `registry` on `listen` (HOST:PORT) with node:http: `GET /metrics` answers the Prometheus text format,
 * anything else 404. An address it cannot take is a DoorAgentError naming it and `key` (exit 1).
 */
export async function serveMetrics(registry: Registry, listen: string, key: string, logger: Logger): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || (request.url ?? '').split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: the metrics are at GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err: unknown) => {
        logger.error({ err }, 'cannot collect the metrics');
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('cannot collect the metrics\n');
      },
    );
  });
  server.headersTimeout = TIMEOUT_MS;
  server.requestTimeout = TIMEOUT_MS;
  server.maxConnections = MAX_CONNECTIONS;
  const { host, port } = splitListen(listen);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    throw cannotListen(err, listen, key);
  }
  server.on('error', (err) => logger.error({ err }, 'metrics listener failed'));
  const bound = server.address() as AddressInfo;
  const address = `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
  logger.info({ listen: address }, `metrics on http://${address}/metrics`);
  return {
    address,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // a scraper's keep-alive connection must not hold the stop
      }),
  };
}
