import type { AddressInfo } from 'node:net';
import { basename, dirname } from 'node:path';
import { pino } from 'pino';
import { ApiKeys } from '../../src/service/apiKeys.js';
import type { ServiceResource } from '../../src/service/options.js';
import type { ServiceDeps } from '../../src/service/routeContext.js';
import { buildService } from '../../src/service/server.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { systemClock } from '../../src/util/clock.js';
import { DOOR_UUID } from './cli.js';
import { newServiceDb } from './serviceDb.js';

const FRONT_DOOR: ServiceResource = { resourceId: 12, uuid: DOOR_UUID, type: 'DOOR', name: 'Front door' };

/**
 * The reference service as every test builds it, not yet started: on `db`, a silent logger, the system clock, the
 * front door as its one resource, no MQTT; `overrides` replace or add any of its deps (resources, limits, the
 * console, a logger to read).
 */
export function testService(db: SqlDb, overrides: Partial<ServiceDeps> = {}): ReturnType<typeof buildService> {
  return buildService({ db, clock: systemClock, logger: pino({ level: 'silent' }), resources: [FRONT_DOOR], lockReplyTimeoutMs: 1000, ...overrides });
}

/**
 * A new service database on this run's engine (serviceDb.ts), named after `dbFile`: that file on SQLite
 * (`dir/name.db`), a database of its own on PostgreSQL.
 */
const databaseFor = (dbFile: string) => newServiceDb(dirname(dbFile), basename(dbFile).replace(/\.db$/, ''));

/**
 * The reference service in this process (for fastify's inject), on a new database of the run's engine (the file
 * `dbFile` on SQLite), with the front door as its one resource (or `resources`) and a SUPER key in `headers`. No MQTT.
 */
export async function inProcessService(
  dbFile: string,
  resources: ServiceResource[] = [FRONT_DOOR],
): Promise<{ db: SqlDb; app: ReturnType<typeof buildService>; headers: Record<string, string> }> {
  const { db } = await databaseFor(dbFile);
  const headers = { authorization: `Bearer ${await new ApiKeys(db).create('SUPER', 0, Date.now())}` };
  const app = testService(db, { resources });
  await app.ready();
  return { db, app, headers };
}

/**
 * The reference service listening on a free loopback port (real HTTP, for clients that read raw bytes: compressed
 * answers, answers held open, the console's live stream), on a new database of the run's engine (the file `dbFile`
 * on SQLite), with `deps` added (load limits, the build hook, the console); keys of each rank in `keys`.
 */
export async function listeningService(
  dbFile: string,
  deps: Pick<ServiceDeps, 'loadLimits' | 'onDirectoryBuild' | 'console' | 'storedEvents'> = {},
  /** Rows written into the new database before the service opens it (a directory to answer). */
  seed?: (db: SqlDb) => Promise<void>,
): Promise<{ db: SqlDb; app: ReturnType<typeof buildService>; port: number; keys: Record<'SUPER' | 'DOOR' | 'REGULAR', string> }> {
  const { db } = await databaseFor(dbFile);
  await seed?.(db);
  const apiKeys = new ApiKeys(db);
  const keys = {
    SUPER: await apiKeys.create('SUPER', 0, Date.now()),
    DOOR: await apiKeys.create('DOOR', 0, Date.now()),
    REGULAR: await apiKeys.create('REGULAR', 0, Date.now()),
  };
  const app = testService(db, deps);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { db, app, port: (app.server.address() as AddressInfo).port, keys };
}
