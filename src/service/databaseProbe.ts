import type { SqlDb } from './sql/sqlDb.js';

/**
 * Whether this process can run a trivial query on its database, whichever engine holds it (GET /healthz,
 * routesHealth.ts): resolves when it can, rejects with the driver's error when it cannot.
 */
export async function databaseReachable(db: SqlDb): Promise<void> {
  await db.value('SELECT 1');
}
