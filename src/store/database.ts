import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS } from './migrations.js';
import { DoorAgentError, describeFsError, errorCode } from '../util/errors.js';

export type Db = Database.Database;

export function cachePath(dataDir: string): string {
  return join(dataDir, 'cache.db');
}

/**
 * The cache could not be read for a decision (a damaged page, an I/O error). The door stays locked; the
 * message says how to rebuild the cache, which is a copy of the service's data and safe to rebuild.
 */
export class CacheUnreadableError extends DoorAgentError {
  constructor(cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      `the cache cannot be read (${reason}); the door stays locked. Rebuild the cache: stop door-agent, move ` +
        'cache.db (and its -wal and -shm files) out of agent.dataDir, then run door-agent sync (or door-agent import FILE) and start door-agent again',
      { cause },
    );
    this.name = 'CacheUnreadableError';
  }
}

function notADatabase(file: string, err: unknown): DoorAgentError {
  return new DoorAgentError(
    `${file} is not a door-agent cache (not a SQLite database). It was left untouched: ` +
      'move it aside, then run door-agent import to rebuild the cache.',
    { cause: err },
  );
}

/**
 * Opens (creating if needed) the agent's SQLite cache: WAL, synchronous=FULL so that a committed door state or
 * event survives a power cut, then brings the schema up to date.
 */
export function openDatabase(
  file: string,
  options: { readonly?: boolean; busyTimeoutMs?: number } = {},
): Db {
  const readonly = options.readonly ?? false;
  const migrations = MIGRATIONS;
  const isNew = !existsSync(file);
  if (readonly && isNew) {
    throw new DoorAgentError(`no cache at ${file}: provision it with door-agent import first`);
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
    throw new DoorAgentError(`cannot open the cache ${file}: ${describeFsError(err)}`, { cause: err });
  }
  try {
    // The first statement reads the header: a file that is not SQLite fails here, before anything is written.
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > migrations.length) {
      throw new DoorAgentError(
        `the database ${file} has schema version ${version}, newer than this door-agent knows (${migrations.length}): ` +
          'upgrade door-agent, or move the cache aside and import again',
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
    if (!readonly) migrate(db, migrations);
    else if (version < migrations.length) {
      throw new DoorAgentError(`the cache ${file} is from an older door-agent: run any writing command to upgrade it`);
    }
    if (options.busyTimeoutMs !== undefined) db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs))}`);
  } catch (err) {
    db.close();
    if (err instanceof DoorAgentError) throw err;
    if (errorCode(err) === 'SQLITE_NOTADB' || errorCode(err) === 'SQLITE_CORRUPT') throw notADatabase(file, err);
    throw new DoorAgentError(`cannot use the cache ${file}: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  return db;
}

function migrate(db: Db, migrations: readonly string[]): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  migrations.slice(current).forEach((sql, i) => {
    db.transaction(() => {
      db.exec(sql);
      db.pragma(`user_version = ${current + i + 1}`);
    })();
  });
}
