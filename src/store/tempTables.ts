import type { Db } from './database.js';
import { statement } from '../util/preparedStatements.js';

/** Per connection: the groups of temporary tables created, and the tables that may hold rows. */
interface ConnectionTables {
  created: Set<string>;
  inUse: Set<string>;
}
const connections = new WeakMap<Db, ConnectionTables>();

function tablesOf(db: Db): ConnectionTables {
  let tables = connections.get(db);
  if (tables === undefined) {
    tables = { created: new Set(), inUse: new Set() };
    connections.set(db, tables);
  }
  return tables;
}

/**
 * The connection's temporary tables named `name` (created by `ddl` on first use), empty and marked in use: they
 * stay for the connection's life. Creating and dropping them per sync changed the schema each time, which made
 * every statement that reads them prepare again; on a one-user delta that was most of the sync's work.
 */
export function tempTables(db: Db, name: string, ddl: string, tables: readonly string[]): void {
  const state = tablesOf(db);
  if (!state.created.has(name)) {
    db.exec(ddl);
    state.created.add(name);
  }
  clearTables(db, tables);
  for (const table of tables) state.inUse.add(table);
}

/**
 * Empties temporary tables (their pages go back to the temporary database's free list). A table counts as empty
 * only once a DELETE outside any transaction went through: one inside a transaction that is then rolled back
 * would leave a stage's rows for the next sync.
 */
export function clearTables(db: Db, tables: readonly string[]): void {
  const state = tablesOf(db);
  for (const table of tables) {
    if (!state.inUse.has(table)) continue;
    statement(db, `DELETE FROM temp.${table}`).run();
    if (!db.inTransaction) state.inUse.delete(table);
  }
}
