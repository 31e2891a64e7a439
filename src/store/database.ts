import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { damageReason, isCacheDamage, REBUILD_BY_HAND } from './cacheDamage.js';
import { MIGRATIONS, STATE_MIGRATIONS, type Migration } from './migrations.js';
import { DoorAgentError, describeFsError, errorCode } from '../util/errors.js';

export type Db = Database.Database;

export function cachePath(dataDir: string): string {
  return join(dataDir, 'cache.db');
}

/** The daemon's often-written state (audit log and outbox, replay cache, its status), beside the cache. */
export function statePath(dataDir: string): string {
  return join(dataDir, 'state.db');
}

/** Which database a file is: the cache (a copy of the service's data) or the daemon's state. */
interface Schema {
  what: string;
  migrations: readonly Migration[];
  /** What to do with a file that is not a database of this kind. */
  advice: string;
}

const CACHE: Schema = {
  what: 'cache',
  migrations: MIGRATIONS,
  advice:
    'a damaged cache (a failing SD card) or another file: move it aside, then run door-agent import (or sync) to rebuild the cache ' +
    '(door-agent run, with a service configured, does both by itself)',
};
const STATE: Schema = {
  what: 'state database',
  migrations: STATE_MIGRATIONS,
  advice: 'move it aside and start door-agent again (a new one is created; the events in it that were not yet published are lost)',
};

/**
 * The cache could not be read for a decision (a damaged page, an I/O error). The door stays locked; the
 * message says how to rebuild the cache, which is a copy of the service's data and safe to rebuild.
 */
export class CacheUnreadableError extends DoorAgentError {
  constructor(cause: unknown) {
    const reason = damageReason(cause);
    const damaged = isCacheDamage(cause);
    super(
      `the cache ${damaged ? 'is damaged' : 'cannot be read'} (${reason}); the door stays locked. Rebuild the cache: ` +
        (damaged ? 'door-agent run rebuilds it from the service by itself when a service is configured (the damaged file kept aside); otherwise ' : '') +
        REBUILD_BY_HAND,
      { cause },
    );
    this.name = 'CacheUnreadableError';
  }
}

function notADatabase(file: string, schema: Schema, err: unknown): DoorAgentError {
  return new DoorAgentError(`${file} is not a door-agent ${schema.what} (not a SQLite database). It was left untouched: ${schema.advice}.`, {
    cause: err,
  });
}

/**
 * Opens (creating if needed) the agent's SQLite cache: WAL, synchronous=FULL so that a committed event survives
 * a power cut, then brings the schema up to date.
 */
export function openDatabase(file: string, options: { readonly?: boolean; busyTimeoutMs?: number } = {}): Db {
  return openSchema(file, CACHE, options);
}

/** Opens (creating if needed) the daemon's state database, state.db: the audit log, the replay cache, its status. */
export function openStateDatabase(file: string, options: { readonly?: boolean; busyTimeoutMs?: number } = {}): Db {
  return openSchema(file, STATE, options);
}

function openSchema(file: string, schema: Schema, options: { readonly?: boolean; busyTimeoutMs?: number }): Db {
  const readonly = options.readonly ?? false;
  const migrations = schema.migrations;
  const isNew = !existsSync(file);
  if (readonly && isNew) {
    throw new DoorAgentError(
      schema === CACHE
        ? `no cache at ${file}: provision it with door-agent import first`
        : `no ${schema.what} at ${file} yet: door-agent run (or any writing command) creates it`,
    );
  }
  if (!readonly) {
    try {
      mkdirSync(dirname(file), { recursive: true, mode: 0o750 });
    } catch (err) {
      throw new DoorAgentError(`cannot create the data directory ${dirname(file)}: ${describeFsError(err)}`, { cause: err });
    }
  }
  let db: Db;
  try {
    // Created 0600 before SQLite opens it: the -wal and -shm files then get the same mode (they hold card numbers).
    if (isNew) closeSync(openSync(file, 'a', 0o600));
    db = new Database(file, { readonly, fileMustExist: readonly });
  } catch (err) {
    throw new DoorAgentError(`cannot open the ${schema.what} ${file}: ${describeFsError(err)}`, { cause: err });
  }
  try {
    // The first statement reads the header: a file that is not SQLite fails here, before anything is written.
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > migrations.length) {
      throw new DoorAgentError(
        `the ${schema.what} ${file} has schema version ${version}, newer than this door-agent knows (${migrations.length}): ` +
          `upgrade door-agent, or ${schema.advice}`,
      );
    }
    if (!readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
    }
    // Bounded page caches (8 MB main, 2 MB temp for import staging): the agent lives on a Pi-class board.
    db.pragma('cache_size = -8000');
    db.pragma('temp.cache_size = -2000');
    db.pragma('foreign_keys = ON');
    // Migrations may wait for another writer; the daemon then shortens the wait (see app.ts).
    db.pragma('busy_timeout = 5000');
    if (!readonly) migrate(db, file, migrations);
    else if (version < migrations.length) {
      throw new DoorAgentError(`the ${schema.what} ${file} is from an older door-agent: run any writing command to upgrade it`);
    }
    if (options.busyTimeoutMs !== undefined) db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs))}`);
  } catch (err) {
    db.close();
    if (err instanceof DoorAgentError) throw err;
    if (errorCode(err) === 'SQLITE_NOTADB' || errorCode(err) === 'SQLITE_CORRUPT') throw notADatabase(file, schema, err);
    throw new DoorAgentError(`cannot use the ${schema.what} ${file}: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  return db;
}

/** Applies the migrations after user_version: SQL in one transaction each; a step in code runs its own. */
function migrate(db: Db, file: string, migrations: readonly Migration[]): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  migrations.slice(current).forEach((migration, i) => {
    const version = current + i + 1;
    if (typeof migration === 'function') {
      migration(db, file, { openState: (path) => openStateDatabase(path) });
      db.pragma(`user_version = ${version}`);
      return;
    }
    db.transaction(() => {
      db.exec(migration);
      db.pragma(`user_version = ${version}`);
    })();
  });
}
