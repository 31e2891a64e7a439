import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Env } from '../../util/secretFiles.js';
import { openServiceSqlite } from '../database.js';
import { LocalChangeFeed, PostgresChangeFeed, type ChangeFeed } from './changeFeed.js';
import { AdvisoryLockLeadership, SoleLeader, type Leadership } from './leadership.js';
import { openPostgres } from './openPostgres.js';
import type { DatabaseOptions } from './postgresConfig.js';
import type { SqlDb } from './sqlDb.js';

/** The service's database with what several processes on it need: news of each other's changes, one publisher. */
export interface ServiceStorage {
  db: SqlDb;
  feed: ChangeFeed;
  leadership: Leadership;
  /** Ends the feed and the publisher lock, then the database. */
  close(): Promise<void>;
}

/**
 * Opens the service's storage: PostgreSQL when `database` is given (LISTEN/NOTIFY between the processes, the
 * publisher chosen by an advisory lock), else SQLite's dataDir/service.db (one process: a local feed, always the
 * publisher). A refusal to open is a configuration error (exit 78) naming what and where.
 */
export async function openStorage(options: { dataDir: string; database?: DatabaseOptions | undefined }, env: Env, logger: Logger): Promise<ServiceStorage> {
  if (options.database === undefined) {
    const db = openServiceSqlite(join(options.dataDir, 'service.db'));
    const feed = new LocalChangeFeed(db);
    const leadership = new SoleLeader();
    return { db, feed, leadership, close: async () => db.close() };
  }
  const log = logger.child({ component: 'database' });
  const db = await openPostgres(options.database, env, log);
  const feed = new PostgresChangeFeed(db, db.connection, log);
  const leadership = new AdvisoryLockLeadership(db.connection, log);
  await feed.start();
  await leadership.start();
  return {
    db,
    feed,
    leadership,
    async close() {
      await leadership.close();
      await feed.close();
      await db.close();
    },
  };
}
