import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { KeyKind } from './apiKeys.js';
import { closeWithoutReading } from './http.js';
import { BadRequest } from './params.js';
import { authorizationProblem, bodyKey, bodyKind, keyInBodyPrefix, keysBeforeBody, oneKey, type GivenKey } from './requestKey.js';
import { REQUEST_LIMITS } from './requestLimits.js';

declare module 'fastify' {
  interface FastifyRequest {
    rank?: KeyKind;
    /** The key the request was let in with, and where it came from (compared with a key in the body). */
    keyGiven?: GivenKey;
    /** Who made a console's call (a delegation's `console: <who>`), as a change records its author (callerOf). */
    caller?: string;
  }
  interface FastifyContextConfig {
    /** The route checks a session of its own (the console, console/routes.ts), not an API key. */
    sessionAuth?: boolean;
    /** The route checks a credential of its own, not an API key (the fleet's enrolment: a code's secret, a poll secret). */
    ownCredential?: boolean;
    /** A DOOR key may call it though it is no GET (an agent's own report to the service: the fleet's routes). */
    doorMayPost?: boolean;
  }
}

/**
 * The header of a call the console makes in-process on behalf of a signed-in session (app.inject): a one-time
 * token the console just issued for that session's rank (console/delegation.ts), so the call runs the API
 * route's own checks with that rank. Never valid twice, never valid from another process's guess.
 */
export const DELEGATION_HEADER = 'x-console-delegation';

/** Who made a request, as a change records its author: the console's user (`console: <who>`), else `API key (<rank>)`. */
export const callerOf = (request: FastifyRequest): string => request.caller ?? `API key (${request.rank})`;

/** GET /healthz (routesHealth.ts): a load balancer's health check, which takes no key. */
export const HEALTH_PATH = '/healthz';
/** GET /openapi.json (openapi/registry.ts): the API's description, which holds no data and takes no key. */
export const OPENAPI_PATH = '/openapi.json';
/** The API's paths whose GET and HEAD need no key. */
const NO_KEY_PATHS = new Set([HEALTH_PATH, OPENAPI_PATH]);

// A DOOR key reads (issue 32 item 16): any other method is refused before the body is read.
const READ_METHODS = new Set(['GET', 'HEAD']);

/**
 * The requests this check lets through without an API key: a route that checks a session of its own (the console)
 * or a credential of its own (the fleet's enrolment), and GET or HEAD of exactly one of NO_KEY_PATHS as routed (its pattern: no other path, method or unmatched URL).
 */
const noKeyNeeded = (request: FastifyRequest) =>
  request.routeOptions.config?.sessionAuth === true ||
  request.routeOptions.config?.ownCredential === true ||
  (NO_KEY_PATHS.has(request.routeOptions.url ?? '') && READ_METHODS.has(request.method));
const LIMIT = REQUEST_LIMITS.bodyBeforeKey;

/** A body that may carry `api_key`: one of the parsed types, with bytes to come. */
function mayCarryKey(request: FastifyRequest): boolean {
  if (request.method === 'HEAD' || bodyKind(request.headers['content-type']) === null) return false;
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length']) > 0;
}

/**
 * Passes a body on unchanged, but once more than `limit` bytes came without a key, looks for one in those
 * first bytes (`check`, which rejects to refuse): nothing past them is read for a request without a valid key,
 * nor while its key is being checked.
 */
class KeyWithinLimit extends Transform {
  private seen: Buffer[] = [];
  private received = 0;

  constructor(
    private readonly limit: number,
    private readonly check: (prefix: Buffer) => Promise<void>,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.received <= this.limit) {
      this.seen.push(chunk);
      this.received += chunk.length;
      if (this.received > this.limit) {
        const prefix = Buffer.concat(this.seen).subarray(0, this.limit);
        this.seen = [];
        this.check(prefix).then(
          () => callback(null, chunk),
          (err: unknown) => callback(err as Error),
        );
        return;
      }
    }
    callback(null, chunk);
  }
}

/**
 * The API key check of every request but GET /healthz, GET /openapi.json and the console's own pages
 * (docs/reference-service.md, "API keys"); a request while the service stops is answered 503 first, those included.
 * A key in a header or the query string is checked before the body is read, so a request without a valid one costs
 * no more than its headers.
 * Without one there, a JSON or form body is read up to REQUEST_LIMITS.bodyBeforeKey bytes for its `api_key`;
 * a longer body must have it within those bytes, and is not read further otherwise. Keys in several places must
 * agree (400 otherwise). A refusal sent before the body was read in full closes the connection.
 * Returns what the body parsers call when a body does not parse: the key (if any) is checked first, and the
 * error to answer with follows.
 */
export function registerKeyCheck(
  app: FastifyInstance,
  deps: {
    /** The kind of a valid, unexpired key, or null (ApiKeys.verify: a query of the database). */
    verify(key: string): Promise<KeyKind | null>;
    /** Whether a key the API refused is a valid SCIM token (ApiKeys.verifyScim), to say where it belongs. */
    isScimToken?(key: string): Promise<boolean>;
    stopping(): boolean;
    /** Counts and logs a request refused while stopping (path without its query); answers its Retry-After in seconds. */
    refusedWhileStopping(path: string, message: string): number;
    /** The rank (and who signed in) of a console delegation token, consumed; null when unknown (absent without a console). */
    delegated?(token: string): { rank: KeyKind; who?: string } | null;
  },
): { parseFailed(request: FastifyRequest, body: Buffer, err: Error): Promise<Error> } {
  const authenticate = async (request: FastifyRequest, given: GivenKey[], missing = 'an API key is required'): Promise<void> => {
    const key = oneKey(given);
    if (key === undefined) throw new BadRequest(authorizationProblem(request) ?? missing, 401);
    const rank = await deps.verify(key);
    // This check sees /scim/v2 only when SCIM is not enabled: there the token is in its place, and opens nothing.
    const outsideScim = !/^\/scim\/v2(\/|\?|$)/.test(request.url);
    if (rank === null && outsideScim && (await deps.isScimToken?.(key))) {
      throw new BadRequest('this key is scoped to /scim/v2 (SCIM provisioning) and opens nothing else', 403);
    }
    if (rank === null) throw new BadRequest('API key not valid or expired', 401);
    if (rank === 'DOOR' && !READ_METHODS.has(request.method) && request.routeOptions.config?.doorMayPost !== true) {
      throw new BadRequest(`a DOOR key only reads (GET): ${request.method} needs an ADMIN key`, 403);
    }
    request.rank = rank;
    request.keyGiven = given[0];
  };

  app.addHook('onRequest', async (request, reply) => {
    if (deps.stopping()) {
      const message = 'the service is stopping: try again in a moment';
      const seconds = deps.refusedWhileStopping(request.url.split('?')[0]!, message);
      return reply.code(503).header('retry-after', String(seconds)).send({ error: message });
    }
    if (noKeyNeeded(request)) return;
    const delegation = request.headers[DELEGATION_HEADER];
    if (typeof delegation === 'string' && deps.delegated) {
      const delegated = deps.delegated(delegation);
      if (delegated === null) throw new BadRequest('the console session is not valid: sign in again', 401);
      request.rank = delegated.rank;
      request.keyGiven = { place: 'the console session', key: '' };
      if (delegated.who !== undefined) request.caller = `console: ${delegated.who}`;
      return;
    }
    const given = keysBeforeBody(request);
    if (given.length > 0 || !mayCarryKey(request)) return authenticate(request, given);
    const bodyLimit = request.routeOptions.bodyLimit ?? Infinity;
    if (Number(request.headers['content-length']) > bodyLimit) {
      throw new BadRequest(
        authorizationProblem(request) ?? `an API key is required (none in a header or the query string; a body over ${bodyLimit} bytes is not read)`,
        401,
      );
    }
  });
  app.addHook('preParsing', async (request, _reply, payload) => {
    if (request.rank !== undefined || noKeyNeeded(request)) return payload;
    const kind = bodyKind(request.headers['content-type']) ?? 'form';
    const limited = new KeyWithinLimit(LIMIT, (prefix) =>
      authenticate(
        request,
        keyInBodyPrefix(prefix, kind, false),
        `an API key is required: none in the Authorization or X-API-Key header, the query string, or the first ${LIMIT} bytes of the body (send api_key first in a body longer than that, or in a header)`,
      ),
    );
    payload.on('error', (err) => limited.destroy(err));
    return (payload as Readable).pipe(limited);
  });
  app.addHook('preHandler', async (request) => {
    if (noKeyNeeded(request)) return;
    const inBody = bodyKey(request.body);
    if (request.keyGiven !== undefined) oneKey([request.keyGiven, ...inBody]);
    else await authenticate(request, inBody);
  });
  // Node would otherwise read (and drop) the rest of the body to keep the connection: a 50 MB upload in full.
  app.addHook('onSend', async (request, reply) => {
    if (request.raw.complete) return;
    reply.header('connection', 'close');
    closeWithoutReading(request.raw.socket);
  });

  return {
    async parseFailed(request, body, err) {
      if (request.rank !== undefined || noKeyNeeded(request)) return err;
      try {
        await authenticate(request, keyInBodyPrefix(body, bodyKind(request.headers['content-type']) ?? 'form', true));
        return err;
      } catch (refused) {
        return refused as Error;
      }
    },
  };
}
