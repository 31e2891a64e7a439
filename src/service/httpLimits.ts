import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { Clock } from '../util/clock.js';

/**
 * How long a client may take and how many may be connected at once (issue 32 item 7: with fastify's
 * `requestTimeout` 0 a client sending its body one byte a second held its connection for ever). The config keys
 * are `server.headersTimeoutSeconds`, `server.requestTimeoutSeconds`, `server.keepAliveTimeoutSeconds` and
 * `server.maxConnections` (docs/reference-service.md, "Slow clients and connections").
 */
export interface HttpLimits {
  /** The request line and headers must arrive within this (Node's headersTimeout); a silent connection is closed then. */
  headersTimeoutSeconds: number;
  /** The whole request, body included, must arrive within this; also the longest a connection may see no byte move either way. */
  requestTimeoutSeconds: number;
  /** An idle keep-alive connection (no request after an answer) is closed after this. */
  keepAliveTimeoutSeconds: number;
  /** Connections past this many are closed as they arrive. */
  maxConnections: number;
}

export const DEFAULT_HTTP_LIMITS: Readonly<HttpLimits> = {
  headersTimeoutSeconds: 30,
  requestTimeoutSeconds: 60,
  keepAliveTimeoutSeconds: 10,
  maxConnections: 1000,
};

/** File descriptors the service needs besides its connections (SQLite and its WAL, MQTT, stdio, the listener). */
const OTHER_FILES = 64;

/**
 * How often Node looks for connections past their header or request timeout: a fifth of the shorter timeout,
 * between 0.25 and 5 s, so a connection is closed at most 5 s after its timeout (Node's default, 30 s, is why
 * slow clients used to stay open for about 88 s).
 * @internal
 */
export function checkingIntervalMs(limits: HttpLimits): number {
  const shorter = Math.min(limits.headersTimeoutSeconds, limits.requestTimeoutSeconds) * 1000;
  return Math.max(250, Math.min(5000, Math.round(shorter / 5)));
}

/**
 * The fastify options that carry the limits (fastify sets requestTimeout, keepAliveTimeout and the socket timeout).
 * `longestWaitMs`: the longest a handler may keep a connection silent on purpose (POST /setlockstatus waiting for
 * the door's reply), added to the inactivity timeout so that wait is never cut.
 */
export function fastifyHttpOptions(limits: HttpLimits, longestWaitMs = 0) {
  return {
    requestTimeout: limits.requestTimeoutSeconds * 1000,
    keepAliveTimeout: limits.keepAliveTimeoutSeconds * 1000,
    // Socket inactivity: a client that stops reading its answer is closed too.
    connectionTimeout: limits.requestTimeoutSeconds * 1000 + longestWaitMs,
    http: {
      headersTimeout: limits.headersTimeoutSeconds * 1000,
      requestTimeout: limits.requestTimeoutSeconds * 1000,
      connectionsCheckingInterval: checkingIntervalMs(limits),
    },
  };
}

/** The soft limit on open files of this process (Linux /proc), or null when it cannot be read. */
function openFilesLimit(limitsFile = '/proc/self/limits'): number | null {
  try {
    const line = readFileSync(limitsFile, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    return soft === undefined || soft === 'unlimited' ? null : Number(soft);
  } catch {
    return null;
  }
}

/**
 * Sets the connection limit on the server; connections refused by it are logged at most once a minute (with how
 * many); a limit the process's open-files limit cannot hold is a warning at start.
 */
export function applyConnectionLimit(
  server: Server,
  limits: HttpLimits,
  logger: Logger,
  clock: Clock,
  /** Each connection refused (counted for GET /status). */
  onDrop: () => void = () => undefined,
  filesLimit = openFilesLimit(),
): void {
  server.maxConnections = limits.maxConnections;
  if (filesLimit !== null && filesLimit < limits.maxConnections + OTHER_FILES) {
    logger.warn(
      { maxConnections: limits.maxConnections, openFilesLimit: filesLimit },
      `server.maxConnections ${limits.maxConnections} needs about ${limits.maxConnections + OTHER_FILES} open files, but this process may open ${filesLimit}: raise LimitNOFILE (systemd) or lower server.maxConnections`,
    );
  }
  let dropped = 0;
  let lastLog = -Infinity;
  server.on('drop', () => {
    onDrop();
    dropped++;
    const now = clock.monoNow();
    if (now - lastLog < 60_000) return;
    logger.warn({ dropped, maxConnections: limits.maxConnections }, 'connections refused: server.maxConnections reached');
    lastLog = now;
    dropped = 0;
  });
}
