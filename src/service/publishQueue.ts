import type { ChangeFeed } from './sql/changeFeed.js';
import type { SqlDb } from './sql/sqlDb.js';

/**
 * What the broker is owed: the directory revision, a guest link (its message or tombstone, then the index), a
 * lockdown's scope, the holidays, or everything (`all`: a new publisher takes over, the daily re-signing).
 */
export type PublishKind = 'revision' | 'link' | 'lockdown' | 'holidays' | 'all';

export interface OwedMessage {
  id: number;
  kind: PublishKind;
  /** The link's id, the lockdown's scope name; '' for the others. */
  subject: string;
}

/**
 * The publish queue (table publish_queue): a change writes what it owes the doors in its own transaction, so a
 * change committed is a message owed, whichever process made it and whatever happens to it next; the publisher
 * (statePublisher.ts) sends it from the database's state and deletes the row once the broker has it.
 */
export class PublishQueue {
  constructor(
    private readonly db: SqlDb,
    private readonly feed: ChangeFeed,
  ) {}

  /** Owes the broker `kind` (of `subject`): in the caller's transaction when there is one; the publisher is told at its commit. */
  async owe(kind: PublishKind, subject = ''): Promise<void> {
    await this.db.run('INSERT INTO publish_queue (kind, subject) VALUES (?, ?)', [kind, subject]);
    await this.feed.notify('publish');
  }

  /** The oldest rows owed, at most `limit`, in the order they were written. */
  next(limit: number): Promise<OwedMessage[]> {
    return this.db.all<OwedMessage>('SELECT id, kind, subject FROM publish_queue ORDER BY id LIMIT ?', [limit]);
  }

  /**
   * These rows went out: off the queue, those and no others. Not "every id up to the last": on PostgreSQL an id is
   * taken at the insert, so a change with a smaller id may commit while the batch is being sent, unsent.
   */
  async sent(rows: readonly OwedMessage[]): Promise<void> {
    await this.db.run(`DELETE FROM publish_queue WHERE id ${this.db.inJsonIds}`, [JSON.stringify(rows.map((row) => row.id))]);
  }

  /** Every row up to `id`, sent or not, off the queue (a test that starts from an empty queue). */
  async done(id: number): Promise<void> {
    await this.db.run('DELETE FROM publish_queue WHERE id <= ?', [id]);
  }
}
