import type { Db } from './database.js';
import { DoorAgentError } from '../util/errors.js';
import { SCOPE_TABLE } from './stageScope.js';
import { statement } from '../util/preparedStatements.js';
import { describeRestrictions, type RestrictionSummary } from './restrictiveMerge.js';
import { describeBeyondCache, type BeyondCache } from './widening.js';

export interface RowCounts {
  added: number;
  changed: number;
  removed: number;
  unchanged: number;
}

export interface MergeSummary {
  users: RowCounts;
  /** A credential counts as changed when its label, its validity dates or its holder's facts (status, groups, schedule) changed. */
  credentials: RowCounts;
  guestLinks: RowCounts;
  /** Rows inserted, updated or deleted in the cache tables: 0 when nothing changed. */
  rowsWritten: number;
}

/** The service's directory history the cache held and the one a full answer came from (a restored service). */
export interface HistoryChange {
  from: string;
  to: string;
  /** The answer says its restore awaits acceptance at the service: since when, and what it grants beyond the cache. */
  restore?: AwaitedRestore;
}

/** A restore of the service's database awaiting acceptance there (docs/sync.md, "Backup and restore"). */
export interface AwaitedRestore {
  /** When the service detected it (its text, as the answer gives it). */
  detectedAt: string;
  beyondCache: BeyondCache;
}

const short = (history: string) => `${history.slice(0, 8)}…`;

/**
 * Refused: the new data would remove more credentials than config `service.maxRemovalRatio` allows. With
 * `history`, the removal comes with a change of the service's history (its database was restored from a backup
 * or replaced): a new history is no reason to trust a mass removal, so the message says what happened and how
 * the operator accepts it. With `history.restore`, the service says the restore awaits acceptance: the answer is
 * refused whatever it removes, as what it would grant beyond the cache may be the revocations the restore undid.
 * With `restricted`, the answer's restrictive part was applied at once (store/restrictiveMerge.ts): the message
 * says what, and that the removal and the rest wait.
 */
export class MassRemovalError extends DoorAgentError {
  constructor(
    readonly removed: number,
    readonly current: number,
    readonly maxRatio: number,
    readonly history?: HistoryChange,
    readonly restricted?: RestrictionSummary,
  ) {
    const what = `this would remove ${removed} of ${current} credentials (${((removed / current) * 100).toFixed(1)} %), more than service.maxRemovalRatio ${maxRatio} allows`;
    super(
      history?.restore
        ? restoreRefusal(history.restore, removed, current, restricted)
        : history
          ? `refused: the service's directory history changed (held ${short(history.from)}, now ${short(history.to)}: its database was restored ` +
            `from a backup or replaced) and its full answer replaces the cache: ${what}. ${appliedSentence(restricted)} ` +
            'If the restore is intended, accept it with door-agent sync --allow-mass-removal.'
          : `refused: ${what}. ${appliedSentence(restricted)} If the removal is intended, repeat with --allow-mass-removal.`,
    );
    this.name = 'MassRemovalError';
  }
}

/** A full answer refused because its restore awaits acceptance at the service: what waits, what applied, the two ways on. */
function restoreRefusal(restore: AwaitedRestore, removed: number, current: number, restricted: RestrictionSummary | undefined): string {
  const removal = removed > 0 ? `, and so does the removal of ${removed} of ${current} credentials (users it no longer lists)` : '';
  const applied = restricted && restricted.total > 0 ? describeRestrictions(restricted) : 'nothing (nothing in it restricts the users this door holds)';
  const held =
    restricted && restricted.removalsWaiting > 0
      ? ` (the ${restricted.removalsWaiting} credentials it takes from users it still lists wait: a mass removal themselves)`
      : '';
  return (
    `refused: the service's database was restored from a backup (detected ${restore.detectedAt}) and the restore awaits acceptance at the service: ` +
    `what it would grant beyond this door's cache waits (${describeBeyondCache(restore.beyondCache)}; POST /directory/restore/accept or the console)${removal}; ` +
    `its restrictive part applied: ${applied}${held}; or accept it at this door with door-agent sync --allow-mass-removal.`
  );
}

/** What of the refused answer applied: nothing, or its restrictive part (and that the rest waits). */
function appliedSentence(restricted: RestrictionSummary | undefined): string {
  const waiting =
    restricted && restricted.removalsWaiting > 0
      ? ` (the ${restricted.removalsWaiting} credentials it takes from users it still lists wait too: a mass removal themselves)`
      : '';
  if (!restricted || restricted.total === 0)
    return `The cache is unchanged${restricted ? ': nothing in the answer restricts the users it holds' : ''}${waiting}.`;
  return `Its restrictive part was applied at once: ${describeRestrictions(restricted)}; the removal and the rest of the answer wait${waiting}.`;
}

const count = (db: Db, sql: string): number => statement(db, sql, { pluck: true }).get() as number;

// Credentials a snapshot owns: all user credentials, and those of links that came from a snapshot or are in
// this one. Links pushed over MQTT keep their credentials until revoked over MQTT. A sync (users only) owns
// only the users' credentials.
const SNAPSHOT_CREDENTIAL = `(c.holder_kind = 'user' OR c.holder_id IN
  (SELECT magic_link_id FROM guest_links WHERE source = 'snapshot' UNION SELECT magic_link_id FROM temp.stage_links))`;
const USER_CREDENTIAL = `(c.holder_kind = 'user')`;
const STAGED_CREDENTIAL = `EXISTS (SELECT 1 FROM temp.stage_credentials s
  WHERE s.number = c.number AND s.holder_kind = c.holder_kind AND s.holder_id = c.holder_id)`;

/** The merge's SQL for one kind of merge, built once: a text built per call was hashed again at each lookup. */
interface MergeSql {
  removedCount: string;
  managedCount: string;
  credentialsAdded: string;
  usersAdded: string;
  linksAdded: string;
  deleteCredentials: string;
  deleteLinks: string;
  deleteUsers: string;
}
const mergeSqls = new Map<string, MergeSql>();

function mergeSql(includeLinks: boolean, scoped: boolean): MergeSql {
  const key = `${includeLinks}/${scoped}`;
  const known = mergeSqls.get(key);
  if (known) return known;
  const MANAGED_CREDENTIAL = includeLinks ? SNAPSHOT_CREDENTIAL : USER_CREDENTIAL;
  // scoped (a delta): only the users listed in temp.stage_scope are replaced or removed; every other row stays.
  const IN_SCOPE = scoped ? `(c.holder_kind = 'user' AND c.holder_id IN (SELECT CAST(email_id AS TEXT) FROM ${SCOPE_TABLE}))` : 'true';
  const USER_IN_SCOPE = scoped ? `email_id IN (SELECT email_id FROM ${SCOPE_TABLE})` : 'true';
  const sql: MergeSql = {
    removedCount: `SELECT count(*) FROM credentials c WHERE ${MANAGED_CREDENTIAL} AND ${IN_SCOPE} AND NOT ${STAGED_CREDENTIAL}`,
    managedCount: `SELECT count(*) FROM credentials c WHERE ${MANAGED_CREDENTIAL}`,
    credentialsAdded: `SELECT count(*) FROM temp.stage_credentials c WHERE NOT EXISTS
    (SELECT 1 FROM credentials l WHERE l.number = c.number AND l.holder_kind = c.holder_kind AND l.holder_id = c.holder_id)`,
    usersAdded: 'SELECT count(*) FROM temp.stage_users WHERE email_id NOT IN (SELECT email_id FROM users)',
    linksAdded: 'SELECT count(*) FROM temp.stage_links WHERE magic_link_id NOT IN (SELECT magic_link_id FROM guest_links)',
    deleteCredentials: `DELETE FROM credentials AS c WHERE ${MANAGED_CREDENTIAL} AND ${IN_SCOPE} AND NOT ${STAGED_CREDENTIAL}`,
    deleteLinks: `DELETE FROM guest_links WHERE source = 'snapshot' AND magic_link_id NOT IN (SELECT magic_link_id FROM temp.stage_links)`,
    deleteUsers: `DELETE FROM users WHERE ${USER_IN_SCOPE} AND email_id NOT IN (SELECT email_id FROM temp.stage_users)`,
  };
  mergeSqls.set(key, sql);
  return sql;
}

/** Which credentials a merge manages: with the snapshot's guest links or users only, and a delta's scope or all. */
export interface MergeScope {
  includeLinks: boolean;
  scoped: boolean;
}

/** The credentials the merge would remove (its guard's numerator): those it manages that the stage no longer gives. */
export function countRemoved(db: Db, scope: MergeScope): number {
  return count(db, mergeSql(scope.includeLinks, scope.scoped).removedCount);
}

/** The credentials the merge manages (its guard's denominator): guest-link cards that came over MQTT not among them. */
export function countManaged(db: Db, scope: MergeScope): number {
  return count(db, mergeSql(scope.includeLinks, scope.scoped).managedCount);
}

/**
 * Replaces the cache's users, credentials and snapshot guest links with the staged ones. Rows that did not
 * change are not rewritten. Must run inside the caller's transaction; throws MassRemovalError before writing.
 */
export function mergeStage(db: Db, options: { maxRemovalRatio: number | null; includeLinks?: boolean; scoped?: boolean }): MergeSummary {
  const scope: MergeScope = { includeLinks: options.includeLinks ?? true, scoped: options.scoped ?? false };
  const { includeLinks } = scope;
  const sql = mergeSql(includeLinks, scope.scoped);
  // The ratio is taken over the credentials this merge may remove: guest-link cards that arrived over MQTT
  // must not dilute it (a sync that empties every user would otherwise pass). The guard is judged on the
  // resulting set: what this merge removes, out of everything it manages. The total is counted only when
  // something would go (it walks the whole index; most deltas remove nothing).
  const credentialsRemoved = countRemoved(db, scope);
  if (options.maxRemovalRatio !== null && credentialsRemoved > 0) {
    const credentialsBefore = countManaged(db, scope);
    if (credentialsRemoved / credentialsBefore > options.maxRemovalRatio) {
      throw new MassRemovalError(credentialsRemoved, credentialsBefore, options.maxRemovalRatio);
    }
  }
  const credentialsAdded = count(db, sql.credentialsAdded);
  const usersAdded = count(db, sql.usersAdded);
  const linksAdded = count(db, sql.linksAdded);

  const run = (text: string) => statement(db, text).run().changes;
  const deletedCredentials = run(sql.deleteCredentials);
  const deletedLinks = includeLinks ? run(sql.deleteLinks) : 0;
  const deletedUsers = run(sql.deleteUsers);

  const upsertedUsers = run(`
    INSERT INTO users (email_id, user_id, name, email, tag, ad_status, groups, policies)
    SELECT s.email_id, s.user_id, s.name, s.email, s.tag, s.ad_status, s.groups, d.policies
      FROM temp.stage_users s JOIN temp.stage_details d USING (email_id) WHERE true
    ON CONFLICT (email_id) DO UPDATE SET user_id = excluded.user_id, name = excluded.name, email = excluded.email,
      tag = excluded.tag, ad_status = excluded.ad_status, groups = excluded.groups, policies = excluded.policies
    WHERE users.user_id IS NOT excluded.user_id OR users.name IS NOT excluded.name OR users.email IS NOT excluded.email
       OR users.tag IS NOT excluded.tag OR users.ad_status IS NOT excluded.ad_status
       OR users.groups IS NOT excluded.groups OR users.policies IS NOT excluded.policies`);
  const upsertedLinks = !includeLinks
    ? 0
    : run(`
    INSERT INTO guest_links (magic_link_id, name, token_digest, resource_ids, start_at, end_at, time_mapping, email_list, source)
    SELECT magic_link_id, name, token_digest, resource_ids, start_at, end_at, time_mapping, email_list, 'snapshot'
      FROM temp.stage_links WHERE true
    ON CONFLICT (magic_link_id) DO UPDATE SET name = excluded.name, token_digest = excluded.token_digest,
      resource_ids = excluded.resource_ids, start_at = excluded.start_at, end_at = excluded.end_at,
      time_mapping = excluded.time_mapping, email_list = excluded.email_list, source = excluded.source
    WHERE guest_links.name IS NOT excluded.name OR guest_links.token_digest IS NOT excluded.token_digest
       OR guest_links.resource_ids IS NOT excluded.resource_ids OR guest_links.start_at IS NOT excluded.start_at
       OR guest_links.end_at IS NOT excluded.end_at OR guest_links.time_mapping IS NOT excluded.time_mapping
       OR guest_links.email_list IS NOT excluded.email_list OR guest_links.source IS NOT excluded.source`);
  const upsertedCredentials = run(`
    INSERT INTO credentials (number, holder_kind, holder_id, label, tag, ad_status, groups, policies,
                             resource_ids, start_at, end_at, time_mapping, digits, valid_from, valid_until)
    SELECT * FROM (
      SELECT c.number, c.holder_kind, c.holder_id, c.label, u.tag, u.ad_status, u.groups, d.policies,
             NULL, NULL, NULL, NULL, c.digits, c.valid_from, c.valid_until
        FROM temp.stage_credentials c
        JOIN temp.stage_users u ON c.holder_kind = 'user' AND u.email_id = CAST(c.holder_id AS INTEGER)
        JOIN temp.stage_details d ON d.email_id = u.email_id
      UNION ALL
      SELECT c.number, c.holder_kind, c.holder_id, c.label, NULL, NULL, NULL, NULL,
             l.resource_ids, l.start_at, l.end_at, l.time_mapping, c.digits, c.valid_from, c.valid_until
        FROM temp.stage_credentials c
        JOIN temp.stage_links l ON c.holder_kind = 'link' AND l.magic_link_id = c.holder_id
    ) WHERE true
    ON CONFLICT (number, holder_kind, holder_id) DO UPDATE SET label = excluded.label, tag = excluded.tag,
      ad_status = excluded.ad_status, groups = excluded.groups, policies = excluded.policies,
      resource_ids = excluded.resource_ids, start_at = excluded.start_at, end_at = excluded.end_at,
      time_mapping = excluded.time_mapping, digits = excluded.digits, valid_from = excluded.valid_from,
      valid_until = excluded.valid_until
    WHERE credentials.label IS NOT excluded.label OR credentials.tag IS NOT excluded.tag
       OR credentials.ad_status IS NOT excluded.ad_status OR credentials.groups IS NOT excluded.groups
       OR credentials.policies IS NOT excluded.policies OR credentials.resource_ids IS NOT excluded.resource_ids
       OR credentials.start_at IS NOT excluded.start_at OR credentials.end_at IS NOT excluded.end_at
       OR credentials.time_mapping IS NOT excluded.time_mapping OR credentials.digits IS NOT excluded.digits
       OR credentials.valid_from IS NOT excluded.valid_from OR credentials.valid_until IS NOT excluded.valid_until`);

  const counts = (staged: number, added: number, upserted: number, removed: number): RowCounts => ({
    added,
    changed: upserted - added,
    removed,
    unchanged: staged - upserted,
  });
  return {
    users: counts(count(db, 'SELECT count(*) FROM temp.stage_users'), usersAdded, upsertedUsers, deletedUsers),
    credentials: counts(count(db, 'SELECT count(*) FROM temp.stage_credentials'), credentialsAdded, upsertedCredentials, deletedCredentials),
    guestLinks: counts(count(db, 'SELECT count(*) FROM temp.stage_links'), linksAdded, upsertedLinks, deletedLinks),
    rowsWritten: deletedCredentials + deletedLinks + deletedUsers + upsertedUsers + upsertedLinks + upsertedCredentials,
  };
}
