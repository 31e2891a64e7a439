import { count as counted } from '../util/plural.js';
import { statement } from '../util/preparedStatements.js';
import type { Db } from './database.js';

/**
 * What a staged answer would grant beyond the cache (docs/sync.md, "Backup and restore"): the users it lists
 * active that the cache lacks or holds suspended (someone else under a held email_id counts as lacking), and the
 * cards and PINs it gives that the cache does not hold for that user. What a restore awaiting acceptance at the
 * service would add or re-admit at this door; counts only, never a number.
 */
export interface BeyondCache {
  users: number;
  credentials: number;
}

const USERS_BEYOND = `SELECT count(*) FROM temp.stage_users s LEFT JOIN users u ON u.email_id = s.email_id
  WHERE s.ad_status = 'ACTIVE' AND (u.email_id IS NULL OR u.ad_status <> 'ACTIVE'
    OR (u.email IS NOT NULL AND s.email IS NOT NULL AND lower(u.email) <> lower(s.email)))`;
const CREDENTIALS_BEYOND = `SELECT count(*) FROM temp.stage_credentials x WHERE x.holder_kind = 'user' AND NOT EXISTS
  (SELECT 1 FROM credentials c WHERE c.number = x.number AND c.holder_kind = 'user' AND c.holder_id = x.holder_id)`;

/** Counted in the caller's transaction, against the stage a full answer filled. */
export function countBeyondCache(db: Db): BeyondCache {
  const count = (sql: string) => statement(db, sql, { pluck: true }).get() as number;
  return { users: count(USERS_BEYOND), credentials: count(CREDENTIALS_BEYOND) };
}

/** "1 user and 2 credentials it would add or re-admit", or "nothing it would add or re-admit". */
export function describeBeyondCache(b: BeyondCache): string {
  if (b.users === 0 && b.credentials === 0) return 'nothing it would add or re-admit';
  return `${counted(b.users, 'user')} and ${counted(b.credentials, 'credential')} it would add or re-admit`;
}
