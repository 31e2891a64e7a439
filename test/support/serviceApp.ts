import { pino } from 'pino';
import { ApiKeys } from '../../src/service/apiKeys.js';
import { openServiceDatabase, type ServiceDb } from '../../src/service/database.js';
import type { ServiceResource } from '../../src/service/options.js';
import { buildService } from '../../src/service/server.js';
import { systemClock } from '../../src/util/clock.js';
import { DOOR_UUID } from './cli.js';

/**
 * The reference service in this process (for fastify's inject), on a real database file, with the front door as
 * its one resource (or `resources`) and a SUPER key in `headers`. No MQTT.
 */
export async function inProcessService(
  dbFile: string,
  resources: ServiceResource[] = [{ resourceId: 12, uuid: DOOR_UUID, type: 'DOOR', name: 'Front door' }],
): Promise<{ db: ServiceDb; app: ReturnType<typeof buildService>; headers: Record<string, string> }> {
  const db = openServiceDatabase(dbFile);
  const headers = { authorization: `Bearer ${new ApiKeys(db).create('SUPER', 0, Date.now())}` };
  const app = buildService({
    db,
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    resources,
    lockReplyTimeoutMs: 1000,
  });
  await app.ready();
  return { db, app, headers };
}
