import type { Logger } from 'pino';
import type { SyncCounts } from '../../../api/identity.js';
import type { Clock } from '../../../util/clock.js';
import type { Directory } from '../../directory.js';
import { dropUserFromLinks } from '../../linkStore.js';
import type { PublishKind } from '../../publishQueue.js';
import type { SqlDb, SqlValue } from '../../sql/sqlDb.js';
import type { UserStore } from '../../users.js';
import { LDAP_CARD_LABEL } from './syncCardPlan.js';
import { addTally, zeroCounts, type SyncPlan, type UserChange, type UserFields } from './syncPlan.js';

/**
 * Applies an LDAP sync's plan (syncPlan.ts) to the service's database: in transactions of BATCH users, each ending
 * with the directory's advance, so the doors get the changes as they get an API change's (a suspension within 2 s).
 * The groups are made first (the users' memberships name them), the groups gone and stray members are taken out
 * last. A plan with nothing in it opens no transaction and spends no revision. On PostgreSQL a transaction may run
 * again: each returns what it did, counted once it has committed.
 */

/** Users per transaction: a revision reaches the doors every few hundred users, not after ten thousand. */
const BATCH = 500;

export interface ApplyDeps {
  db: SqlDb;
  users: UserStore;
  directory: Directory;
  clock: Clock;
  logger: Logger;
  /** Owes the doors a message (a suspended or removed user's guest links), in the caller's transaction. */
  owe(kind: PublishKind, subject?: string): Promise<void>;
  /** Inside each transaction: throws when this sync no longer holds its lease (so nothing of that batch is kept). */
  renewLease(): Promise<void>;
}

/** The users table's column of each field a sync writes. */
const COLUMN: Record<keyof UserFields, string> = {
  email: 'email',
  firstName: 'first_name',
  lastName: 'last_name',
  username: 'username',
  externalId: 'external_id',
  sourceDn: 'source_dn',
};

type Tally = Omit<SyncCounts, 'entries' | 'groups'>;
const emptyTally = (): Tally => {
  const { entries: _entries, groups: _groups, ...tally } = zeroCounts();
  return tally;
};

/**
 * Applies `plan`, adding to `counts` what each committed transaction did: on a failure, `counts` says what was
 * applied before it (the rest is applied by the next sync, which plans from what is then held).
 */
export async function applyPlan(plan: SyncPlan, deps: ApplyDeps, counts: SyncCounts): Promise<void> {
  const { db, directory, clock } = deps;
  const inTransaction = async (work: (now: number, tally: Tally) => Promise<void>): Promise<void> => {
    const tally = await db.transaction(async () => {
      const now = clock.wallNow();
      const done = emptyTally();
      await work(now, done);
      await deps.renewLease();
      await directory.advance(now);
      return done;
    });
    for (const [key, n] of Object.entries(tally) as Array<[keyof Tally, number]>) counts[key] += n;
  };

  let groupIds: ReadonlyMap<string, number> = plan.groupIds;
  if (plan.groups.length > 0) {
    let made = new Map(plan.groupIds);
    await inTransaction(async (_now, tally) => {
      made = new Map(plan.groupIds);
      for (const change of plan.groups) {
        if (change.groupId === null) {
          const id = await db.value<number>(
            "INSERT INTO groups (type, name, source, external_id, source_dn) VALUES ('users', ?, 'ldap', ?, ?) RETURNING group_id",
            [change.fields.name!, change.fields.externalId!, change.fields.sourceDn!],
          );
          made.set(change.key, Number(id));
        } else {
          const { name, externalId, sourceDn } = change.fields;
          // Each column kept as it is unless the change gives it (the entry's name, id and DN are never empty).
          await db.run(
            `UPDATE groups SET name = coalesce(?, name), external_id = coalesce(?, external_id), source_dn = coalesce(?, source_dn)${
              change.back ? ', source_gone_at = NULL' : ''
            } WHERE group_id = ? AND source = 'ldap'`,
            [name ?? null, externalId ?? null, sourceDn ?? null, change.groupId],
          );
        }
        tally.groupsChanged++;
      }
    });
    groupIds = made;
  }

  for (let i = 0; i < plan.users.length; i += BATCH) {
    const batch = plan.users.slice(i, i + BATCH);
    await inTransaction(async (now, tally) => {
      for (const change of batch) await applyUser(change, groupIds, now, tally, deps);
    });
  }

  if (plan.gone.length > 0 || plan.strays.length > 0) {
    await inTransaction(async (now, tally) => {
      for (const group of plan.gone) {
        tally.memberships += (await db.run('DELETE FROM group_members WHERE group_id = ?', [group.groupId])).changes;
        if (group.mark) {
          await db.run("UPDATE groups SET source_gone_at = ? WHERE group_id = ? AND source = 'ldap'", [now, group.groupId]);
          tally.groupsChanged++;
        }
      }
      for (const stray of plan.strays) {
        tally.memberships += (await db.run('DELETE FROM group_members WHERE group_id = ? AND member_id = ?', [stray.groupId, stray.emailId])).changes;
      }
    });
  }
}

/** One user's change, in the batch's transaction. */
async function applyUser(change: UserChange, groupIds: ReadonlyMap<string, number>, now: number, tally: Tally, deps: ApplyDeps): Promise<void> {
  const { db, users, logger } = deps;
  const links = { db, clock: deps.clock, owe: deps.owe };
  let emailId: number;
  // The source the user must still have: one taken by another source (or removed) since the plan was read is left
  // alone until the next sync. null: a record this change has just made.
  let expected: 'local' | 'ldap' | null = change.action === 'claim' ? 'local' : 'ldap';
  let claimed = false;
  const leftAlone = () => {
    logger.warn({ email: change.email }, 'LDAP sync: the user changed during the sync; left as they are until the next one');
    tally.skipped++;
  };
  if (change.replaces !== undefined) {
    // The record of another person with this e-mail: removed (cards, groups, policies released), then brought back
    // below by ensure as a new member's.
    if (!(await stillOwned(db, change.replaces, 'ldap'))) return leftAlone();
    await users.remove(change.replaces, now);
    await dropUserFromLinks(links, change.email);
  }
  if (change.action === 'create') {
    // ensure: a new record, or a removed one of that e-mail brought back. An active user made since the plan was
    // read (by the API) is claimed when local, and left alone otherwise.
    const { user, created } = await users.ensure(change.email, 'USER', now);
    emailId = user.email_id;
    expected = created ? null : 'local';
    claimed = !created;
  } else {
    emailId = change.emailId!;
  }
  if (change.remove) {
    if (!(await stillOwned(db, emailId, 'ldap'))) return leftAlone();
    await users.remove(emailId, now);
    await dropUserFromLinks(links, change.email);
    addTally(tally, change.tally);
    return;
  }

  // The row, when something of it changes (a gone user is not seen: their source_seen_at stays when LDAP last had
  // them); otherwise only the check that the user is still LDAP's.
  const seen = change.action === 'gone' ? [] : ['source_seen_at = ?'];
  const sets = change.action === 'create' || change.action === 'claim' ? ["source = 'ldap'", ...seen] : seen;
  const rowChanges = sets.length > 1 || Object.keys(change.fields).length > 0 || change.suspended !== undefined;
  const owned = rowChanges
    ? await writeUser(db, emailId, change, sets, change.action === 'gone' ? [] : [now], expected)
    : await stillOwned(db, emailId, expected);
  if (!owned) return leftAlone();
  if (change.cards !== undefined) {
    // The duplicate rule of every call that assigns cards, in this transaction: a number given to someone else since
    // the plan was read is not shared.
    const taken = new Set(await users.newlyShared(emailId, change.cards));
    if (taken.size > 0) {
      // A card by its last 4 digits; a PIN not at all (its last digits are most of it).
      const named = change.cards.filter((c) => taken.has(c.number)).map((c) => (c.label === LDAP_CARD_LABEL ? `card …${c.number.slice(-4)}` : 'PIN'));
      logger.warn({ email: change.email, cards: named }, 'LDAP sync: a card or PIN held by another user is not given');
    }
    // Only the cards LDAP gives are replaced: the ones the service gave (other labels) stay, first, as they are.
    const labels = new Set(change.cardLabels ?? []);
    const kept = (await users.smartcards(emailId)).filter((c) => c.label === null || !labels.has(c.label));
    await users.replaceSmartcards(emailId, [...kept, ...change.cards.filter((c) => !taken.has(c.number))]);
  }
  for (const key of change.join) {
    const groupId = groupIds.get(key);
    if (groupId !== undefined) await db.run('INSERT INTO group_members (group_id, member_id) VALUES (?, ?) ON CONFLICT DO NOTHING', [groupId, emailId]);
  }
  for (const groupId of change.leave) await db.run('DELETE FROM group_members WHERE group_id = ? AND member_id = ?', [groupId, emailId]);
  // A suspended guest's card leaves their guest links, as PUT /togglesuspension does.
  if (change.suspended === true) await dropUserFromLinks(links, change.email);
  if (claimed) {
    tally.claimed++;
    tally.memberships += change.tally.memberships ?? 0;
  } else {
    addTally(tally, change.tally);
  }
}

/** Whether the user is active and of the source `expected` (null: any). */
async function stillOwned(db: SqlDb, emailId: number, expected: 'local' | 'ldap' | null): Promise<boolean> {
  const source = await db.value<string>('SELECT source FROM users WHERE email_id = ? AND removed_at IS NULL', [emailId]);
  return source !== undefined && (expected === null || source === expected);
}

/**
 * The user's row: the change's fields and suspension, with `sets` (SQL with `values`), if the user is still active
 * and of the source `expected` (null: any). Whether it was written.
 */
async function writeUser(
  db: SqlDb,
  emailId: number,
  change: UserChange,
  sets: string[],
  values: SqlValue[],
  expected: 'local' | 'ldap' | null,
): Promise<boolean> {
  const columns = [...sets];
  const params = [...values];
  for (const [field, value] of Object.entries(change.fields) as Array<[keyof UserFields, string]>) {
    columns.push(`${COLUMN[field]} = ?`);
    params.push(value);
  }
  if (change.suspended !== undefined) {
    columns.push('suspended = ?');
    params.push(change.suspended ? 1 : 0);
  }
  // A local user is claimed only while no operator (ADMIN, SUPER) and not suspended at the service; an operator's
  // e-mail is never changed by a source (docs/identity-sources.md, "Who owns what"). Either may have changed since
  // the plan was read.
  const claimable = expected === 'local' ? " AND rank = 'REGULAR' AND suspended = 0" : '';
  const mailKept = change.fields.email !== undefined ? " AND rank = 'REGULAR'" : '';
  const where = `${expected === null ? '' : ' AND source = ?'}${claimable}${mailKept}`;
  const written = await db.run(`UPDATE users SET ${columns.join(', ')} WHERE email_id = ? AND removed_at IS NULL${where}`, [
    ...params,
    emailId,
    ...(expected === null ? [] : [expected]),
  ]);
  return written.changes === 1;
}
