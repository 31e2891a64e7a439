import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseJsonBody } from '../../http.js';
import { BadRequest } from '../../params.js';
import type { RouteContext } from '../../routeContext.js';
import { DatabaseUnavailable } from '../../sql/unavailable.js';
import { registerScimAuth, WWW_AUTHENTICATE } from './scimAuth.js';
import { badScim, ScimError, scimErrorBody } from './scimErrors.js';
import { parseScimFilter, parseScimPath, type ScimFilter } from './scimFilter.js';
import { listOf, oneOf, resourceTypes, schemas, serviceProviderConfig } from './scimMeta.js';
import type { ScimObject } from './scimObjects.js';
import { parsePatchRequest } from './scimPatch.js';
import { checkIfMatch, listResponse, pageOf, projected } from './scimResource.js';
import { ScimGroups } from './scimGroups.js';
import { ScimUsers } from './scimUsers.js';

/** Where the endpoint is (docs/identity-sources.md, "SCIM 2.0"). */
const SCIM_PREFIX = '/scim/v2';
const SCIM_TYPE = 'application/scim+json; charset=utf-8';
/** The API key check (keyCheck.ts) lets these through: the scope checks its own token (scimAuth.ts). */
const OWN = { config: { ownCredential: true } };

type Query = Record<string, unknown>;
type Params = { id: string };

/** The endpoint's base URL as the client reached it: resources' locations are absolute (RFC 7643 section 3.1). */
const baseOf = (request: FastifyRequest) => `${request.protocol}://${request.host || 'localhost'}${SCIM_PREFIX}`;

/** A request's `filter`, parsed; undefined without one. */
function filterOf(query: Query): ScimFilter | undefined {
  const filter = query.filter;
  if (filter === undefined) return undefined;
  if (typeof filter !== 'string') throw badScim('invalidFilter', 'give one filter parameter');
  return parseScimFilter(filter);
}

/** Any error under /scim/v2 as SCIM's error (RFC 7644 section 3.12). */
function asScimError(err: FastifyError | Error, ctx: RouteContext, request: FastifyRequest): { error: ScimError; retryAfter?: number } {
  if (err instanceof ScimError) return { error: err };
  const code = (err as FastifyError).code;
  // The body parsers' refusals (not JSON, not UTF-8, nested too deep): the request's syntax.
  if (err instanceof BadRequest) return { error: new ScimError(err.status, err.message, err.status === 400 ? 'invalidSyntax' : undefined) };
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return { error: new ScimError(415, 'send the body as application/scim+json (or application/json)') };
  }
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { error: new ScimError(413, `the request body is over ${request.routeOptions.bodyLimit} bytes`) };
  if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return { error: badScim('invalidSyntax', 'the request body is empty: send a JSON object') };
  if (err instanceof DatabaseUnavailable) {
    const seconds = ctx.load.refusals.refuse('database', request.url.split('?')[0]!, err.message);
    return { error: new ScimError(503, `the service's database cannot be reached: try again in ${seconds} s`), retryAfter: seconds };
  }
  const status = (err as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) return { error: new ScimError(status, err.message) };
  // The path only: never a body, a token or a card number.
  ctx.logger.error({ err, url: request.url.split('?')[0] }, 'SCIM request failed');
  return { error: new ScimError(500, 'internal error') };
}

/**
 * SCIM 2.0 under /scim/v2 (RFC 7643, RFC 7644; docs/identity-sources.md): Users, Groups, ServiceProviderConfig,
 * ResourceTypes and Schemas, in a scope of their own: the SCIM token's check, application/scim+json bodies, and
 * every error in the RFC's shape. A write is a directory change (server.ts runs it in one transaction with the
 * revision it makes): a deactivation reaches the doors as a suspension does. Handlers return their answer (never
 * reply.send): on PostgreSQL a write may run again after a serialization failure.
 */
export function registerScimRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const cardAttribute = ctx.identity?.scim?.cardAttribute;
  const cardPath = cardAttribute === undefined ? undefined : parseScimPath(cardAttribute);
  const users = new ScimUsers(ctx, cardPath);
  const groups = new ScimGroups(ctx);

  void app.register(
    async (scim) => {
      registerScimAuth(scim, ctx);
      // JSON only, read from the raw bytes as the API's bodies are (http.ts): not UTF-8, not JSON or nested too deep is 400.
      scim.removeAllContentTypeParsers();
      scim.addContentTypeParser(['application/scim+json', 'application/json'], { parseAs: 'buffer' }, (request, body, done) => {
        const bytes = body as Buffer;
        if (bytes.length === 0 && (request.method === 'GET' || request.method === 'DELETE')) return done(null, undefined);
        try {
          done(null, parseJsonBody(bytes));
        } catch (err) {
          done(badScim('invalidSyntax', (err as Error).message), undefined);
        }
      });
      scim.setErrorHandler((err: FastifyError | Error, request, reply: FastifyReply) => {
        const { error, retryAfter } = asScimError(err, ctx, request);
        if (error.status === 401) reply.header('www-authenticate', WWW_AUTHENTICATE);
        if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
        return reply.code(error.status).type(SCIM_TYPE).send(scimErrorBody(error));
      });
      scim.addHook('onSend', async (_request, reply, payload) => {
        if (reply.statusCode !== 204 && !String(reply.getHeader('content-type') ?? '').startsWith('application/scim+json')) reply.type(SCIM_TYPE);
        return payload;
      });

      /** A resource answered with its version as the ETag (RFC 7644 section 3.14). */
      const answer = (reply: FastifyReply, resource: ScimObject, status = 200) => {
        reply.code(status).header('etag', (resource.meta as { version: string }).version);
        if (status === 201) reply.header('location', (resource.meta as { location: string }).location);
        return resource;
      };
      const noContent = (reply: FastifyReply) => {
        reply.code(204);
        return '';
      };

      scim.get('/ServiceProviderConfig', OWN, async (request) => serviceProviderConfig(baseOf(request)));
      scim.get('/ResourceTypes', OWN, async (request) => listOf(resourceTypes(baseOf(request), cardPath)));
      scim.get<{ Params: Params }>('/ResourceTypes/:id', OWN, async (request) =>
        oneOf(resourceTypes(baseOf(request), cardPath), request.params.id, 'resource type'),
      );
      scim.get('/Schemas', OWN, async (request) => listOf(schemas(baseOf(request), cardPath)));
      scim.get<{ Params: Params }>('/Schemas/:id', OWN, async (request) => oneOf(schemas(baseOf(request), cardPath), request.params.id, 'schema'));

      for (const [path, store] of [
        ['/Users', users],
        ['/Groups', groups],
      ] as const) {
        scim.get<{ Querystring: Query }>(path, OWN, async (request) => {
          const page = pageOf(request.query);
          const { total, resources } = await store.list(filterOf(request.query), page, baseOf(request));
          return listResponse(
            total,
            page,
            resources.map((r) => projected(r, request.query)),
          );
        });
        scim.get<{ Params: Params; Querystring: Query }>(`${path}/:id`, OWN, async (request, reply) => {
          const found = await store.read(request.params.id, baseOf(request));
          reply.header('etag', (found.meta as { version: string }).version);
          return projected(found, request.query);
        });
      }

      scim.post('/Users', OWN, async (request, reply) => answer(reply, await users.create(request.body, baseOf(request)), 201));
      scim.put<{ Params: Params }>('/Users/:id', OWN, async (request, reply) => {
        const user = await users.find(request.params.id);
        await checkIfMatch(request.headers['if-match'], () => users.resource(user, baseOf(request)));
        return answer(reply, await users.replace(user, request.body, baseOf(request)));
      });
      scim.patch<{ Params: Params }>('/Users/:id', OWN, async (request, reply) => {
        const operations = parsePatchRequest(request.body);
        const user = await users.find(request.params.id);
        await checkIfMatch(request.headers['if-match'], () => users.resource(user, baseOf(request)));
        return answer(reply, await users.patch(user, operations, baseOf(request)));
      });
      scim.delete<{ Params: Params }>('/Users/:id', OWN, async (request, reply) => {
        const user = await users.find(request.params.id);
        await checkIfMatch(request.headers['if-match'], () => users.resource(user, baseOf(request)));
        await users.remove(user);
        return noContent(reply);
      });

      scim.post('/Groups', OWN, async (request, reply) => answer(reply, await groups.create(request.body, baseOf(request)), 201));
      scim.put<{ Params: Params }>('/Groups/:id', OWN, async (request, reply) => {
        const group = await groups.find(request.params.id);
        await checkIfMatch(request.headers['if-match'], () => groups.resource(group, baseOf(request)));
        return answer(reply, await groups.replace(group, request.body, baseOf(request)));
      });
      // A group's PATCH answers 204 with its new version (RFC 7644 section 3.5.2 allows it; Entra ID asks for it:
      // a large group's members are not sent back), or the group when the request names `attributes`.
      scim.patch<{ Params: Params; Querystring: Query }>('/Groups/:id', OWN, async (request, reply) => {
        const operations = parsePatchRequest(request.body);
        const group = await groups.find(request.params.id);
        await checkIfMatch(request.headers['if-match'], () => groups.resource(group, baseOf(request)));
        const after = await groups.patch(group, operations, baseOf(request));
        if (request.query.attributes === undefined) {
          reply.header('etag', (after.meta as { version: string }).version);
          return noContent(reply);
        }
        return projected(answer(reply, after), request.query);
      });
      scim.delete<{ Params: Params }>('/Groups/:id', OWN, async (request, reply) => {
        const group = await groups.find(request.params.id);
        await checkIfMatch(request.headers['if-match'], () => groups.resource(group, baseOf(request)));
        await groups.remove(group);
        return noContent(reply);
      });

      // Anything else under /scim/v2 (Bulk, /Me, .search): SCIM's 404, after the token's check.
      scim.all('/*', OWN, async (request) => {
        throw new ScimError(
          404,
          `no SCIM endpoint ${request.method} ${request.url.split('?')[0]}: this one serves Users, Groups, ServiceProviderConfig, ResourceTypes and Schemas`,
        );
      });
    },
    { prefix: SCIM_PREFIX },
  );
}
