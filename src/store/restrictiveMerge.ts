import type { Statement } from 'better-sqlite3';
import { restrictLevels, restrictiveRemovalsAllowed, restrictUser, type CredentialFacts, type UserFacts } from '../core/restrictions.js';
import { statement } from '../util/preparedStatements.js';
import type { Db } from './database.js';
import { readServiceLevels, writeServiceLevels, type ServiceLevels } from './serviceLevels.js';

/** What the restrictive part of a refused answer changed at the door (docs/sync.md, "Mass-removal guard"). */
export interface RestrictionSummary {
  /** Users newly suspended. */
  suspended: number;
  /** Users with fewer groups or policies, or USER become GUEST. */
  narrowed: number;
  /** Cards and PINs the answer no longer gives a user it still lists. */
  credentialsRemoved: number;
  /** Cards and PINs whose validity the answer ends sooner or starts later. */
  credentialsShortened: number;
  /** The service's access levels and resource groups dropped or narrowed. */
  levelsNarrowed: number;
  /** Credentials the answer takes from users it still lists, left in place: that removal is past maxRemovalRatio itself. */
  removalsWaiting: number;
  /** The restrictions applied: every count above but removalsWaiting. */
  total: number;
}

/** Nothing applied (a refusal from before the restrictive part was applied, or one that restricts nobody). */
export const NO_RESTRICTIONS: Readonly<RestrictionSummary> = Object.freeze({
  suspended: 0,
  narrowed: 0,
  credentialsRemoved: 0,
  credentialsShortened: 0,
  levelsNarrowed: 0,
  removalsWaiting: 0,
  total: 0,
});

const PAGE = 500;

// A user the cache holds and the answer still lists as the same person (a restored service gives a vanished user's
// email_id to someone new: then nothing of theirs applies before the operator accepts).
const SAME_USER = `JOIN temp.stage_users s ON s.email_id = u.email_id
  WHERE (u.email IS NULL OR s.email IS NULL OR lower(u.email) = lower(s.email))`;
const GIVEN = `EXISTS (SELECT 1 FROM temp.stage_credentials x
  WHERE x.number = c.number AND x.holder_kind = 'user' AND x.holder_id = c.holder_id)`;

/** Reads and writes of one restrictive apply, prepared once per connection. */
function statements(db: Db) {
  const st = (sql: string, pluck = false) => statement(db, sql, pluck ? { pluck: true } : undefined) as Statement;
  return {
    removable: st(
      `SELECT count(*) FROM credentials c JOIN users u ON c.holder_kind = 'user' AND u.email_id = CAST(c.holder_id AS INTEGER) ${SAME_USER} AND NOT ${GIVEN}`,
      true,
    ),
    managed: st("SELECT count(*) FROM credentials WHERE holder_kind = 'user'", true),
    // Users held and listed whose facts or credentials differ at all; the pure core says what of it restricts.
    candidates: st(
      `SELECT u.email_id FROM users u JOIN temp.stage_details d ON d.email_id = u.email_id ${SAME_USER} AND u.email_id > ?
         AND (u.ad_status IS NOT s.ad_status OR u.tag IS NOT s.tag OR u.groups IS NOT s.groups OR u.policies IS NOT d.policies
           OR EXISTS (SELECT 1 FROM credentials c WHERE c.holder_kind = 'user' AND c.holder_id = CAST(u.email_id AS TEXT)
             AND NOT EXISTS (SELECT 1 FROM temp.stage_credentials x WHERE x.number = c.number AND x.holder_kind = 'user'
               AND x.holder_id = c.holder_id AND x.valid_from IS c.valid_from AND x.valid_until IS c.valid_until)))
       ORDER BY u.email_id LIMIT ?`,
      true,
    ),
    heldUser: st('SELECT email, tag, ad_status, groups, policies FROM users WHERE email_id = ?'),
    heldCredentials: st("SELECT number, valid_from, valid_until FROM credentials WHERE holder_kind = 'user' AND holder_id = ?"),
    stagedUser: st(
      'SELECT s.email, s.tag, s.ad_status, s.groups, d.policies FROM temp.stage_users s JOIN temp.stage_details d USING (email_id) WHERE email_id = ?',
    ),
    stagedCredentials: st("SELECT number, valid_from, valid_until FROM temp.stage_credentials WHERE holder_kind = 'user' AND holder_id = ?"),
    setUser: st('UPDATE users SET tag = ?, ad_status = ?, groups = ?, policies = ? WHERE email_id = ?'),
    setHolder: st("UPDATE credentials SET tag = ?, ad_status = ?, groups = ?, policies = ? WHERE holder_kind = 'user' AND holder_id = ?"),
    remove: st("DELETE FROM credentials WHERE number = ? AND holder_kind = 'user' AND holder_id = ?"),
    setDates: st("UPDATE credentials SET valid_from = ?, valid_until = ? WHERE number = ? AND holder_kind = 'user' AND holder_id = ?"),
  };
}

interface UserRow {
  email: string | null;
  tag: 'USER' | 'GUEST';
  ad_status: string;
  groups: string;
  policies: string;
}

interface CredentialRow {
  number: string;
  valid_from: number | null;
  valid_until: number | null;
}

const credentialsOf = (rows: CredentialRow[]): CredentialFacts[] => rows.map((r) => ({ number: r.number, validFrom: r.valid_from, validUntil: r.valid_until }));

function factsOf(row: UserRow, credentials: CredentialRow[]): UserFacts {
  return {
    email: row.email,
    tag: row.tag,
    adStatus: row.ad_status,
    groups: JSON.parse(row.groups) as string[],
    policies: JSON.parse(row.policies) as string[],
    credentials: credentialsOf(credentials),
  };
}

/**
 * Applies the restrictive part of a staged answer the mass-removal guard refused (core/restrictions.ts decides it,
 * user by user, in pages: bounded memory whatever the directory's size): suspensions, fewer groups and policies,
 * cards and PINs removed from users it still lists (unless that removal is past maxRemovalRatio itself), shorter
 * validity; with `levels` (the answer's, GET /directory) the service's levels narrowed too. The users it no
 * longer lists, and everything that grants or widens, stay as they are. Must run inside the caller's transaction;
 * the revision held is not touched, so the next sync asks again.
 */
export function applyRestrictions(db: Db, options: { maxRemovalRatio: number | null; levels?: ServiceLevels | null }): RestrictionSummary {
  const sql = statements(db);
  const removable = sql.removable.get() as number;
  const removeCredentials = restrictiveRemovalsAllowed(removable, removable === 0 ? 0 : (sql.managed.get() as number), options.maxRemovalRatio);
  const summary: RestrictionSummary = {
    suspended: 0,
    narrowed: 0,
    credentialsRemoved: 0,
    credentialsShortened: 0,
    levelsNarrowed: 0,
    removalsWaiting: removeCredentials ? 0 : removable,
    total: 0,
  };
  for (let after = -1; ; ) {
    const ids = sql.candidates.all(after, PAGE) as number[];
    if (ids.length === 0) break;
    after = ids[ids.length - 1]!;
    for (const id of ids) {
      const holder = String(id);
      const held = factsOf(sql.heldUser.get(id) as UserRow, sql.heldCredentials.all(holder) as CredentialRow[]);
      const answered = factsOf(sql.stagedUser.get(id) as UserRow, sql.stagedCredentials.all(holder) as CredentialRow[]);
      const r = restrictUser(held, answered, { removeCredentials });
      if (r === null) continue;
      if (r.suspended || r.narrowed) {
        const facts = [r.tag, r.adStatus, JSON.stringify(r.groups), JSON.stringify(r.policies)];
        sql.setUser.run(...facts, id);
        sql.setHolder.run(...facts, holder);
      }
      for (const number of r.removed) sql.remove.run(number, holder);
      for (const c of r.shortened) sql.setDates.run(c.validFrom, c.validUntil, c.number, holder);
      if (r.suspended) summary.suspended++;
      if (r.narrowed) summary.narrowed++;
      summary.credentialsRemoved += r.removed.length;
      summary.credentialsShortened += r.shortened.length;
    }
  }
  if (options.levels !== undefined) {
    const narrowed = restrictLevels(readServiceLevels(db), options.levels);
    if (narrowed.narrowed > 0) writeServiceLevels(db, narrowed.levels as ServiceLevels | null);
    summary.levelsNarrowed = narrowed.narrowed;
  }
  summary.total = summary.suspended + summary.narrowed + summary.credentialsRemoved + summary.credentialsShortened + summary.levelsNarrowed;
  return summary;
}

/** "1 user suspended, 2 credentials removed": the restrictions applied, for the log, the CLI and status; never a number. */
export function describeRestrictions(s: RestrictionSummary): string {
  const parts = [
    [s.suspended, 'user suspended', 'users suspended'],
    [s.narrowed, 'user with less access', 'users with less access'],
    [s.credentialsRemoved, 'credential removed', 'credentials removed'],
    [s.credentialsShortened, 'credential shortened', 'credentials shortened'],
    [s.levelsNarrowed, 'access level or resource group narrowed', 'access levels or resource groups narrowed'],
  ] as const;
  return parts
    .filter(([n]) => n > 0)
    .map(([n, one, many]) => `${n} ${n === 1 ? one : many}`)
    .join(', ');
}
