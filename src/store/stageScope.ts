import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';

/**
 * The temporary tables a sync stages beside SnapshotStage's (snapshotStage.ts), owned here so that their DDL and
 * names live in the store: the scope of a delta (which users it replaces or removes; mergeStage reads it when
 * `scoped`), the ids a delta removes, and the users a seed-style list gave without user_tag.
 */
export const SCOPE_TABLE = 'temp.stage_scope';

/** A GET /directory delta's scope: the users it lists and the users it removes. */
export class DeltaScope {
  private readonly inScope: Statement;
  private readonly removed: Statement;

  constructor(private readonly db: Db) {
    db.exec(`CREATE TEMP TABLE IF NOT EXISTS stage_scope (email_id INTEGER PRIMARY KEY) STRICT; DELETE FROM ${SCOPE_TABLE};
      CREATE TEMP TABLE IF NOT EXISTS stage_removed (email_id INTEGER PRIMARY KEY) STRICT; DELETE FROM temp.stage_removed;`);
    this.inScope = db.prepare(`INSERT OR IGNORE INTO ${SCOPE_TABLE} VALUES (?)`);
    this.removed = db.prepare('INSERT OR IGNORE INTO temp.stage_removed VALUES (?)');
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
    return this.db.prepare('SELECT email_id FROM temp.stage_removed WHERE email_id IN (SELECT email_id FROM temp.stage_users) LIMIT 1').pluck().get() as
      | number
      | undefined;
  }

  /** The removed ids are only checked; the scope stays for the merge (drop it with dropDeltaScope). */
  dropRemoved(): void {
    this.db.exec('DROP TABLE IF EXISTS temp.stage_removed');
  }
}

export function dropDeltaScope(db: Db): void {
  db.exec(`DROP TABLE IF EXISTS ${SCOPE_TABLE}`);
}

/** Users listed without user_tag (the seed's list): the GUEST list then says which of them are guests. */
export class UntaggedUsers {
  private readonly insert: Statement;
  private readonly tagGuest: Statement;

  constructor(private readonly db: Db) {
    db.exec('CREATE TEMP TABLE IF NOT EXISTS stage_untagged (email_id INTEGER PRIMARY KEY) STRICT; DELETE FROM temp.stage_untagged;');
    this.insert = db.prepare('INSERT OR IGNORE INTO temp.stage_untagged VALUES (?)');
    this.tagGuest = db.prepare("UPDATE temp.stage_users SET tag = 'GUEST' WHERE email_id = ? AND email_id IN (SELECT email_id FROM temp.stage_untagged)");
  }

  add(emailId: number): void {
    this.insert.run(emailId);
  }

  count(): number {
    return this.db.prepare('SELECT count(*) FROM temp.stage_untagged').pluck().get() as number;
  }

  /** A user of the GUEST list: staged as a guest when it came untagged. */
  markGuest(emailId: number): void {
    this.tagGuest.run(emailId);
  }

  drop(): void {
    this.db.exec('DROP TABLE IF EXISTS temp.stage_untagged');
  }
}
