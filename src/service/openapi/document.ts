import { errorAnswerSchema } from '../../api/answers.js';
import { holdsJson, jsonSchemaOf, propertiesOf } from './jsonSchema.js';
import type { RouteDoc } from './routeDoc.js';

/** A route as fastify registered it, with its description. */
export interface DescribedRoute {
  method: string;
  path: string;
  doc: RouteDoc;
}

type Json = { [key: string]: unknown };

/** The ways a request carries its API key (requestKey.ts): any one of them. A key in the body is said in words. */
const SECURITY_SCHEMES = {
  bearer: { type: 'http', scheme: 'bearer', description: '`Authorization: Bearer KEY` (preferred: never in a URL, never in a body a proxy may log).' },
  apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: '`X-API-Key: KEY`.' },
  apiKeyQuery: {
    type: 'apiKey',
    in: 'query',
    name: 'api_key',
    description: '`?api_key=KEY`; also taken as `api_key` in a JSON or form body, within its first 8 KiB (docs/reference-service.md, "Where the key goes").',
  },
};
const KEY_SECURITY = [{ bearer: [] }, { apiKeyHeader: [] }, { apiKeyQuery: [] }];

const KEY_WORDS: Record<RouteDoc['key'], string> = {
  none: 'No API key needed.',
  any: 'Any API key (a DOOR key too).',
  ADMIN: 'An ADMIN or SUPER key.',
  SUPER: 'A SUPER key.',
};

/** The methods whose parameters go in the query string; the others take a body. */
const QUERY_METHODS = new Set(['GET', 'DELETE']);

/** Every refusal's body, once in the document. */
const error = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

/** Raw bytes (an upload, a download). */
const BYTES = { type: 'string', contentMediaType: 'application/octet-stream' };

const RETRY_AFTER = { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 0 } };

/** Fastify's `:name` path parameters as OpenAPI's `{name}`: each one must be described in the route's pathParams. */
function openApiPath(path: string, doc: RouteDoc): string {
  if (path.includes('*')) throw new Error(`${path}: a wildcard path is not described (openapi/document.ts)`);
  const described = new Set(doc.pathParams === undefined ? [] : propertiesOf(jsonSchemaOf(doc.pathParams)).map((p) => p.name));
  return path.replace(/:([A-Za-z0-9_]+)/g, (_match, name: string) => {
    if (!described.has(name)) throw new Error(`${path}: its path parameter ${name} is not in the route's pathParams (openapi/routeDoc.ts)`);
    return `{${name}}`;
  });
}

/** camelCase of the method and the path: GET /multipleusers is getMultipleusers, GET /openapi.json getOpenapiJson. */
function operationId(method: string, path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter((w) => w !== '');
  return method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

/** The parameters and body of a route: its params in the query (GET, DELETE) or a body (POST, PUT), and its headers. */
function requestOf(method: string, doc: RouteDoc): Json {
  const parameters: Json[] = [];
  const out: Json = {};
  if (doc.rawBody !== undefined) {
    out.requestBody = { required: true, description: doc.rawBody.description, content: { [doc.rawBody.type]: { schema: BYTES } } };
  }
  if (doc.params !== undefined) {
    const schema = jsonSchemaOf(doc.params);
    if (QUERY_METHODS.has(method) || doc.rawBody !== undefined) {
      for (const p of propertiesOf(schema)) {
        // A list or an object in a query string is its JSON (params.ts reads it so).
        const described = holdsJson(p.schema) ? { content: { 'application/json': { schema: p.schema } } } : { schema: p.schema };
        parameters.push(Object.assign({ name: p.name, in: 'query', required: p.required }, described));
      }
    } else {
      // A form sends each list or object as its JSON text (the API document's "serialized JSON array").
      const encoding = Object.fromEntries(
        propertiesOf(schema)
          .filter((p) => holdsJson(p.schema))
          .map((p) => [p.name, { contentType: 'application/json' }]),
      );
      out.requestBody = {
        required: propertiesOf(schema).some((p) => p.required),
        content: {
          'application/json': { schema },
          'application/x-www-form-urlencoded': Object.keys(encoding).length > 0 ? { schema, encoding } : { schema },
        },
      };
    }
  }
  if (doc.pathParams !== undefined) {
    for (const p of propertiesOf(jsonSchemaOf(doc.pathParams))) parameters.push({ name: p.name, in: 'path', required: true, schema: p.schema });
  }
  if (doc.headers !== undefined) {
    for (const p of propertiesOf(jsonSchemaOf(doc.headers))) parameters.push({ name: p.name, in: 'header', required: p.required, schema: p.schema });
  }
  if (parameters.length > 0) out.parameters = parameters;
  return out;
}

/** Its answers: 200 (or its answerStatus), its own statuses, and those every route of its kind gives. */
function responsesOf(method: string, doc: RouteDoc): Json {
  const answer: Json =
    doc.rawAnswer === undefined
      ? { description: 'The answer.', content: { 'application/json': { schema: jsonSchemaOf(doc.answer) } } }
      : { description: doc.rawAnswer.description, content: { [doc.rawAnswer.type]: { schema: BYTES } } };
  if (doc.answerHeaders !== undefined) {
    answer.headers = Object.fromEntries(Object.entries(doc.answerHeaders).map(([name, description]) => [name, { description, schema: { type: 'string' } }]));
  }
  const responses: Json = { [doc.answerStatus ?? 200]: answer };
  const own = doc.statuses ?? {};
  if (own[304] !== undefined) responses[304] = { description: own[304] };
  responses[400] = error('A parameter is missing or not valid, a body does not parse, or two API keys differ: the message names what.');
  if (doc.key !== 'none') responses[401] = error('No API key, or one not valid or expired.');
  const writes = !QUERY_METHODS.has(method) || method === 'DELETE';
  if (doc.key === 'ADMIN' || doc.key === 'SUPER' || writes) {
    responses[403] = error(`The key's rank is too low for this call${writes ? ' (a DOOR key only reads)' : ''}.`);
  }
  for (const status of [404, 409, 410, 413, 502] as const) if (own[status] !== undefined) responses[status] = error(own[status]);
  if (doc.rawBody !== undefined) responses[415] = error(`A body that is not ${doc.rawBody.type}.`);
  else if (!QUERY_METHODS.has(method)) responses[415] = error('A body that is neither JSON nor a form.');
  const unavailable = 'The service is stopping, or its database cannot be reached: try again after Retry-After seconds.';
  responses[503] = Object.assign(error(own[503] === undefined ? unavailable : `${unavailable} ${own[503]}`), { headers: { 'Retry-After': RETRY_AFTER } });
  if (own[504] !== undefined) responses[504] = error(own[504]);
  return responses;
}

function operationOf(route: DescribedRoute): Json {
  const { method, doc } = route;
  const description = doc.description === undefined ? KEY_WORDS[doc.key] : `${doc.description}\n\n${KEY_WORDS[doc.key]}`;
  return Object.assign(
    { operationId: operationId(method, route.path), summary: doc.summary, description, tags: [doc.tag] },
    doc.key === 'none' ? { security: [] } : {},
    requestOf(method, doc),
    { responses: responsesOf(method, doc) },
  );
}

/**
 * The OpenAPI 3.1 document of the service's described routes (docs/openapi.md): paths in the order the routes were
 * registered, servers left relative (the address it was read from), the API key's ways as security schemes.
 */
export function openApiDocument(routes: readonly DescribedRoute[], version: string): Json {
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    const path = openApiPath(route.path, route.doc);
    paths[path] ??= {};
    const method = route.method.toLowerCase();
    if (paths[path][method] !== undefined) throw new Error(`${route.method} ${route.path} is described twice`);
    paths[path][method] = operationOf(route);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'door-agent reference access-control service',
      version,
      description:
        'The access-control API (docs/access-control-api.md) as the reference service implements it, with its extensions ' +
        '(docs/reference-service.md). Parameters are also taken from the query string of any call and from a JSON or form ' +
        'body of a GET; every GET also answers HEAD. Every refusal is `{"error": message}`.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/', description: 'this service: the address this document was read from' }],
    security: KEY_SECURITY,
    tags: [...new Set(routes.map((r) => r.doc.tag))].map((name) => ({ name })),
    paths,
    components: { schemas: { Error: jsonSchemaOf(errorAnswerSchema) }, securitySchemes: SECURITY_SCHEMES },
  };
}
