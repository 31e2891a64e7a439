import { randomUUID } from 'node:crypto';
import { preparedStatements } from './preparedStatements.js';
import type { ServiceDb as Db } from './database.js';
import type { Rank } from './apiKeys.js';

/** Service time format: UTC `YYYY-MM-DD hh:mm:ss`. */
export function serviceTimestamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

/** A card or PIN entry as the API gives it: `label` always (null when none), the validity dates only when set. */
export interface CardOut {
  number: string;
  label: string | null;
  valid_from?: string;
  valid_until?: string;
}

/** A smartcards row (number, label, valid_from, valid_until) in the API's form. */
export function cardOut(row: { number: string; label: string | null; valid_from: string | null; valid_until: string | null }): CardOut {
  const card: CardOut = { number: row.number, label: row.label };
  if (row.valid_from !== null) card.valid_from = row.valid_from;
  if (row.valid_until !== null) card.valid_until = row.valid_until;
  return card;
}

/** A card or PIN entry as the routes take it (params.ts smartcardParam). */
export interface CardIn {
  number: string;
  label?: string | null;
  valid_from?: string | null;
  valid_until?: string | null;
}

export interface UserRow {
  email_id: number;
  user_id: number;
  email: string;
  first_name: string;
  last_name: string;
  username: string;
  rank: Rank;
  tag: 'USER' | 'GUEST';
  suspended: number;
  email_status: string;
  unique_id: string;
  created: string;
  removed_at: string | null;
}

/** Users of the organization: the list and detail forms of docs/access-control-api.md, and their transitions. */
export class UserStore {
  private readonly sql: ReturnType<typeof preparedStatements>;

  constructor(private readonly db: Db) {
    // Each SQL text prepared once per store (a statement prepared per id of a 120,000-id request held 800 MB).
    this.sql = preparedStatements(db);
  }

  /** The email_ids of `ids` that are active users, in one query. */
  activeIds(ids: readonly number[]): Set<number> {
    const rows = this.sql('SELECT email_id FROM users WHERE removed_at IS NULL AND email_id IN (SELECT value FROM json_each(?))', { pluck: true }).all(
      JSON.stringify(ids),
    );
    return new Set(rows as number[]);
  }

  get(emailId: number): UserRow | undefined {
    return this.sql('SELECT * FROM users WHERE email_id = ? AND removed_at IS NULL').get(emailId) as UserRow | undefined;
  }

  byEmail(email: string): UserRow | undefined {
    return this.sql('SELECT * FROM users WHERE email = ? AND removed_at IS NULL').get(email) as UserRow | undefined;
  }

  /**
   * Creates a user (or returns the existing one). A removed user with the same e-mail is brought back on the same
   * record (email_id, user_id, unique_id) as a new member: the caller's tag, rank REGULAR, not suspended, dated
   * now, with no cards or computer usernames (released at removal; cleared here too for records removed before).
   */
  ensure(email: string, tag: 'USER' | 'GUEST', now: number): { user: UserRow; created: boolean } {
    const existing = this.sql('SELECT * FROM users WHERE email = ?').get(email) as UserRow | undefined;
    if (existing && existing.removed_at === null) return { user: existing, created: false };
    if (existing) {
      this.db.transaction(() => {
        this.releaseHoldings(existing.email_id);
        this.sql("UPDATE users SET removed_at = NULL, tag = ?, rank = 'REGULAR', suspended = 0, created = ? WHERE email_id = ?").run(
          tag,
          serviceTimestamp(now),
          existing.email_id,
        );
      })();
      return { user: this.get(existing.email_id)!, created: true };
    }
    const local = email.split('@')[0] ?? email;
    const nextUserId = (this.sql('SELECT coalesce(max(user_id), 0) + 1 FROM users', { pluck: true }).get() as number) ?? 1;
    const info = this.sql(`INSERT INTO users (user_id, email, first_name, username, tag, unique_id, created) VALUES (?, ?, ?, ?, ?, ?, ?)`).run(
      nextUserId,
      email,
      local,
      local,
      tag,
      randomUUID(),
      serviceTimestamp(now),
    );
    return { user: this.get(Number(info.lastInsertRowid))!, created: true };
  }

  list(tag?: 'USER' | 'GUEST'): UserRow[] {
    return (
      tag
        ? this.sql('SELECT * FROM users WHERE removed_at IS NULL AND tag = ? ORDER BY email_id').all(tag)
        : this.sql('SELECT * FROM users WHERE removed_at IS NULL ORDER BY email_id').all()
    ) as UserRow[];
  }

  /** Group names per user (user groups), as the API's array of arrays. */
  groupsOf(emailId: number): string[][] {
    const names = this.sql(
      `SELECT g.name FROM groups g JOIN group_members m ON m.group_id = g.group_id
          WHERE g.type = 'users' AND m.member_id = ? ORDER BY g.group_id`,
      { pluck: true },
    ).all(emailId) as string[];
    return names.map((n) => [n]);
  }

  policiesOf(emailId: number): string[][] {
    const names = this.sql('SELECT p.name FROM policies p JOIN policy_members m USING (policy_id) WHERE m.email_id = ? ORDER BY p.policy_id', {
      pluck: true,
    }).all(emailId) as string[];
    return names.map((n) => [n]);
  }

  smartcards(emailId: number): CardOut[] {
    const rows = this.sql('SELECT number, label, valid_from, valid_until FROM smartcards WHERE email_id = ? ORDER BY position').all(emailId);
    return (rows as Array<Parameters<typeof cardOut>[0]>).map(cardOut);
  }

  computerUsernames(emailId: number): string[] {
    return this.sql('SELECT computer_username FROM computer_usernames WHERE email_id = ? ORDER BY position', { pluck: true }).all(emailId) as string[];
  }

  /** Card numbers held by anyone but `emailId` (for the duplicate check). */
  numbersHeldByOthers(emailId: number, numbers: readonly string[]): string[] {
    const held = this.sql('SELECT 1 FROM smartcards s JOIN users u USING (email_id) WHERE s.number = ? AND s.email_id <> ? AND u.removed_at IS NULL');
    return numbers.filter((n) => held.get(n, emailId) !== undefined);
  }

  /**
   * The duplicate check of every call that assigns cards: the numbers of `numbers` (the new list of `emailId`, or
   * of a user not created yet when null) that would make a new sharing: listed twice (more often than the user
   * already lists it), or held by another active user while this user does not hold it yet. A number the user
   * already holds never counts, so re-saving one's own list (or relabelling a card) always works.
   */
  newlyShared(emailId: number | null, numbers: readonly string[]): string[] {
    const before = new Map<string, number>();
    if (emailId !== null) for (const c of this.smartcards(emailId)) before.set(c.number, (before.get(c.number) ?? 0) + 1);
    const after = new Map<string, number>();
    for (const n of numbers) after.set(n, (after.get(n) ?? 0) + 1);
    const taken: string[] = [];
    for (const [n, count] of after) {
      const held = before.get(n) ?? 0;
      if (count > 1 && count > held) taken.push(n);
      else if (held === 0 && this.numbersHeldByOthers(emailId ?? -1, [n]).length > 0) taken.push(n);
    }
    return taken;
  }

  replaceSmartcards(emailId: number, cards: readonly CardIn[]): void {
    this.db.transaction(() => {
      this.sql('DELETE FROM smartcards WHERE email_id = ?').run(emailId);
      const insert = this.sql('INSERT INTO smartcards (email_id, position, number, label, valid_from, valid_until) VALUES (?, ?, ?, ?, ?, ?)');
      cards.forEach((c, i) => {
        insert.run(emailId, i, c.number, c.label ?? null, c.valid_from ?? null, c.valid_until ?? null);
      });
    })();
  }

  replaceComputerUsernames(emailId: number, names: readonly string[]): void {
    this.db.transaction(() => {
      this.sql('DELETE FROM computer_usernames WHERE email_id = ?').run(emailId);
      const insert = this.sql('INSERT INTO computer_usernames (email_id, position, computer_username) VALUES (?, ?, ?)');
      names.forEach((n, i) => {
        insert.run(emailId, i, n);
      });
    })();
  }

  setRank(userId: number, rank: Rank): boolean {
    return this.sql('UPDATE users SET rank = ? WHERE user_id = ? AND removed_at IS NULL').run(rank, userId).changes === 1;
  }

  promote(emailId: number): void {
    this.sql("UPDATE users SET tag = 'USER' WHERE email_id = ?").run(emailId);
  }

  toggleSuspension(emailId: number): boolean {
    this.sql('UPDATE users SET suspended = 1 - suspended WHERE email_id = ?').run(emailId);
    return this.get(emailId)!.suspended === 1;
  }

  /** A removed user's cards and computer usernames are released: deleted, so they never count again. */
  private releaseHoldings(emailId: number): void {
    this.sql('DELETE FROM smartcards WHERE email_id = ?').run(emailId);
    this.sql('DELETE FROM computer_usernames WHERE email_id = ?').run(emailId);
  }

  /**
   * DELETE /user: out of every group, its sole policies deleted (an access level's policy stays: it is defined by
   * its doors and hours, not by who holds it), its cards and computer usernames released, the record kept (marked
   * removed).
   */
  remove(emailId: number, now: number): void {
    this.db.transaction(() => {
      this.releaseHoldings(emailId);
      this.sql(`DELETE FROM group_members WHERE member_id = ? AND group_id IN (SELECT group_id FROM groups WHERE type = 'users')`).run(emailId);
      this.sql(
        `DELETE FROM policies WHERE policy_id IN (
             SELECT policy_id FROM policy_members GROUP BY policy_id HAVING count(*) = 1 AND max(email_id) = ?)
             AND policy_id NOT IN (SELECT policy_id FROM policy_levels)`,
      ).run(emailId);
      this.sql('DELETE FROM policy_members WHERE email_id = ?').run(emailId);
      this.sql('UPDATE users SET removed_at = ? WHERE email_id = ?').run(serviceTimestamp(now), emailId);
    })();
  }

  /** Every user's group names in one query (GET /multipleusers lists thousands of users). */
  allGroups(): Map<number, string[][]> {
    const rows = this.sql(
      `SELECT m.member_id AS email_id, g.name FROM groups g JOIN group_members m ON m.group_id = g.group_id
          WHERE g.type = 'users' ORDER BY g.group_id`,
    ).all() as Array<{ email_id: number; name: string }>;
    const byUser = new Map<number, string[][]>();
    for (const r of rows) {
      const list = byUser.get(r.email_id) ?? [];
      list.push([r.name]);
      byUser.set(r.email_id, list);
    }
    return byUser;
  }

  /** The list form of GET /multipleusers. */
  listItem(user: UserRow, withEmailInName: boolean, groups?: Map<number, string[][]>): Record<string, unknown> {
    const name = `${user.first_name} ${user.last_name}`.trim() || user.username;
    return {
      ad_status: user.suspended ? 'SUSPENDED' : 'ACTIVE',
      active_date: user.created,
      confirmed: user.created,
      created: user.created,
      device_added: user.created,
      email: user.email,
      email_id: user.email_id,
      email_status: user.email_status,
      first_name: user.first_name,
      last_name: user.last_name,
      groups: groups ? (groups.get(user.email_id) ?? []) : this.groupsOf(user.email_id),
      name: withEmailInName ? `${name} <${user.email}>` : name,
      user_id: user.user_id,
      username: user.username,
      unique_id: user.unique_id,
      user_tag: user.tag,
    };
  }

  /** The detail form of GET /user; every card has its `label`, null when none was given, and its dates when set. */
  detail(user: UserRow): Record<string, unknown> {
    return {
      policies: this.policiesOf(user.email_id),
      computer_usernames: this.computerUsernames(user.email_id),
      smartcards: this.smartcards(user.email_id),
    };
  }
}
