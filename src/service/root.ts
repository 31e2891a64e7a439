import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { join } from 'node:path';
import { readCommandSecret, type Env } from '../util/secretFiles.js';
import type { MqttOptions } from '../protocol/options.js';
import type { Clock } from '../util/clock.js';
import { cannotListen, splitListen } from '../util/listenAddress.js';
import { EXIT_INVALID_CONFIG, InputError } from '../util/errors.js';
import { missingPublicUrl, publicUrlWarnings } from '../config/publicUrl.js';
import { serveMetrics, type MetricsServer } from '../util/metricsServer.js';
import { VERSION } from '../version.js';
import { definedOnly, withProps } from '../core/objects.js';
import { ServiceMqtt } from './doorsMqtt.js';
import { readHolidaysFile } from './holidaysFile.js';
import { Mailer } from './mailer.js';
import type { ServerOptions } from './options.js';
import { PublishQueue } from './publishQueue.js';
import { openStorage } from './sql/openStorage.js';
import { StatePublisher } from './statePublisher.js';
import { buildService } from './server.js';
import type { SqlDb } from './sql/sqlDb.js';
import { SiteFeed } from './console/siteFeed.js';
import { AgentMqttLogins } from './fleet/agentMqtt.js';
import type { FleetDeps } from './fleet/fleetDeps.js';
import { loadFleetKeys } from './fleet/identityKey.js';
import { documentProblems } from '../config/fleetDocument.js';
import { WebhookDispatcher, DEFAULT_WEBHOOK_OPTIONS } from './audit/webhookDispatcher.js';
import { SyslogExport } from './audit/syslogExport.js';
import { EventKeeping } from './audit/eventKeeping.js';
import { systemTimers } from '../util/clock.js';

export interface RunningService {
  /** The base URL it answers on (http://host:port). */
  url: string;
  /** Where GET /metrics answers (http://host:port/metrics); null without server.metrics. */
  metricsUrl: string | null;
  db: SqlDb;
  stop(): Promise<void>;
}

/**
 * The reference service's composition root: its database, the doors over MQTT (when configured), the mailer
 * and the HTTP server, listening. Used by `door-agent service` and by the demo. Failing to listen is an
 * operator's problem (exit 1), named with the address, the reason and what to do; a bad server.holidaysFile is a
 * configuration error (exit 78), found before anything is opened.
 */
export async function startService(
  options: { server: ServerOptions; mqtt?: MqttOptions },
  deps: {
    clock: Clock;
    logger: Logger;
    env: Env;
    /**
     * Each HTTP request as it arrives, whatever its answer (its path without the query, which may carry api_key),
     * with its response (the fleet bench times the answers as the service sends them).
     */
    onRequest?: (method: string, path: string, response: ServerResponse) => void;
  },
): Promise<RunningService> {
  const { server } = options;
  // What the loader refuses too, for a caller that builds the options itself: mailed links need server.publicUrl.
  const noPublicUrl = missingPublicUrl(server);
  if (noPublicUrl !== null) throw new InputError('the service cannot start', [{ path: 'server.publicUrl', message: noPublicUrl }], EXIT_INVALID_CONFIG);
  // Read once, at start: a change to the file takes a restart of the service (as any configuration change does).
  const holidays = server.holidaysFile === undefined ? null : readHolidaysFile(server.holidaysFile);
  // A short command secret is a configuration error (exit 78), found before anything is opened.
  if (options.mqtt) readCommandSecret(options.mqtt.commandSecretFile);
  // So are the fleet's key files (missing, readable by others, not Ed25519).
  const fleetKeys = server.fleet ? loadFleetKeys(server.fleet) : null;
  // PostgreSQL when server.database says so (several processes may share it), else SQLite's file in dataDir.
  const storage = await openStorage(server, deps.env, deps.logger);
  const { db } = storage;
  const mqttLogger = deps.logger.child({ component: 'mqtt' });
  const doors = options.mqtt ? new ServiceMqtt(options.mqtt, deps.env, mqttLogger) : undefined;
  // What the doors are owed, written with each change and sent by the one process holding the publisher lock.
  const publishQueue = doors ? new PublishQueue(db, storage.feed) : undefined;
  const publisher =
    doors && publishQueue
      ? new StatePublisher({
          db,
          queue: publishQueue,
          feed: storage.feed,
          leadership: storage.leadership,
          mqtt: doors,
          clock: deps.clock,
          logger: mqttLogger,
          holidays,
        })
      : undefined;
  // The agents' broker logins, over a connection of the service's own mqtt settings (server.fleet.agentMqtt).
  const agentMqtt = server.fleet?.agentMqtt;
  const logins = agentMqtt && options.mqtt ? new AgentMqttLogins(options.mqtt, agentMqtt.role, deps.env, deps.logger.child({ component: 'fleet' })) : null;
  const fleet: FleetDeps | undefined =
    server.fleet && fleetKeys && server.publicUrl !== undefined
      ? {
          keys: fleetKeys,
          enrolCodeHours: server.fleet.enrolCodeHours,
          maxBundleBytes: (server.fleet.maxBundleMegabytes ?? 200) * 1024 * 1024,
          publicUrl: server.publicUrl,
          // An agent's configuration version, checked as its board will check it (less the board's own files).
          checkConfig: (document: string, agentId: string) => documentProblems(document, agentId, server.publicUrl!),
          agentMqtt: agentMqtt && logins ? { url: agentMqtt.url, logins } : null,
        }
      : undefined;
  // Every event kept sent to the SIEM by the process holding the publisher lock (docs/audit.md, "SIEM export").
  const syslogExport = server.syslog
    ? new SyslogExport({
        db,
        leadership: storage.leadership,
        syslog: server.syslog,
        clock: deps.clock,
        timers: systemTimers,
        logger: deps.logger.child({ component: 'syslog' }),
      })
    : null;
  syslogExport?.start();
  // Every agent's audit events kept, each process on a broker session of its own (audit/eventKeeping.ts).
  const eventKeeping = new EventKeeping({
    db,
    leadership: storage.leadership,
    mqtt: options.mqtt,
    env: deps.env,
    audit: server.audit,
    clock: deps.clock,
    timers: systemTimers,
    logger: deps.logger.child({ component: 'audit' }),
  });
  // Webhook deliveries, sent by the process holding the publisher lock (audit/webhookDispatcher.ts).
  const webhooks = new WebhookDispatcher({
    db,
    leadership: storage.leadership,
    clock: deps.clock,
    logger: deps.logger.child({ component: 'webhooks' }),
    options: server.webhooks ?? DEFAULT_WEBHOOK_OPTIONS,
  });
  /** The publisher, the broker, then the database: each stops before what it uses. */
  const closeBackEnd = async () => {
    await webhooks.close();
    await syslogExport?.stop();
    await eventKeeping.close();
    await publisher?.close();
    await doors?.close();
    await logins?.close();
    await storage.close();
  };
  if (holidays !== null) {
    if (doors) deps.logger.info({ holidays: holidays.length, file: server.holidaysFile }, 'holidays read; published on P/holidays at every connect');
    else deps.logger.warn({ file: server.holidaysFile }, 'server.holidaysFile is set but there is no mqtt section: the holidays reach no door');
  }
  // The console's live view, from this same broker connection (console/siteFeed.ts).
  const feed = server.console?.enabled && options.mqtt ? new SiteFeed(options.mqtt.topicPrefix) : null;
  if (feed && doors) doors.watch(feed.filters(), (topic, payload) => feed.onMessage(topic, payload));
  const mailer = new Mailer(db, server.smtp, deps.logger.child({ component: 'mail' }));
  // Loaded only when configured: a service without metrics never loads prom-client.
  const metrics = server.metrics ? new (await import('./serviceMetrics.js')).ServiceMetrics(VERSION) : undefined;
  const app = buildService({
    db,
    // On PostgreSQL the history's mark is this process's own, in its dataDir (beside a SQLite file otherwise).
    ...(server.database ? { historyMarkFile: join(server.dataDir, 'service-history.json') } : {}),
    clock: deps.clock,
    logger: deps.logger,
    resources: server.resources,
    doors,
    ...(publishQueue ? { publishQueue } : {}),
    changeFeed: storage.feed,
    mailer,
    lockReplyTimeoutMs: server.lockReplyTimeoutSeconds * 1000,
    ...(server.pinLabels ? { pinLabels: server.pinLabels } : {}),
    ...(metrics ? { metrics } : {}),
    ...(fleet ? { fleet } : {}),
    ...(server.timezone === undefined ? {} : { timezone: server.timezone }),
    ...(server.audit ? { audit: server.audit } : {}),
    ...(server.webhooks ? { webhooks: server.webhooks } : {}),
    ...(server.identity ? { identity: server.identity } : {}),
    leadership: storage.leadership,
    storedEvents: eventKeeping.storedEvents,
    ...(server.console?.enabled
      ? {
          console: {
            // The site's zone (server.timezone) with the console's own settings: its times are shown in it.
            options: server.timezone === undefined ? server.console : withProps(server.console, { timezone: server.timezone }),
            feed,
            mailConfigured: server.smtp !== undefined,
            listen: server.listen,
            ...(server.publicUrl === undefined ? {} : { publicUrl: server.publicUrl }),
          },
        }
      : {}),
    http: definedOnly({
      headersTimeoutSeconds: server.headersTimeoutSeconds,
      requestTimeoutSeconds: server.requestTimeoutSeconds,
      keepAliveTimeoutSeconds: server.keepAliveTimeoutSeconds,
      maxConnections: server.maxConnections,
    }),
    loadLimits: definedOnly({
      maxDirectoryAnswers: server.maxDirectoryAnswers,
      maxDirectoryBuilds: server.maxDirectoryBuilds,
      retryAfterSeconds: server.retryAfterSeconds,
    }),
  });
  const { onRequest } = deps;
  // On the HTTP server itself, not a fastify hook: a hook after the key check would miss the requests it refuses.
  if (onRequest)
    app.server.on('request', (request: IncomingMessage, response: ServerResponse) =>
      onRequest(request.method ?? '', (request.url ?? '').split('?')[0]!, response),
    );
  void mailer.flush().catch((err: unknown) => deps.logger.warn({ err }, 'mail delivery failed'));
  const { host, port } = splitListen(server.listen);
  try {
    await app.listen({ host, port });
  } catch (err) {
    await closeBackEnd();
    throw cannotListen(err, server.listen, 'server.listen');
  }
  let metricsServer: MetricsServer | null = null;
  if (metrics && server.metrics) {
    try {
      metricsServer = await serveMetrics(metrics.registry, server.metrics.listen, 'server.metrics.listen', deps.logger.child({ component: 'metrics' }));
    } catch (err) {
      await app.close();
      await closeBackEnd();
      throw err;
    }
  }
  const address = app.addresses()[0];
  const listening =
    address && typeof address !== 'string' ? `${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}` : server.listen;
  eventKeeping.start(address && typeof address !== 'string' ? address.port : port);
  webhooks.start();
  for (const warning of publicUrlWarnings(server)) deps.logger.warn(warning);
  deps.logger.info({ listen: listening }, 'service ready');
  return {
    url: `http://${listening}`,
    metricsUrl: metricsServer ? `http://${metricsServer.address}/metrics` : null,
    db,
    async stop() {
      await metricsServer?.close();
      await app.close();
      await closeBackEnd();
    },
  };
}
