import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { DoorAgentError, describeFsError, errorCode } from '../util/errors.js';
import { SERVICE_MIGRATIONS } from './migrations.js';
import { SqliteDb } from './sql/sqliteDb.js';

export type ServiceDb = Database.Database;

/**
 * Opens (creating if needed) the reference service's database, `service.db`: WAL, synchronous=FULL, schema
 * migrations by PRAGMA user_version. Unlike a door's cache, this file is the organization's only copy of its
 * users, cards and keys: nothing here ever suggests deleting or replacing it; a damaged file is left as it is
 * for its owner to restore from a backup.
 * @internal the stores use openServiceSqlite; tests and the bench open the file itself
 */
export function openServiceDatabase(file: string): ServiceDb {
  const isNew = !existsSync(file);
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o750 });
    if (isNew) closeSync(openSync(file, 'a', 0o600)); // API key hashes and card numbers: owner only
  } catch (err) {
    throw new DoorAgentError(`cannot create the service database ${file}: ${describeFsError(err)}`, { cause: err });
  }
  let db: ServiceDb;
  try {
    db = new Database(file);
  } catch (err) {
    throw new DoorAgentError(`cannot open the service database ${file}: ${describeFsError(err)}`, { cause: err });
  }
  try {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > SERVICE_MIGRATIONS.length) {
      throw new DoorAgentError(
        `the service database ${file} has schema version ${version}, newer than this door-agent knows (${SERVICE_MIGRATIONS.length}): upgrade door-agent`,
      );
    }
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
    SERVICE_MIGRATIONS.slice(version).forEach((sql, i) => {
      db.transaction(() => {
        db.exec(sql);
        db.pragma(`user_version = ${version + i + 1}`);
      })();
    });
  } catch (err) {
    db.close();
    if (err instanceof DoorAgentError) throw err;
    const code = errorCode(err);
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
      throw new DoorAgentError(
        `${file} is not a readable SQLite database (${(err as Error).message}). It was left untouched: check server.dataDir, ` +
          'or restore the file from your backup (sqlite3 service.db ".backup copy.db" makes one while the service runs)',
        { cause: err },
      );
    }
    throw new DoorAgentError(`cannot use the service database ${file}: ${(err as Error).message}`, { cause: err });
  }
  return db;
}

/** The service's SQLite database (server.dataDir/service.db) behind SqlDb, as the stores use it. */
export function openServiceSqlite(file: string): SqliteDb {
  return new SqliteDb(openServiceDatabase(file));
}
