import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { ApiKeys, type KeyKind } from './apiKeys.js';
import { BadRequest } from './params.js';
import { answerClientError, errorBody, methodList, parseFormBody, parseJsonBody } from './http.js';
import { DEFAULT_HTTP_LIMITS, applyConnectionLimit, fastifyHttpOptions, type HttpLimits } from './httpLimits.js';
import { registerKeyCheck } from './keyCheck.js';
import { collectRouteDocs, registerOpenApiRoute } from './openapi/registry.js';
import { ApiDelegation } from './console/delegation.js';
import { registerConsole } from './console/routes.js';
import { Directory } from './directory.js';
import { DatabaseUnavailable } from './sql/unavailable.js';
import { markFileFor } from './directoryHistory.js';
import { buildDirectoryBody } from './directoryBody.js';
import { DirectoryBytes } from './directoryBytes.js';
import { DEFAULT_LOAD_LIMITS, Gate, Overloaded, type LoadLimits } from './loadGate.js';
import { Refusals } from './refusals.js';
import { LevelStore } from './levels.js';
import { PinMasking, readsPins } from './pinMasking.js';
import { DEFAULT_PIN_LABELS } from '../core/credentials.js';
import { registerDirectoryRoutes } from './routesDirectory.js';
import { registerDoorRoutes } from './routesDoors.js';
import { registerGroupRoutes } from './routesGroups.js';
import { registerHealthRoutes } from './routesHealth.js';
import { registerLinkRoutes } from './routesLinks.js';
import { registerLockdownRoutes } from './routesLockdown.js';
import { registerPolicyRoutes } from './routesPolicies.js';
import { registerRestoreRoutes } from './routesRestore.js';
import { registerStatusRoutes } from './routesStatus.js';
import { registerUserRoutes } from './routesUsers.js';
import { FLEET_PATHS, registerFleetGate } from './fleet/fleetDeps.js';
import { registerEnrolRoutes } from './fleet/routesEnrol.js';
import { registerFleetAgentRoutes } from './fleet/routesFleetAgents.js';
import { registerFirmwareRoutes } from './fleet/routesFirmware.js';
import { registerReportRoutes } from './audit/routesReports.js';
import { registerReleaseRoutes } from './fleet/routesReleases.js';
import { registerRolloutRoutes } from './fleet/routesRollouts.js';
import { registerAgentConfigRoutes } from './fleet/routesAgentConfig.js';
import { registerWebhookRoutes } from './audit/routesWebhooks.js';
import { registerEventRoutes } from './audit/routesEvents.js';
import { registerIdentityRoutes } from './identity/routesIdentity.js';
import { registerScimRoutes } from './identity/scim/scimRoutes.js';
import { LdapSync } from './identity/ldap/ldapSync.js';
import type { RouteContext, ServiceDeps, ServiceLoad } from './routeContext.js';
import { UserStore } from './users.js';

const RANK_ORDER: Record<KeyKind, number> = { DOOR: -1, REGULAR: 0, ADMIN: 1, SUPER: 2 };
const BODY_LIMIT = 1024 * 1024;
// Calls that change no user, card, group or link: no decision input of the directory moves, so no revision is
// spent and no agent is sent to sync for nothing (a lockdown reaches the doors on its own topic, a command too).
const NOT_DIRECTORY_CHANGES = new Set(['/lockdown', '/setlockstatus', '/healthz']);
/** Whether a call to `url` (not a GET) may change what a door sees. The console's forms call the API for that. */
// /identity-sources: an LDAP sync writes in transactions of its own, each with its revision (identity/ldap/).
const directoryChange = (url: string) =>
  !NOT_DIRECTORY_CHANGES.has(url) &&
  !url.startsWith('/console') &&
  !url.startsWith(FLEET_PATHS) &&
  !url.startsWith('/webhooks') &&
  !url.startsWith('/identity-sources');

/**
 * The reference access-control service (docs/access-control-api.md) on fastify, described by GET /openapi.json
 * (docs/openapi.md). Every endpoint but GET /healthz and GET /openapi.json needs an API key; bodies may be JSON or
 * a form; every error is `{"error": message}` with a 4xx status, never a 500 for bad input.
 */
export function buildService(deps: ServiceDeps): FastifyInstance {
  const limits: HttpLimits = { ...DEFAULT_HTTP_LIMITS, ...deps.http };
  const app = Fastify({
    ...fastifyHttpOptions(limits, deps.lockReplyTimeoutMs),
    bodyLimit: BODY_LIMIT,
    logger: false,
    // Errors fastify and Node's HTTP parser would answer in their own shape: answered in the API's instead.
    clientErrorHandler: answerClientError,
    frameworkErrors: (err, request, typedReply) => {
      const reply = typedReply as unknown as FastifyReply;
      if (err.code === 'FST_ERR_BAD_URL') {
        const path = request.url.split('?')[0];
        return reply.code(400).send(errorBody(`the URL path ${path} is not valid: a "%" must start a UTF-8 byte written as two hex digits`));
      }
      return reply.code(err.statusCode !== undefined && err.statusCode < 500 ? err.statusCode : 500).send(errorBody(err.message));
    },
    return503OnClosing: false, // answered by the first onRequest hook below
    // The start-up refresh (onReady) takes what is pending: every user once after an upgrade or a move (minutes at
    // 250,000 users on a slow disk), which no plugin timeout should cut short.
    pluginTimeout: 0,
  });
  const loadLimits: LoadLimits = { ...DEFAULT_LOAD_LIMITS, ...deps.loadLimits };
  const load: ServiceLoad = {
    limits: loadLimits,
    answers: new Gate(loadLimits.maxDirectoryAnswers),
    builds: new Gate(loadLimits.maxDirectoryBuilds),
    refusals: new Refusals(deps.logger, deps.clock, loadLimits.retryAfterSeconds),
  };
  applyConnectionLimit(app.server, limits, deps.logger, deps.clock, () => load.refusals.count('connections'));
  let stopping = false;
  app.addHook('preClose', async () => {
    stopping = true;
  });
  // What each route declares of itself (openapi/routeDoc.ts), for GET /openapi.json.
  const described = collectRouteDocs(app);
  // Each path's methods, for the Allow header of a 405 (a GET route also answers HEAD).
  const methodsByPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = methodsByPath.get(route.url) ?? new Set<string>();
    for (const method of [route.method].flat()) methods.add(method);
    methodsByPath.set(route.url, methods);
  });
  const keys = new ApiKeys(deps.db);
  const pinMasking = new PinMasking(deps.pinLabels);
  const users = new UserStore(deps.db, deps.pinLabels);
  const levels = new LevelStore(deps.db, deps.resources);
  // Each time the directory revision moves it is owed to the doors, in the transaction that moved it.
  const directory = new Directory(
    deps.db,
    users,
    async () => {
      await deps.publishQueue?.owe('revision');
      await deps.changeFeed?.notify('revision');
    },
    deps.logger,
    levels,
    // Beside a SQLite file unless said otherwise (root.ts names server.dataDir's for PostgreSQL).
    deps.historyMarkFile !== undefined ? deps.historyMarkFile : deps.db.engine === 'sqlite' ? markFileFor(deps.db.location) : null,
  );
  // GET /directory's answers, built once per revision (and variant) and kept until the revision moves.
  const directoryBytes = new DirectoryBytes({
    build: async (variant, sink) => buildDirectoryBody(variant, await directory.contents(variant), variant.masked ? pinMasking : null, sink),
    gate: load.builds,
    clock: deps.clock,
    logger: deps.logger,
    ...(deps.onDirectoryBuild ? { onBuild: deps.onDirectoryBuild } : {}),
  });
  // A revision moved here or in another process (the change feed, at its commit): older bytes are dropped at once.
  const unsubscribe = deps.changeFeed?.subscribe(
    (topic) => {
      if (topic !== 'revision') return;
      directory
        .revision()
        .then((version) => directoryBytes.moveTo(version))
        .catch((err: unknown) => deps.logger.warn({ err }, 'cannot read the directory revision after a change'));
    },
    () => undefined,
  );
  app.addHook('onClose', async () => unsubscribe?.());
  // Brought up to date before the first request rather than by it: a restore is detected, and what is pending
  // (changes made beside the service; every user once after the upgrade that brought directory_pending: seconds at
  // 250,000) gets its revision, which no door should wait for.
  app.addHook('onReady', async () => {
    const started = deps.clock.monoNow();
    await directory.start(deps.clock.wallNow());
    const current = await directory.revision();
    deps.logger.info(
      { revision: current.revision, fingerprinted: directory.usersFingerprinted(), ms: Math.round(deps.clock.monoNow() - started) },
      'directory revision up to date (the users changed since the last run fingerprinted)',
    );
  });
  // The LDAP sync (server.identity.ldap; a test may give its own): scheduled while this process leads, from once the
  // revision is up to date (this onReady runs after the one above); a sync under way is waited for at close.
  const ownLdapSync =
    deps.identity?.ldap && !deps.ldapSync
      ? new LdapSync({
          db: deps.db,
          users,
          directory,
          options: deps.identity.ldap,
          pinLabel: deps.pinLabels?.[0] ?? DEFAULT_PIN_LABELS[0],
          clock: deps.clock,
          logger: deps.logger,
          ...(deps.leadership ? { leadership: deps.leadership } : {}),
          owe: async (kind, subject) => {
            await deps.publishQueue?.owe(kind, subject);
          },
        })
      : undefined;
  if (ownLdapSync) {
    app.addHook('onReady', async () => ownLdapSync.start());
    app.addHook('onClose', async () => ownLdapSync.close());
  }
  const ldapSync = deps.ldapSync ?? ownLdapSync;
  // Every call that may change what a door sees runs in one transaction with the revision it makes (advance): all
  // processes on the database agree on the revision, and no change is committed without one. Such a handler
  // returns its answer (never reply.send inside): on PostgreSQL it may run again after a serialization failure.
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat();
    if (methods.some((m) => m === 'GET' || m === 'HEAD') || !directoryChange(route.url)) return;
    const handler = route.handler as (this: unknown, request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
    route.handler = async function (this: unknown, request: FastifyRequest, reply: FastifyReply) {
      return deps.db.transaction(async () => {
        const answer = await handler.call(this, request, reply);
        if (reply.statusCode < 300) await directory.advance(deps.clock.wallNow());
        return answer;
      });
    };
  });
  // Anything else that went through and left users pending (a console form that writes a store itself): its
  // revision now, in a transaction of its own.
  app.addHook('onResponse', async (request, reply) => {
    if (request.method === 'GET' || reply.statusCode >= 300 || !directoryChange(request.routeOptions.url ?? '')) return;
    await directory.refreshIfPending(deps.clock.wallNow()).catch((err: unknown) => deps.logger.error({ err }, 'cannot update the directory revision'));
  });
  deps.metrics?.instrument(
    app,
    () => directory.revision().then((r) => r.revision),
    () => directory.usersFingerprinted(),
  );

  // The console's in-process calls to the API on behalf of a session (console/delegation.ts).
  const delegation = deps.console ? new ApiDelegation(() => deps.clock.monoNow()) : null;
  // The key of every request, from a header, the query string or the body (keyCheck.ts).
  const keyCheck = registerKeyCheck(app, {
    ...(delegation ? { delegated: (token: string) => delegation.redeem(token) } : {}),
    verify: (key) => keys.verify(key, deps.clock.wallNow()),
    isScimToken: async (key) => (await keys.verifyScim(key, deps.clock.wallNow())) !== null,
    stopping: () => stopping,
    refusedWhileStopping: (path, message) => load.refusals.refuse('stopping', path, message),
  });
  // Without server.fleet, the /fleet routes answer 404 (after the key check: a keyed one still needs its key).
  registerFleetGate(app, deps.fleet);
  // A GET may carry its parameters (and api_key) in a body too: the API document does not say where they go.
  app.addHttpMethod('GET', { hasBody: true, overrideExisting: true });
  // JSON and forms only: fastify's own text/plain parser would take a body whose parameters then go unread.
  app.removeContentTypeParser('text/plain');
  // Both read from the raw bytes: a body that is not UTF-8 is refused, not stored with U+FFFD.
  for (const [type, parse] of [
    ['application/json', parseJsonBody],
    ['application/x-www-form-urlencoded', parseFormBody],
  ] as const) {
    app.addContentTypeParser(type, { parseAs: 'buffer' }, (request, body, done) => {
      const bytes = body as Buffer;
      // A GET with a Content-Type but no body (some clients send one on every call) has no parameters there.
      if (bytes.length === 0 && request.method === 'GET') return done(null, undefined);
      try {
        done(null, parse(bytes));
      } catch (err) {
        void keyCheck.parseFailed(request, bytes, err as Error).then((refused) => done(refused, undefined));
      }
    });
  }

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, request, reply: FastifyReply) => {
    if (err instanceof BadRequest) return reply.code(err.status).send({ error: err.message });
    // The database out of reach (PostgreSQL stopped or restarting): nothing was applied; the caller tries again later,
    // the doors decide from their caches meanwhile.
    if (err instanceof DatabaseUnavailable) {
      const seconds = load.refusals.refuse('database', request.url.split('?')[0]!, err.message);
      return reply
        .code(503)
        .header('retry-after', String(seconds))
        .send(errorBody(`the service's database cannot be reached: try again in ${seconds} s`));
    }
    // Over a bound (loadGate.ts): shed with a Retry-After, counted and logged (the path only: a query may carry api_key).
    if (err instanceof Overloaded) {
      const seconds = load.refusals.refuse(err.reason, request.url.split('?')[0]!, err.message);
      return reply
        .code(503)
        .header('retry-after', String(seconds))
        .send(errorBody(`${err.message}: try again in ${seconds} s`));
    }
    // 400, the document's status for a refused request, with the reason (HTTP would also allow 413).
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply.code(400).send({ error: `request body over ${request.routeOptions.bodyLimit ?? BODY_LIMIT} bytes` });
    }
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      const type = request.headers['content-type']?.split(';')[0]?.trim().slice(0, 100);
      const accepted = 'send application/json or application/x-www-form-urlencoded';
      return reply.code(415).send(errorBody(type ? `Content-Type ${type} is not supported: ${accepted}` : `a request body needs a Content-Type: ${accepted}`));
    }
    if (err.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') {
      return reply.code(400).send(errorBody('the request body is not as long as its Content-Length says'));
    }
    if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode).send({ error: err.message });
    }
    // The path only: a query string may carry api_key.
    deps.logger.error({ err, url: request.url.split('?')[0] }, 'request failed');
    return reply.code(500).send({ error: 'internal error' });
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const methods = methodsByPath.get(path);
    if (methods === undefined) return reply.code(404).send(errorBody(`no endpoint ${request.method} ${path}`));
    const allowed = [...methods].sort();
    return reply
      .code(405)
      .header('allow', allowed.join(', '))
      .send(errorBody(`${request.method} is not allowed on ${path}: use ${methodList(allowed)}`));
  });

  const context: RouteContext = {
    ...deps,
    ...(ldapSync ? { ldapSync } : {}),
    users,
    levels,
    directory,
    directoryBytes,
    load,
    requireRank(request, rank) {
      if (RANK_ORDER[request.rank ?? 'REGULAR'] < RANK_ORDER[rank]) {
        throw new BadRequest(`this needs an API key of rank ${rank} or higher (this key: ${request.rank})`, 403);
      }
    },
    pinMaskFor: (request) => (readsPins(request.rank) ? null : pinMasking),
    owe: async (kind, subject) => {
      await deps.publishQueue?.owe(kind, subject);
    },
    mailQueued: () => void deps.mailer?.flush().catch((err: unknown) => deps.logger.warn({ err }, 'mail delivery failed')),
  };
  registerUserRoutes(app, context);
  registerGroupRoutes(app, context);
  registerLinkRoutes(app, context);
  registerDoorRoutes(app, context);
  registerDirectoryRoutes(app, context);
  registerRestoreRoutes(app, context);
  registerLockdownRoutes(app, context);
  registerPolicyRoutes(app, context);
  registerStatusRoutes(app, context);
  registerHealthRoutes(app, context);
  registerEnrolRoutes(app, context);
  registerFleetAgentRoutes(app, context);
  registerReleaseRoutes(app, context);
  registerRolloutRoutes(app, context);
  registerAgentConfigRoutes(app, context);
  registerFirmwareRoutes(app, context);
  registerWebhookRoutes(app, context);
  registerReportRoutes(app, context);
  registerEventRoutes(app, context);
  registerIdentityRoutes(app, context);
  // Without server.identity.scim enabled, /scim/v2 answers 404 as any unknown path.
  if (deps.identity?.scim?.enabled) registerScimRoutes(app, context);
  registerOpenApiRoute(app, described);
  if (deps.console && delegation) registerConsole(app, context, { ...deps.console, console: deps.console.options, delegation });
  return app;
}
