import type { SqlDb } from './sql/sqlDb.js';

/**
 * A text that moves whenever a change is committed to the database, by this process or any other: an answer read
 * at one stamp is still true while the stamp is the same (userList.ts keeps its serialized answers so). Read inside
 * a transaction, it is the stamp of what that transaction reads.
 * - SQLite: the connection's own change counter (`total_changes()`: every row any INSERT, UPDATE or DELETE of this
 *   process touched) and its `data_version` (moves when another connection or process commits: `sqlite3`, a
 *   second handle in a test).
 * - PostgreSQL: the snapshot (`pg_current_snapshot()`: the transactions in progress and the next one to come), which
 *   changes as any transaction that wrote ends, in any database of the cluster (a change elsewhere only costs a
 *   rebuild).
 * Engine-specific by nature: the one place that asks each engine in its own words.
 */
export async function changeStamp(db: SqlDb): Promise<string> {
  if (db.engine === 'postgres') return String(await db.value('SELECT pg_current_snapshot()::text'));
  return String(await db.value("SELECT total_changes() || '/' || (SELECT data_version FROM pragma_data_version())"));
}
