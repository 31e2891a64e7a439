import type { SqlDb } from '../sql/sqlDb.js';

/**
 * For a reader of audit_events in event_id order after a cursor (the syslog export, the webhooks' fan-out): on
 * PostgreSQL an event_id is taken at the insert, so a smaller one may commit after a larger one is read, and a
 * cursor moved past the larger would pass the smaller over for ever. Called inside the reader's transaction and
 * before its first query (the snapshot is taken at the first query, after the lock), a SHARE lock waits for the
 * inserts under way to commit and holds new ones for the moment of the read. SQLite has one writer: nothing to do.
 */
export async function waitForEventInserts(db: SqlDb): Promise<void> {
  if (db.engine === 'postgres') await db.run('LOCK TABLE audit_events IN SHARE MODE');
}
