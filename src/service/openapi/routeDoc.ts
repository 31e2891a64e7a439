import type * as z from 'zod';

/**
 * What a route of the service declares of itself where it is registered (docs/openapi.md): its parameters and
 * its answer as the very zod schemas its handler validates with, who may call it, and the statuses it gives.
 * GET /openapi.json is made from these (document.ts); no part of it is written beside the routes.
 */

/** Who may call a route: no key, any key (a DOOR key reads too), or a key of at least this rank. */
export type RouteKey = 'none' | 'any' | 'ADMIN' | 'SUPER';

/** The statuses a route may give besides 200 and the ones every route gives (document.ts adds 400, 401, 403, 415, 503). */
export type RouteStatus = 304 | 404 | 409 | 410 | 413 | 502 | 503 | 504;

export interface RouteDoc {
  /** One line: what the call does. */
  summary: string;
  /** What a caller needs beyond the summary (Markdown). */
  description?: string;
  /** Its group in the document: Users, Groups, Guest links, Doors, Directory, Access levels, Service. */
  tag: string;
  key: RouteKey;
  /**
   * The zod object its handler validates the parameters with (params.ts: the query and the body merged). The
   * document puts them in the query string of a GET or DELETE, in a JSON or form body of a POST or PUT.
   */
  params?: z.ZodObject;
  /** The zod object of its path's `:name` parameters (each one of the path, in the document as `{name}`). */
  pathParams?: z.ZodObject;
  /** Request headers it reads, as a zod object (their names in lower case). */
  headers?: z.ZodObject;
  /**
   * The body is raw bytes of this type (an upload: application/octet-stream), not parameters: `params` then go in
   * the query string, whatever the method.
   */
  rawBody?: { type: string; description: string };
  /** The JSON body of its 200 answer (of `answerStatus`'s, when given). */
  answer: z.ZodType;
  /** Its success status when not 200: 201, something made. */
  answerStatus?: 201;
  /** The 200 answer is raw bytes of this type (a download), not `answer`'s JSON. */
  rawAnswer?: { type: string; description: string };
  /** Headers of its 200 answer, each with what it says. */
  answerHeaders?: Record<string, string>;
  /** Its other statuses, each with when it is given. */
  statuses?: Partial<Record<RouteStatus, string>>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route as GET /openapi.json describes it (openapi/routeDoc.ts). */
    openapi?: RouteDoc;
  }
}

/** Route options that describe the route: `app.get(path, documented(doc), handler)`; `options` (their config too) are kept beside. */
export function documented<T extends object>(doc: RouteDoc, options?: T): T & { config: { openapi: RouteDoc } } {
  const config = Object.assign({}, (options as { config?: object } | undefined)?.config, { openapi: doc });
  return Object.assign({}, options, { config }) as T & { config: { openapi: RouteDoc } };
}
