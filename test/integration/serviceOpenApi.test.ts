import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import createClient, { type Middleware } from 'openapi-fetch';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { DOOR_UUID, tempDir } from '../support/cli.js';
import { listeningService } from '../support/serviceApp.js';

// The reference service describes itself in OpenAPI 3.1 at GET /openapi.json (docs/openapi.md). Checked here as a
// client would use it: the served document against the OpenAPI 3.1 schema, every route of the service against it,
// and a client generated from it (openapi-typescript's types, openapi-fetch) run against the real service on a
// loopback port, every answer checked against the document's schema for its status.

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;
type Schema = object;
interface Operation {
  security?: unknown[];
  parameters?: Array<{ name: string; in: string }>;
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface OpenApiDocument {
  openapi: string;
  info: { version: string };
  servers: unknown;
  security: unknown;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, { type: string; in?: string; name?: string }> };
  paths: Record<string, Partial<Record<string, Operation>>>;
}

const tmp = tempDir('door-agent-openapi-');
let app: Awaited<ReturnType<typeof listeningService>>['app'];
let db: SqlDb;
let base: string;
let keys: Record<'SUPER' | 'DOOR' | 'REGULAR', string>;
let document: OpenApiDocument;

const operations = () =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m] !== undefined).map((method) => ({ path, method, operation: item[method]! })),
  );

beforeAll(async () => {
  ({ app, db, keys } = await listeningService(join(tmp.path, 'service.db'), {
    // With the console: its HTML pages are routes of the same server, and the only ones the document leaves out.
    console: { options: { enabled: true, sessionMinutes: 30, maxSessionHours: 12 }, feed: null, mailConfigured: false },
  }));
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const res = await fetch(`${base}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  document = (await res.json()) as OpenApiDocument;
});
afterAll(async () => {
  await app?.close();
  await db?.close();
  tmp.cleanup();
});

/** `schema` with the document's components in place of their references (`#/components/schemas/Error`), for ajv. */
function inlined(schema: Schema): Schema {
  return JSON.parse(JSON.stringify(schema), (_key, value: unknown) => {
    const ref = (value as { $ref?: unknown } | null)?.$ref;
    return typeof ref === 'string' && ref.startsWith('#/components/schemas/') ? document.components.schemas[ref.slice(21)] : value;
  }) as Schema;
}

/** Every route fastify registered, as `METHOD /path`, read from its route tree (printRoutes). */
function registeredRoutes(): string[] {
  const routes: string[] = [];
  const stack: Array<{ depth: number; path: string }> = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+) \(([A-Z, ]+)\)/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    while (stack.length > depth) stack.pop();
    const path = (stack.at(-1)?.path ?? '') + match[2]!;
    stack.push({ depth, path });
    for (const method of match[3]!.split(', ')) routes.push(`${method} ${path}`);
  }
  return routes;
}

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document, read without a key: the package version, the key as the service takes it, servers relative', async () => {
    const validator = new Validator();
    const result = await validator.validate(document as unknown as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');

    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
    expect(document.info.version).toBe(pkg.version);
    expect(document.servers).toEqual([{ url: '/', description: expect.any(String) }]);
    // The three places of requestKey.ts, any one of them.
    expect(document.components.securitySchemes).toMatchObject({
      bearer: { type: 'http', scheme: 'bearer' },
      apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
      apiKeyQuery: { type: 'apiKey', in: 'query', name: 'api_key' },
    });
    expect(document.security).toEqual([{ bearer: [] }, { apiKeyHeader: [] }, { apiKeyQuery: [] }]);

    // Every schema in it compiles as JSON Schema 2020-12 (OpenAPI 3.1's dialect).
    const ajv = new Ajv2020({ strict: false });
    const schemas: unknown[] = [];
    JSON.stringify(document, (key, value) => {
      if (key === 'schema') schemas.push(value);
      return value;
    });
    expect(schemas.length).toBeGreaterThan(50);
    for (const schema of schemas) expect(() => ajv.compile(inlined(schema as Schema))).not.toThrow();
  });

  it("describes every route of the service but the console's pages, and says truly which ones need a key", async () => {
    // The console's own (its pages, and its icon at /favicon.ico) check a session, not a key, and answer HTML.
    // A path parameter is `{name}` in the document, `:name` in fastify's routes; the route tree prints parameters of
    // several names at one place as `:a|:b` (/fleet/agents/:enrolment_id/adopt beside /fleet/agents/:agent_id/config):
    // both sides are compared with each parameter unnamed.
    const unnamed = (route: string) => route.replace(/:\w+(\|:\w+)*/g, ':_');
    const registered = registeredRoutes()
      .filter((r) => !r.startsWith('HEAD ') && !/^GET \/favicon\.ico$| \/console(\/|$)/.test(r))
      .map(unnamed);
    const described = operations().map((o) => unnamed(`${o.method.toUpperCase()} ${o.path.replace(/\{(\w+)\}/g, ':$1')}`));
    expect(registered.length).toBeGreaterThan(20);
    expect(described.sort()).toEqual(registered.sort());
    // The console's pages are there, and left out.
    expect(registeredRoutes()).toContain('GET /console/people');

    for (const { path, method, operation } of operations()) {
      const res = await fetch(`${base}${path}`, { method: method.toUpperCase() });
      await res.arrayBuffer();
      const needsKey = operation.security === undefined || operation.security.length > 0;
      expect(res.status === 401, `${method.toUpperCase()} ${path} without a key answered ${res.status}`).toBe(needsKey);
      expect(operation.responses[401] !== undefined).toBe(needsKey);
    }
  });
});

/**
 * Checks each answer against the document: its status is one the operation lists, and its JSON body validates
 * against that response's schema. Requests' bodies against the request body's schema. Problems are collected.
 */
function contractCheck(problems: string[]): Middleware {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const compiled = new Map<object, ValidateFunction>();
  const validate = (where: string, schema: object, value: unknown) => {
    let check = compiled.get(schema);
    if (!check) compiled.set(schema, (check = ajv.compile(inlined(schema))));
    if (!check(value)) problems.push(`${where}: ${ajv.errorsText(check.errors)}; ${JSON.stringify(value).slice(0, 300)}`);
  };
  return {
    async onRequest({ request, schemaPath }) {
      const operation = document.paths[schemaPath]?.[request.method.toLowerCase()];
      if (!operation) problems.push(`${request.method} ${schemaPath}: not in the document`);
      const query = new Set(operation?.parameters?.filter((p) => p.in === 'query').map((p) => p.name));
      for (const name of new URL(request.url).searchParams.keys()) {
        if (!query.has(name)) problems.push(`${request.method} ${schemaPath}: query parameter ${name} is not in the document`);
      }
      const schema = operation?.requestBody?.content?.['application/json']?.schema;
      if (schema && request.body) validate(`${request.method} ${schemaPath} request body`, schema, await request.clone().json());
      return undefined;
    },
    async onResponse({ request, response, schemaPath }) {
      const call = `${request.method} ${schemaPath}`;
      const answer = document.paths[schemaPath]?.[request.method.toLowerCase()]?.responses?.[response.status];
      if (!answer) {
        problems.push(`${call}: status ${response.status} is not in the document`);
        return undefined;
      }
      const schema = answer.content?.['application/json']?.schema;
      if (schema) validate(`${call} ${response.status}`, schema, await response.clone().json());
      return undefined;
    },
  };
}

/**
 * What the scenario and openapi-fetch's declarations name of the fetch API: declared here rather than with the DOM
 * library (1.9 MB to parse for a handful of names; the check is of the paths, parameters and bodies).
 */
const FETCH_GLOBALS = `
interface Headers { get(name: string): string | null; set(name: string, value: string): void }
type HeadersInit = Headers | Record<string, string> | [string, string][];
interface RequestInit { method?: string; headers?: HeadersInit; body?: unknown; signal?: unknown; cache?: string; credentials?: string; redirect?: string }
interface Request { readonly method: string; readonly url: string; readonly headers: Headers; clone(): Request; json(): Promise<unknown> }
interface Response { readonly status: number; readonly ok: boolean; readonly headers: Headers; clone(): Response; json(): Promise<unknown> }
interface URL { readonly href: string }
declare var Request: { prototype: Request; new (input: string | URL | Request, init?: RequestInit): Request };
declare function fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
`;

/**
 * The TypeScript types openapi-typescript generates from the document, and `file` type-checked against them (in
 * the compiler's view the types are a file beside it: written nowhere). Answers the compiler's messages.
 */
async function typeCheckAgainstDocument(file: string): Promise<string> {
  const generated = astToString(await openapiTS(document as unknown as Parameters<typeof openapiTS>[0]));
  const virtual = new Map([
    [join(dirname(file), 'serviceApi.d.ts'), generated],
    [join(dirname(file), 'fetchGlobals.d.ts'), FETCH_GLOBALS],
  ]);
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts'],
    types: [],
    skipLibCheck: true,
  };
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (name) => virtual.has(name) || fileExists.call(host, name);
  host.readFile = (name) => virtual.get(name) ?? readFile.call(host, name);
  host.getSourceFile = (name, language, ...rest) => {
    const text = virtual.get(name);
    return text !== undefined ? ts.createSourceFile(name, text, language) : getSourceFile.call(host, name, language, ...rest);
  };
  const program = ts.createProgram([file, ...virtual.keys()], options, host);
  return ts.formatDiagnostics(ts.getPreEmitDiagnostics(program), {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => tmp.path,
    getNewLine: () => '\n',
  });
}

describe('a client generated from the document', () => {
  it('invites users, lists them, sets a card, suspends one and reads the directory, every answer as the document says', async () => {
    const scenario = fileURLToPath(new URL('../support/openapiScenario.mts', import.meta.url));
    expect(await typeCheckAgainstDocument(scenario)).toBe('');

    // The key where the document's security schemes say a header carries it.
    const scheme = Object.values(document.components.securitySchemes).find((s) => s.type === 'apiKey' && s.in === 'header');
    const api = createClient({ baseUrl: base, headers: { [scheme!.name!]: keys.SUPER } });
    const problems: string[] = [];
    api.use(contractCheck(problems));
    const { operatorRound } = (await import(scenario)) as {
      operatorRound(api: unknown, door: { resourceId: number; uuid: string }): Promise<Record<string, unknown>>;
    };
    const round = await operatorRound(api, { resourceId: 12, uuid: DOOR_UUID });
    expect(problems).toEqual([]);

    const card = { number: '4213578', label: 'badge' };
    expect(round).toMatchObject({
      invited: { added: ['ada@example.org', 'grace@example.org'], invalid: ['not-an-address'] },
      listed: ['ada@example.org', 'grace@example.org'],
      cards: [card],
      suspended: 'grace@example.org is now SUSPENDED',
      directory: {
        full: true,
        users: [
          ['ada@example.org', 'ACTIVE'],
          ['grace@example.org', 'SUSPENDED'],
        ],
        cards: [card],
      },
      detail: [card],
      sources: { local: 3, ldap: false, source: ['local', 'local'] }, // ada, grace and the guest link's visitor
      // Since the first read: who the rest of the round changed, not everyone.
      since: { full: false },
      levels: { policies: [{ name: 'Day shift', member_count: 1 }] },
      oneLevel: { name: 'Day shift', email_ids: [round.ada] },
      refusals: {
        unknownUser: { status: 404 },
        promoteUser: { status: 400, error: 'ada@example.org is not a guest' },
        lock: { status: 503 },
        lockdown: { status: 503 },
        ldapSync: { status: 404, error: 'no LDAP source: server.identity.ldap is not configured' },
      },
    });
    // The compiler's check of the client takes seconds on a quiet machine, and several times that on a loaded one.
  }, 180_000);
});
