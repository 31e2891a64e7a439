import type { FastifyInstance } from 'fastify';
import { ApiKeys } from '../../src/service/apiKeys.js';
import type { ScimSourceOptions } from '../../src/service/options.js';
import type { ServiceDeps } from '../../src/service/routeContext.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { testService } from './serviceApp.js';
import { newServiceDb } from './serviceDb.js';

/** An answer of the service: status, headers, and the body parsed when there is one. */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: Record<string, unknown> & { Resources?: Array<Record<string, unknown>> };
}

export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

/**
 * The reference service in this process with SCIM enabled (`scim`, server.identity.scim), on a new database of the
 * run's engine: a SCIM token (scope scim, ADMIN), a SUPER API key, and callers of both. `deps` adds to the service's.
 */
export async function scimService(
  dir: string,
  name: string,
  scim: ScimSourceOptions = { enabled: true },
  deps: Partial<ServiceDeps> = {},
): Promise<{
  db: SqlDb;
  app: FastifyInstance;
  token: string;
  apiKey: string;
  /** A SCIM call (application/scim+json) with the token, or `headers` instead. */
  scim(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
  /** A call to the service's own API with the SUPER key. */
  api(method: string, path: string, body?: unknown): Promise<Answer>;
  close(): Promise<void>;
}> {
  const { db } = await newServiceDb(dir, name);
  const keys = new ApiKeys(db);
  const token = await keys.create('ADMIN', 0, Date.now(), 'scim');
  const apiKey = await keys.create('SUPER', 0, Date.now());
  const app = testService(db, Object.assign({ identity: { scim } }, deps));
  await app.ready();
  const call = async (method: string, url: string, body: unknown, headers: Record<string, string>): Promise<Answer> => {
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers,
      ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: res.statusCode, headers: res.headers, body: res.body === '' ? {} : (JSON.parse(res.body) as Answer['body']) };
  };
  return {
    db,
    app,
    token,
    apiKey,
    scim: (method, path, body, headers) =>
      call(
        method,
        `/scim/v2${path}`,
        body,
        headers ?? { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }) },
      ),
    api: (method, path, body) =>
      call(method, path, body, { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }),
    close: async () => {
      await app.close();
      await db.close();
    },
  };
}
