import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';
import { statement } from '../util/preparedStatements.js';
import { clearTables, tempTables } from './tempTables.js';

/**
 * The temporary tables a sync stages beside SnapshotStage's (snapshotStage.ts), owned here so that their DDL and
 * names live in the store: the scope of a delta (which users it replaces or removes; mergeStage reads it when
 * `scoped`), the ids a delta removes, and the users a seed-style list gave without user_tag. Like the stage's,
 * they are the connection's for its life (tempTables.ts), emptied after each use.
 */
export const SCOPE_TABLE = 'temp.stage_scope';

const SCOPE_DDL = `CREATE TEMP TABLE IF NOT EXISTS stage_scope (email_id INTEGER PRIMARY KEY) STRICT;
  CREATE TEMP TABLE IF NOT EXISTS stage_removed (email_id INTEGER PRIMARY KEY) STRICT;`;

/** A GET /directory delta's scope: the users it lists and the users it removes. */
export class DeltaScope {
  private readonly inScope: Statement;
  private readonly removed: Statement;

  constructor(private readonly db: Db) {
    tempTables(db, 'scope', SCOPE_DDL, ['stage_scope', 'stage_removed']);
    this.inScope = statement(db, `INSERT OR IGNORE INTO ${SCOPE_TABLE} VALUES (?)`);
    this.removed = statement(db, 'INSERT OR IGNORE INTO temp.stage_removed VALUES (?)');
  }

  addListed(emailId: number): void {
    this.inScope.run(emailId);
  }

  addRemoved(emailId: number): void {
    this.removed.run(emailId);
    this.inScope.run(emailId);
  }

  /** An id listed both as removed and among the staged users (a contradiction), or undefined. */
  removedAndListed(): number | undefined {
    return statement(this.db, 'SELECT email_id FROM temp.stage_removed WHERE email_id IN (SELECT email_id FROM temp.stage_users) LIMIT 1', {
      pluck: true,
    }).get() as number | undefined;
  }

  /** The removed ids are only checked; the scope stays for the merge (clear it with clearDeltaScope). */
  clearRemoved(): void {
    clearTables(this.db, ['stage_removed']);
  }
}

export function clearDeltaScope(db: Db): void {
  clearTables(db, ['stage_scope']);
}

/** Users listed without user_tag (the seed's list): the GUEST list then says which of them are guests. */
export class UntaggedUsers {
  private readonly insert: Statement;
  private readonly tagGuest: Statement;

  constructor(private readonly db: Db) {
    tempTables(db, 'untagged', 'CREATE TEMP TABLE IF NOT EXISTS stage_untagged (email_id INTEGER PRIMARY KEY) STRICT;', ['stage_untagged']);
    this.insert = statement(db, 'INSERT OR IGNORE INTO temp.stage_untagged VALUES (?)');
    this.tagGuest = statement(db, "UPDATE temp.stage_users SET tag = 'GUEST' WHERE email_id = ? AND email_id IN (SELECT email_id FROM temp.stage_untagged)");
  }

  add(emailId: number): void {
    this.insert.run(emailId);
  }

  count(): number {
    return statement(this.db, 'SELECT count(*) FROM temp.stage_untagged', { pluck: true }).get() as number;
  }

  /** A user of the GUEST list: staged as a guest when it came untagged. */
  markGuest(emailId: number): void {
    this.tagGuest.run(emailId);
  }

  clear(): void {
    clearTables(this.db, ['stage_untagged']);
  }
}
