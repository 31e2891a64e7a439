import { randomUUID } from 'node:crypto';
import type { IdentitySource } from '../api/identity.js';
import { DEFAULT_PIN_LABELS, pinLabelSet } from '../core/credentials.js';
import type { Rank } from './apiKeys.js';
import { credentialKey, spellings, type CardEntry, type Sharing } from './cardSharing.js';
import type { SqlDb } from './sql/sqlDb.js';

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
  /** Who owns the user (docs/identity-sources.md): 'local', 'scim' or 'ldap'. */
  source: IdentitySource;
  /** SCIM: the provider's externalId; LDAP: the entry's id attribute. */
  external_id: string | null;
  /** LDAP: the entry's DN when last read. */
  source_dn: string | null;
  /** When its source last wrote or confirmed it (ms). */
  source_seen_at: number | null;
}

/**
 * Users of the organization: the list and detail forms of docs/access-control-api.md, and their transitions. Every
 * method that reads or writes the database is asynchronous (SqlDb: SQLite or PostgreSQL); a change made of several
 * statements is one transaction, so a second request (or a second service process) never sees half of it.
 */
export class UserStore {
  private readonly pinLabels: ReadonlySet<string>;

  constructor(
    private readonly db: SqlDb,
    /** server.pinLabels: which cards are PINs, for the duplicate check (a PIN keeps its leading zeros). */
    pinLabels: readonly string[] = DEFAULT_PIN_LABELS,
  ) {
    this.pinLabels = pinLabelSet(pinLabels);
  }

  /** The email_ids of `ids` that are active users, in one query. */
  async activeIds(ids: readonly number[]): Promise<Set<number>> {
    return new Set(
      await this.db.column<number>(`SELECT email_id FROM users WHERE removed_at IS NULL AND email_id ${this.db.inJsonIds}`, [JSON.stringify(ids)]),
    );
  }

  async get(emailId: number): Promise<UserRow | undefined> {
    return this.db.get<UserRow>('SELECT * FROM users WHERE email_id = ? AND removed_at IS NULL', [emailId]);
  }

  /** The active user of this e-mail address, in any case (the column compares case-blind on both engines). */
  async byEmail(email: string): Promise<UserRow | undefined> {
    return this.db.get<UserRow>('SELECT * FROM users WHERE email = ? AND removed_at IS NULL', [email]);
  }

  /**
   * Creates a user (or returns the existing one). A removed user with the same e-mail is brought back on the same
   * record (email_id, user_id, unique_id) as a new member: the caller's tag, rank REGULAR, not suspended, dated
   * now, with no cards or computer usernames (released at removal; cleared here too for records removed before), and
   * local (a source that removed them no longer owns them; one that brings them back sets its own source after).
   * One transaction: two requests (or two service processes) inviting the same address make one user, and two new
   * users never get the same user_id (the next one is read and taken in the same transaction).
   */
  async ensure(email: string, tag: 'USER' | 'GUEST', now: number): Promise<{ user: UserRow; created: boolean }> {
    return this.db.transaction(async () => {
      const existing = await this.db.get<UserRow>('SELECT * FROM users WHERE email = ?', [email]);
      if (existing && existing.removed_at === null) return { user: existing, created: false };
      if (existing) {
        await this.releaseHoldings(existing.email_id);
        await this.db.run(
          `UPDATE users SET removed_at = NULL, tag = ?, rank = 'REGULAR', suspended = 0, created = ?,
             source = 'local', external_id = NULL, source_dn = NULL, source_seen_at = NULL WHERE email_id = ?`,
          [tag, serviceTimestamp(now), existing.email_id],
        );
        return { user: (await this.get(existing.email_id))!, created: true };
      }
      const local = email.split('@')[0] ?? email;
      const emailId = await this.db.value<number>(
        `INSERT INTO users (user_id, email, first_name, username, tag, unique_id, created)
           VALUES ((SELECT coalesce(max(user_id), 0) + 1 FROM users), ?, ?, ?, ?, ?, ?) RETURNING email_id`,
        [email, local, local, tag, randomUUID(), serviceTimestamp(now)],
      );
      return { user: (await this.get(emailId!))!, created: true };
    });
  }

  async list(tag?: 'USER' | 'GUEST'): Promise<UserRow[]> {
    return tag
      ? this.db.all<UserRow>('SELECT * FROM users WHERE removed_at IS NULL AND tag = ? ORDER BY email_id', [tag])
      : this.db.all<UserRow>('SELECT * FROM users WHERE removed_at IS NULL ORDER BY email_id');
  }

  /** Group names per user (user groups), as the API's array of arrays. */
  async groupsOf(emailId: number): Promise<string[][]> {
    const names = await this.db.column<string>(
      `SELECT g.name FROM groups g JOIN group_members m ON m.group_id = g.group_id
          WHERE g.type = 'users' AND m.member_id = ? ORDER BY g.group_id`,
      [emailId],
    );
    return names.map((n) => [n]);
  }

  async policiesOf(emailId: number): Promise<string[][]> {
    const names = await this.db.column<string>(
      'SELECT p.name FROM policies p JOIN policy_members m USING (policy_id) WHERE m.email_id = ? ORDER BY p.policy_id',
      [emailId],
    );
    return names.map((n) => [n]);
  }

  async smartcards(emailId: number): Promise<CardOut[]> {
    const rows = await this.db.all<Parameters<typeof cardOut>[0]>(
      'SELECT number, label, valid_from, valid_until FROM smartcards WHERE email_id = ? ORDER BY position',
      [emailId],
    );
    return rows.map(cardOut);
  }

  async computerUsernames(emailId: number): Promise<string[]> {
    return this.db.column<string>('SELECT computer_username FROM computer_usernames WHERE email_id = ? ORDER BY position', [emailId]);
  }

  /** Which credential a card is at a door (cardSharing.ts), with this service's PIN labels (server.pinLabels). */
  credentialKey(card: CardEntry): string {
    return credentialKey(card, this.pinLabels);
  }

  /**
   * The duplicate check of every call that assigns cards: what `cards` (the new list of `emailId`, or of a user not
   * created yet when null) would newly share, compared as a door compares them (cardSharing.ts: "0004213578" is
   * "4213578"; a PIN keeps its digits). Listed twice: more often than the user already lists it. Held by others:
   * by another active user while this user does not hold it yet. A number the user already holds never counts, so
   * re-saving one's own list (or relabelling a card) always works. The caller runs it in the transaction that
   * assigns the cards: a card given to someone else meanwhile is seen, not shared.
   */
  async sharing(emailId: number | null, cards: readonly CardEntry[]): Promise<Sharing> {
    const held = new Map<string, number>();
    for (const c of emailId === null ? [] : await this.smartcards(emailId)) {
      const key = this.credentialKey(c);
      held.set(key, (held.get(key) ?? 0) + 1);
    }
    // Each credential with the numbers as this request gives it (the messages name those).
    const listed = new Map<string, string[]>();
    for (const c of cards) {
      const key = this.credentialKey(c);
      listed.set(key, [...(listed.get(key) ?? []), c.number]);
    }
    const listedTwice: string[] = [];
    const notHeld: string[] = [];
    for (const [key, numbers] of listed) {
      const before = held.get(key) ?? 0;
      if (numbers.length > 1 && numbers.length > before) listedTwice.push(...numbers);
      else if (before === 0) notHeld.push(key);
    }
    const taken = await this.heldByOthers(emailId ?? -1, notHeld);
    return { listedTwice, heldByOthers: notHeld.filter((key) => taken.has(key)).flatMap((key) => listed.get(key)!) };
  }

  /** The numbers of `cards` (a bare number is a card) that sharing() finds listed twice or held by others. */
  async newlyShared(emailId: number | null, cards: readonly (string | CardEntry)[]): Promise<string[]> {
    const found = await this.sharing(
      emailId,
      cards.map((c) => (typeof c === 'string' ? { number: c } : c)),
    );
    return [...found.listedTwice, ...found.heldByOthers];
  }

  /** Which of `keys` (credentialKey) an active user other than `emailId` holds, in any spelling. */
  private async heldByOthers(emailId: number, keys: readonly string[]): Promise<Set<string>> {
    const wanted = new Set(keys);
    const taken = new Set<string>();
    // A card is some 40 spellings: 100 cards a query keeps each one's list of numbers to a few thousand.
    for (let i = 0; i < keys.length; i += 100) {
      const rows = await this.db.all<CardEntry>(
        `SELECT s.number, s.label FROM smartcards s JOIN users u USING (email_id)
            WHERE s.number ${this.db.inJsonTexts} AND s.email_id <> ? AND u.removed_at IS NULL`,
        [JSON.stringify(keys.slice(i, i + 100).flatMap(spellings)), emailId],
      );
      for (const key of rows.map((row) => this.credentialKey(row))) if (wanted.has(key)) taken.add(key);
    }
    return taken;
  }

  async replaceSmartcards(emailId: number, cards: readonly CardIn[]): Promise<void> {
    await this.db.transaction(async () => {
      await this.db.run('DELETE FROM smartcards WHERE email_id = ?', [emailId]);
      for (const [i, c] of cards.entries()) {
        await this.db.run('INSERT INTO smartcards (email_id, position, number, label, valid_from, valid_until) VALUES (?, ?, ?, ?, ?, ?)', [
          emailId,
          i,
          c.number,
          c.label ?? null,
          c.valid_from ?? null,
          c.valid_until ?? null,
        ]);
      }
    });
  }

  async replaceComputerUsernames(emailId: number, names: readonly string[]): Promise<void> {
    await this.db.transaction(async () => {
      await this.db.run('DELETE FROM computer_usernames WHERE email_id = ?', [emailId]);
      for (const [i, n] of names.entries()) {
        await this.db.run('INSERT INTO computer_usernames (email_id, position, computer_username) VALUES (?, ?, ?)', [emailId, i, n]);
      }
    });
  }

  async setRank(userId: number, rank: Rank): Promise<boolean> {
    return (await this.db.run('UPDATE users SET rank = ? WHERE user_id = ? AND removed_at IS NULL', [rank, userId])).changes === 1;
  }

  async promote(emailId: number): Promise<void> {
    await this.db.run("UPDATE users SET tag = 'USER' WHERE email_id = ?", [emailId]);
  }

  /** Flips the user's suspension; whether this call left them suspended (the flip and its reading, one transaction). */
  async toggleSuspension(emailId: number): Promise<boolean> {
    return this.db.transaction(async () => {
      await this.db.run('UPDATE users SET suspended = 1 - suspended WHERE email_id = ?', [emailId]);
      return (await this.db.value<number>('SELECT suspended FROM users WHERE email_id = ?', [emailId])) === 1;
    });
  }

  /** A removed user's cards and computer usernames are released: deleted, so they never count again. */
  private async releaseHoldings(emailId: number): Promise<void> {
    await this.db.run('DELETE FROM smartcards WHERE email_id = ?', [emailId]);
    await this.db.run('DELETE FROM computer_usernames WHERE email_id = ?', [emailId]);
  }

  /**
   * DELETE /user: out of every group, its sole policies deleted (an access level's policy stays: it is defined by
   * its doors and hours, not by who holds it), its cards and computer usernames released, the record kept (marked
   * removed).
   */
  async remove(emailId: number, now: number): Promise<void> {
    await this.db.transaction(async () => {
      await this.releaseHoldings(emailId);
      await this.db.run(`DELETE FROM group_members WHERE member_id = ? AND group_id IN (SELECT group_id FROM groups WHERE type = 'users')`, [emailId]);
      await this.db.run(
        `DELETE FROM policies WHERE policy_id IN (
             SELECT policy_id FROM policy_members GROUP BY policy_id HAVING count(*) = 1 AND max(email_id) = ?)
             AND policy_id NOT IN (SELECT policy_id FROM policy_levels)`,
        [emailId],
      );
      await this.db.run('DELETE FROM policy_members WHERE email_id = ?', [emailId]);
      await this.db.run('UPDATE users SET removed_at = ? WHERE email_id = ?', [serviceTimestamp(now), emailId]);
    });
  }

  /** Every user's group names in one query (GET /multipleusers lists thousands of users). */
  async allGroups(): Promise<Map<number, string[][]>> {
    const rows = await this.db.all<{ email_id: number; name: string }>(
      `SELECT m.member_id AS email_id, g.name FROM groups g JOIN group_members m ON m.group_id = g.group_id
          WHERE g.type = 'users' ORDER BY g.group_id`,
    );
    const byUser = new Map<number, string[][]>();
    for (const r of rows) {
      const list = byUser.get(r.email_id) ?? [];
      list.push([r.name]);
      byUser.set(r.email_id, list);
    }
    return byUser;
  }

  /**
   * The list form of GET /multipleusers, with the user's groups from `groups` (allGroups, or the user's own), and
   * who owns the user (`source`: docs/identity-sources.md).
   */
  listItem(user: UserRow, withEmailInName: boolean, groups: ReadonlyMap<number, string[][]>): Record<string, unknown> {
    return Object.assign(this.doorItem(user, withEmailInName, groups), { source: user.source });
  }

  /**
   * The list form as GET /directory gives it to the doors: without `source`. Who owns a user decides nothing at a
   * door, so a source claiming a user changes no byte of a revision.
   */
  doorItem(user: UserRow, withEmailInName: boolean, groups: ReadonlyMap<number, string[][]>): Record<string, unknown> {
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
      groups: groups.get(user.email_id) ?? [],
      name: withEmailInName ? `${name} <${user.email}>` : name,
      user_id: user.user_id,
      username: user.username,
      unique_id: user.unique_id,
      user_tag: user.tag,
    };
  }

  /**
   * The detail form of GET /user; every card has its `label`, null when none was given, and its dates when set; and
   * who owns the user. (GET /directory's details are read apart, without `source`: directoryUsers.ts.)
   */
  async detail(user: UserRow): Promise<Record<string, unknown>> {
    return {
      policies: await this.policiesOf(user.email_id),
      computer_usernames: await this.computerUsernames(user.email_id),
      smartcards: await this.smartcards(user.email_id),
      source: user.source,
    };
  }
}
