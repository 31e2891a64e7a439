import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { describe, inject, it } from 'vitest';
import { openServiceDatabase } from '../../src/service/database.js';
import { openPostgres } from '../../src/service/sql/openPostgres.js';
import type { SqlDb } from '../../src/service/sql/sqlDb.js';
import { SqliteDb } from '../../src/service/sql/sqliteDb.js';
import { PG_PASSWORD, PG_USER } from './postgres.js';

/**
 * The engine the service's tests run on: SQLite, or PostgreSQL in the `postgres` project of vitest.config.ts
 * (DOOR_TEST_ENGINE=postgres), which runs the same service test files again against the run's cluster.
 */
export const ENGINE: 'sqlite' | 'postgres' = process.env.DOOR_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';

/**
 * A describe for one engine only: registered on that engine's run, absent from the other's (not reported as
 * skipped there, so a skip in the report is always a real one).
 */
export function describeOn(engine: typeof ENGINE, name: string, body: () => void): void {
  if (ENGINE === engine) describe(name, body);
}
/** An it for one engine only (describeOn's note). */
export function itOn(engine: typeof ENGINE, name: string, body: () => Promise<void> | void, timeout?: number): void {
  if (ENGINE === engine) it(name, body, timeout);
}

/** Where a test's service database is: the SQLite file, or the PostgreSQL database's URL and password file. */
export type TestDbLocation = { engine: 'sqlite'; file: string } | { engine: 'postgres'; url: string; passwordFile: string };

/**
 * A new, empty service database for a test on this run's engine: `dir/name.db` on SQLite, a database of its own
 * on PostgreSQL. Its location too, for a service process (server.database, or server.dataDir = dir).
 */
export async function newServiceDb(dir: string, name = 'service'): Promise<{ db: SqlDb; location: TestDbLocation }> {
  if (ENGINE === 'sqlite') {
    const file = join(dir, `${name}.db`);
    return { db: new SqliteDb(openServiceDatabase(file)), location: { engine: 'sqlite', file } };
  }
  const cluster = inject('postgres');
  const database = `${name.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ host: '127.0.0.1', port: cluster.port, user: PG_USER, password: PG_PASSWORD, database: 'postgres' });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
  } finally {
    await admin.end();
  }
  const url = `postgres://${PG_USER}@127.0.0.1:${cluster.port}/${database}`;
  const db = await openPostgres({ url, passwordFile: cluster.passwordFile, maxConnections: 10 }, {}, pino({ level: 'silent' }));
  return { db, location: { engine: 'postgres', url, passwordFile: cluster.passwordFile } };
}
