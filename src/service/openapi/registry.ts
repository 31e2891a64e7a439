import type { FastifyInstance } from 'fastify';
import * as z from 'zod';
import { VERSION } from '../../version.js';
import { OPENAPI_PATH } from '../keyCheck.js';
import { openApiDocument, type DescribedRoute } from './document.js';
import { documented } from './routeDoc.js';

const documentSchema = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.looseObject({})),
});

/**
 * Collects every route registered from now on with a description (routeDoc.ts's `documented`), in the order
 * they come; a GET's HEAD twin is not listed apart. Call it before the routes are registered.
 */
export function collectRouteDocs(app: FastifyInstance): DescribedRoute[] {
  const routes: DescribedRoute[] = [];
  app.addHook('onRoute', (route) => {
    const doc = route.config?.openapi;
    if (doc === undefined) return;
    for (const method of [route.method].flat()) if (method !== 'HEAD') routes.push({ method, path: route.url, doc });
  });
  return routes;
}

/**
 * GET /openapi.json: the OpenAPI 3.1 document of `routes` (document.ts), made at the first request, once every
 * route is registered, and served as the same bytes after. No key: it holds no data, only what the calls take.
 */
export function registerOpenApiRoute(app: FastifyInstance, routes: readonly DescribedRoute[]): void {
  let json: string | null = null;
  app.get(
    OPENAPI_PATH,
    documented({
      summary: 'This document: what every call of the service takes and answers (OpenAPI 3.1).',
      tag: 'Service',
      key: 'none',
      answer: documentSchema,
    }),
    async (_request, reply) => {
      json ??= JSON.stringify(openApiDocument(routes, VERSION));
      return reply.type('application/json; charset=utf-8').send(json);
    },
  );
}
