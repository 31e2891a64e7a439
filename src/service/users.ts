import { randomUUID } from 'node:crypto';
import type { ServiceDb as Db } from './database.js';
import type { Rank } from './apiKeys.js';

/** Service time format: UTC `YYYY-MM-DD hh:mm:ss`. */
export function serviceTimestamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
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

/** Users of the organization: the list and detail forms of access-control-api.md, and their transitions. */
export class UserStore {
  constructor(private readonly db: Db) {}

  get(emailId: number): UserRow | undefined {
    return this.db.prepare('SELECT * FROM users WHERE email_id = ? AND removed_at IS NULL').get(emailId) as UserRow | undefined;
  }

  byEmail(email: string): UserRow | undefined {
    return this.db.prepare('SELECT * FROM users WHERE email = ? AND removed_at IS NULL').get(email) as UserRow | undefined;
  }

  /** Creates a user (or returns the existing one); a removed user with the same e-mail is brought back. */
  ensure(email: string, tag: 'USER' | 'GUEST', now: number): { user: UserRow; created: boolean } {
    const existing = this.db.prepare('SELECT * FROM users WHERE email = ?').get(email) as UserRow | undefined;
    if (existing && existing.removed_at === null) return { user: existing, created: false };
    if (existing) {
      this.db.prepare('UPDATE users SET removed_at = NULL, tag = ?, suspended = 0 WHERE email_id = ?').run(tag, existing.email_id);
      return { user: this.get(existing.email_id)!, created: true };
    }
    const local = email.split('@')[0] ?? email;
    const nextUserId = (this.db.prepare('SELECT coalesce(max(user_id), 0) + 1 FROM users').pluck().get() as number) ?? 1;
    const info = this.db
      .prepare(
        `INSERT INTO users (user_id, email, first_name, username, tag, unique_id, created) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(nextUserId, email, local, local, tag, randomUUID(), serviceTimestamp(now));
    return { user: this.get(Number(info.lastInsertRowid))!, created: true };
  }

  list(tag?: 'USER' | 'GUEST'): UserRow[] {
    return (tag
      ? this.db.prepare('SELECT * FROM users WHERE removed_at IS NULL AND tag = ? ORDER BY email_id').all(tag)
      : this.db.prepare('SELECT * FROM users WHERE removed_at IS NULL ORDER BY email_id').all()) as UserRow[];
  }

  /** Group names per user (user groups), as the API's array of arrays. */
  groupsOf(emailId: number): string[][] {
    const names = this.db
      .prepare(
        `SELECT g.name FROM groups g JOIN group_members m ON m.group_id = g.group_id
          WHERE g.type = 'users' AND m.member_id = ? ORDER BY g.group_id`,
      )
      .pluck()
      .all(emailId) as string[];
    return names.map((n) => [n]);
  }

  policiesOf(emailId: number): string[][] {
    const names = this.db
      .prepare('SELECT p.name FROM policies p JOIN policy_members m USING (policy_id) WHERE m.email_id = ? ORDER BY p.policy_id')
      .pluck()
      .all(emailId) as string[];
    return names.map((n) => [n]);
  }

  smartcards(emailId: number): Array<{ number: string; label: string | null }> {
    return this.db
      .prepare('SELECT number, label FROM smartcards WHERE email_id = ? ORDER BY position')
      .all(emailId) as Array<{ number: string; label: string | null }>;
  }

  computerUsernames(emailId: number): string[] {
    return this.db.prepare('SELECT computer_username FROM computer_usernames WHERE email_id = ? ORDER BY position').pluck().all(emailId) as string[];
  }

  /** Card numbers held by anyone but `emailId` (for the duplicate check). */
  numbersHeldByOthers(emailId: number, numbers: readonly string[]): string[] {
    const held = this.db.prepare(
      'SELECT 1 FROM smartcards s JOIN users u USING (email_id) WHERE s.number = ? AND s.email_id <> ? AND u.removed_at IS NULL',
    );
    return numbers.filter((n) => held.get(n, emailId) !== undefined);
  }

  replaceSmartcards(emailId: number, cards: ReadonlyArray<{ number: string; label?: string | null }>): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM smartcards WHERE email_id = ?').run(emailId);
      const insert = this.db.prepare('INSERT INTO smartcards (email_id, position, number, label) VALUES (?, ?, ?, ?)');
      cards.forEach((c, i) => insert.run(emailId, i, c.number, c.label ?? null));
    })();
  }

  replaceComputerUsernames(emailId: number, names: readonly string[]): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM computer_usernames WHERE email_id = ?').run(emailId);
      const insert = this.db.prepare('INSERT INTO computer_usernames (email_id, position, computer_username) VALUES (?, ?, ?)');
      names.forEach((n, i) => insert.run(emailId, i, n));
    })();
  }

  setRank(userId: number, rank: Rank): boolean {
    return this.db.prepare('UPDATE users SET rank = ? WHERE user_id = ? AND removed_at IS NULL').run(rank, userId).changes === 1;
  }

  promote(emailId: number): void {
    this.db.prepare("UPDATE users SET tag = 'USER' WHERE email_id = ?").run(emailId);
  }

  toggleSuspension(emailId: number): boolean {
    this.db.prepare('UPDATE users SET suspended = 1 - suspended WHERE email_id = ?').run(emailId);
    return this.get(emailId)!.suspended === 1;
  }

  /** DELETE /user: out of every group, its sole policies deleted, the record kept (marked removed). */
  remove(emailId: number, now: number): void {
    this.db.transaction(() => {
      this.db.prepare(`DELETE FROM group_members WHERE member_id = ? AND group_id IN (SELECT group_id FROM groups WHERE type = 'users')`).run(emailId);
      this.db
        .prepare(
          `DELETE FROM policies WHERE policy_id IN (
             SELECT policy_id FROM policy_members GROUP BY policy_id HAVING count(*) = 1 AND max(email_id) = ?)`,
        )
        .run(emailId);
      this.db.prepare('DELETE FROM policy_members WHERE email_id = ?').run(emailId);
      this.db.prepare('UPDATE users SET removed_at = ? WHERE email_id = ?').run(serviceTimestamp(now), emailId);
    })();
  }

  /** Every user's group names in one query (GET /multipleusers lists thousands of users). */
  allGroups(): Map<number, string[][]> {
    const rows = this.db
      .prepare(
        `SELECT m.member_id AS email_id, g.name FROM groups g JOIN group_members m ON m.group_id = g.group_id
          WHERE g.type = 'users' ORDER BY g.group_id`,
      )
      .all() as Array<{ email_id: number; name: string }>;
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

  /** The detail form of GET /user. */
  detail(user: UserRow): Record<string, unknown> {
    return {
      policies: this.policiesOf(user.email_id),
      computer_usernames: this.computerUsernames(user.email_id),
      smartcards: this.smartcards(user.email_id).map((c) => (c.label === null ? { number: c.number } : c)),
    };
  }
}
