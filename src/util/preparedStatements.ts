import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
type Db = Database.Database;

const caches = new WeakMap<Db, Map<string, Statement>>();

/**
 * The connection's prepared statement for `sql`, prepared on first use and kept for the connection's life: a
 * sync runs the same few dozen statements each time, and preparing them again cost more than running them on a
 * one-user delta. `pluck` statements are kept apart (better-sqlite3's pluck mode is a property of the statement).
 * Callers must not change a statement's modes (raw, expand) other than through this function.
 */
export function statement(db: Db, sql: string, options: { pluck?: boolean } = {}): Statement {
  let cache = caches.get(db);
  if (cache === undefined) {
    cache = new Map();
    caches.set(db, cache);
  }
  const key = options.pluck ? `pluck\u0000${sql}` : sql;
  let prepared = cache.get(key);
  if (prepared === undefined) {
    prepared = db.prepare(sql);
    if (options.pluck) prepared.pluck();
    cache.set(key, prepared);
  }
  return prepared;
}
