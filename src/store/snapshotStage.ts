import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';
import { statement } from '../util/preparedStatements.js';
import { clearTables, tempTables } from './tempTables.js';
import { withProps } from '../core/objects.js';

/** A user from GET /multipleusers, in cache form. */
export interface StagedUser {
  emailId: number;
  userId: number | null;
  name: string;
  email: string | null;
  tag: 'USER' | 'GUEST';
  adStatus: string;
  groups: string[];
}

/** The part of GET /user the door needs. Numbers are already normalized. */
export interface StagedDetail {
  emailId: number;
  policies: string[];
  /** number: the cache's key (leading zeros dropped); digits: as the service gave it (a PIN's zeros count). */
  smartcards: StagedCard[];
}

/** A card or PIN entry; validFrom (inclusive) and validUntil (exclusive) in epoch ms, null: unbounded. */
export interface StagedCard {
  number: string;
  label: string | null;
  digits: string;
  validFrom: number | null;
  validUntil: number | null;
}

export interface StagedLink {
  magicLinkId: string;
  name: string;
  tokenDigest: string;
  resourceIds: number[];
  startAt: number | null;
  endAt: number | null;
  timeMapping: unknown;
  emailList: string[];
  smartcards: StagedCard[];
}

const STAGE_TABLES = ['stage_users', 'stage_details', 'stage_links', 'stage_credentials'] as const;

const STAGE_DDL = `
  CREATE TEMP TABLE IF NOT EXISTS stage_users (
    email_id INTEGER PRIMARY KEY, user_id INTEGER, name TEXT NOT NULL, email TEXT,
    tag TEXT NOT NULL, ad_status TEXT NOT NULL, groups TEXT NOT NULL) STRICT;
  CREATE TEMP TABLE IF NOT EXISTS stage_details (email_id INTEGER PRIMARY KEY, policies TEXT NOT NULL) STRICT;
  CREATE TEMP TABLE IF NOT EXISTS stage_links (
    magic_link_id TEXT PRIMARY KEY, name TEXT NOT NULL, token_digest TEXT NOT NULL, resource_ids TEXT NOT NULL,
    start_at INTEGER, end_at INTEGER, time_mapping TEXT NOT NULL, email_list TEXT NOT NULL) STRICT;
  CREATE TEMP TABLE IF NOT EXISTS stage_credentials (
    number TEXT NOT NULL, holder_kind TEXT NOT NULL, holder_id TEXT NOT NULL, label TEXT, digits TEXT,
    valid_from INTEGER, valid_until INTEGER, PRIMARY KEY (number, holder_kind, holder_id)) STRICT, WITHOUT ROWID;`;

/**
 * Temporary tables a snapshot is streamed into before it is merged, so a cache of any size is replaced with
 * bounded memory and only inside the caller's transaction. Each add returns false for a duplicate id. The tables
 * are the connection's (tempTables): clear() empties them after use.
 */
export class SnapshotStage {
  private readonly insertUser: Statement;
  private readonly insertDetail: Statement;
  private readonly insertLink: Statement;
  private readonly insertCredential: Statement;

  constructor(private readonly db: Db) {
    tempTables(db, 'snapshot', STAGE_DDL, STAGE_TABLES);
    this.insertUser = statement(db, 'INSERT OR IGNORE INTO temp.stage_users VALUES (@emailId, @userId, @name, @email, @tag, @adStatus, @groups)');
    this.insertDetail = statement(db, 'INSERT OR IGNORE INTO temp.stage_details VALUES (?, ?)');
    this.insertLink = statement(
      db,
      `INSERT OR IGNORE INTO temp.stage_links VALUES
      (@magicLinkId, @name, @tokenDigest, @resourceIds, @startAt, @endAt, @timeMapping, @emailList)`,
    );
    this.insertCredential = statement(db, 'INSERT OR IGNORE INTO temp.stage_credentials VALUES (?, ?, ?, ?, ?, ?, ?)');
  }

  addUser(user: StagedUser): boolean {
    return this.insertUser.run(withProps(user, { groups: JSON.stringify(user.groups) })).changes === 1;
  }

  addDetail(detail: StagedDetail): boolean {
    if (this.insertDetail.run(detail.emailId, JSON.stringify(detail.policies)).changes !== 1) return false;
    const holder = String(detail.emailId);
    for (const card of detail.smartcards) this.insertCredential.run(card.number, 'user', holder, card.label, card.digits, card.validFrom, card.validUntil);
    return true;
  }

  addLink(link: StagedLink): boolean {
    const row = {
      magicLinkId: link.magicLinkId,
      name: link.name,
      tokenDigest: link.tokenDigest,
      resourceIds: JSON.stringify(link.resourceIds),
      startAt: link.startAt,
      endAt: link.endAt,
      timeMapping: JSON.stringify(link.timeMapping),
      emailList: JSON.stringify(link.emailList),
    };
    if (this.insertLink.run(row).changes !== 1) return false;
    for (const card of link.smartcards) {
      this.insertCredential.run(card.number, 'link', link.magicLinkId, card.label, card.digits, card.validFrom, card.validUntil);
    }
    return true;
  }

  /** Staged users' email_ids after `after`, in order, at most `limit`: to walk them in pages. */
  userIdsAfter(after: number, limit: number): number[] {
    return statement(this.db, 'SELECT email_id FROM temp.stage_users WHERE email_id > ? ORDER BY email_id LIMIT ?', { pluck: true }).all(
      after,
      limit,
    ) as number[];
  }

  /** email_ids listed in users without a details entry. */
  usersWithoutDetails(limit: number): number[] {
    return statement(
      this.db,
      'SELECT email_id FROM temp.stage_users u WHERE NOT EXISTS (SELECT 1 FROM temp.stage_details d WHERE d.email_id = u.email_id) ORDER BY email_id LIMIT ?',
      {
        pluck: true,
      },
    ).all(limit) as number[];
  }

  /** details entries for email_ids that are not in users. */
  detailsWithoutUsers(limit: number): number[] {
    return statement(
      this.db,
      'SELECT email_id FROM temp.stage_details d WHERE NOT EXISTS (SELECT 1 FROM temp.stage_users u WHERE u.email_id = d.email_id) ORDER BY email_id LIMIT ?',
      {
        pluck: true,
      },
    ).all(limit) as number[];
  }

  /** Empties the tables (they stay for the next sync; their pages return to the temporary database's free list). */
  clear(): void {
    clearTables(this.db, STAGE_TABLES);
  }
}
