import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { openServiceDatabase, type ServiceDb } from '../../src/service/database.js';
import type { ServiceResource } from '../../src/service/options.js';
import type { ServiceDeps } from '../../src/service/routeContext.js';
import { buildService } from '../../src/service/server.js';
import { systemClock } from '../../src/util/clock.js';
import { DOOR_UUID } from './cli.js';

const FRONT_DOOR: ServiceResource = { resourceId: 12, uuid: DOOR_UUID, type: 'DOOR', name: 'Front door' };

/**
 * The reference service as every test builds it, not yet started: on `db`, a silent logger, the system clock, the
 * front door as its one resource, no MQTT; `overrides` replace or add any of its deps (resources, limits, the
 * console, a logger to read).
 */
export function testService(db: ServiceDb, overrides: Partial<ServiceDeps> = {}): ReturnType<typeof buildService> {
  return buildService({ db, clock: systemClock, logger: pino({ level: 'silent' }), resources: [FRONT_DOOR], lockReplyTimeoutMs: 1000, ...overrides });
}

/**
 * The reference service in this process (for fastify's inject), on a real database file, with the front door as
 * its one resource (or `resources`) and a SUPER key in `headers`. No MQTT.
 */
export async function inProcessService(
  dbFile: string,
  resources: ServiceResource[] = [FRONT_DOOR],
): Promise<{ db: ServiceDb; app: ReturnType<typeof buildService>; headers: Record<string, string> }> {
  const db = openServiceDatabase(dbFile);
  const headers = { authorization: `Bearer ${new ApiKeys(db).create('SUPER', 0, Date.now())}` };
  const app = testService(db, { resources });
  await app.ready();
  return { db, app, headers };
}

/**
 * The reference service listening on a free loopback port (real HTTP, for clients that read raw bytes: compressed
 * answers, answers held open, the console's live stream), on a real database file, with `deps` added (load limits,
 * the build hook, the console); keys of each rank in `keys`.
 */
export async function listeningService(
  dbFile: string,
  deps: Pick<ServiceDeps, 'loadLimits' | 'onDirectoryBuild' | 'console'> = {},
): Promise<{ db: ServiceDb; app: ReturnType<typeof buildService>; port: number; keys: Record<'SUPER' | 'DOOR' | 'REGULAR', string> }> {
  const db = openServiceDatabase(dbFile);
  const apiKeys = new ApiKeys(db);
  const keys = {
    SUPER: apiKeys.create('SUPER', 0, Date.now()),
    DOOR: apiKeys.create('DOOR', 0, Date.now()),
    REGULAR: apiKeys.create('REGULAR', 0, Date.now()),
  };
  const app = testService(db, deps);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { db, app, port: (app.server.address() as AddressInfo).port, keys };
}
