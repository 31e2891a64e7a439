import type { SqlDb } from './sql/sqlDb.js';
import { cardOut, type CardOut, type UserRow, type UserStore } from './users.js';

/** Past this many users in one pass, every membership is read in one query rather than per batch. */
const MEMBERSHIPS_AT_ONCE = 200;

/** A user as the doors see them: the GET /multipleusers item (with user_tag) and the GET /user detail. */
export interface DoorUser {
  emailId: number;
  item: Record<string, unknown>;
  detail: { policies: string[][]; computer_usernames: string[]; smartcards: CardOut[] };
}

/** Reads the users of `ids` (sorted email_ids) that are still active, in email_id order. */
export type DoorUserReader = (ids: readonly number[]) => Promise<DoorUser[]>;

function byUser<T>(rows: Array<Record<string, unknown>>, pick: (row: Record<string, unknown>) => T): Map<number, T[]> {
  const map = new Map<number, T[]>();
  for (const row of rows) {
    const id = row.email_id as number;
    const list = map.get(id);
    if (list) list.push(pick(row));
    else map.set(id, [pick(row)]);
  }
  return map;
}

const nameInArray = (r: Record<string, unknown>) => [r.name as string];

/**
 * The users of the directory, read a batch at a time (issue 28 item 1): a batch of ids costs a constant number of
 * queries whatever its size, and only that batch's rows and objects are alive at once, so a pass over 250,000
 * users never holds them all (the pass before held every user's objects and fingerprint: 600 MB).
 */
export class DirectoryUsers {
  constructor(
    private readonly db: SqlDb,
    private readonly users: UserStore,
  ) {}

  /** Every active user's email_id, in order. */
  activeIds(): Promise<number[]> {
    return this.db.column<number>('SELECT email_id FROM users WHERE removed_at IS NULL ORDER BY email_id');
  }

  /**
   * A reader for one pass over `count` users. With many, every user-group and policy membership is read once for
   * the pass (two queries, a few small arrays per user); with few, per batch.
   */
  async reader(count: number): Promise<DoorUserReader> {
    const many = count > MEMBERSHIPS_AT_ONCE;
    const allGroups = many ? await this.users.allGroups() : null;
    const allPolicies = many
      ? byUser(await this.db.all('SELECT m.email_id, p.name FROM policies p JOIN policy_members m USING (policy_id) ORDER BY p.policy_id'), nameInArray)
      : null;
    const inIds = this.db.inJsonIds;
    return async (ids) => {
      if (ids.length === 0) return [];
      const json = JSON.stringify(ids);
      const all = (text: string) => this.db.all(text, [json]);
      const rows = await this.db.all<UserRow>(`SELECT * FROM users WHERE removed_at IS NULL AND email_id ${inIds} ORDER BY email_id`, [json]);
      // As GET /user gives them: label in every card, null when none was given; the validity dates when set.
      const cards = byUser(
        await all(`SELECT email_id, number, label, valid_from, valid_until FROM smartcards WHERE email_id ${inIds} ORDER BY email_id, position`),
        (r) => cardOut(r as Parameters<typeof cardOut>[0]),
      );
      const usernames = byUser(
        await all(`SELECT email_id, computer_username FROM computer_usernames WHERE email_id ${inIds} ORDER BY email_id, position`),
        (r) => r.computer_username as string,
      );
      const groups =
        allGroups ??
        byUser(
          await all(`SELECT m.member_id AS email_id, g.name FROM groups g JOIN group_members m ON m.group_id = g.group_id
                 WHERE g.type = 'users' AND m.member_id ${inIds} ORDER BY g.group_id`),
          nameInArray,
        );
      const policies =
        allPolicies ??
        byUser(
          await all(`SELECT m.email_id, p.name FROM policies p JOIN policy_members m USING (policy_id) WHERE m.email_id ${inIds} ORDER BY p.policy_id`),
          nameInArray,
        );
      return rows.map((user) => ({
        emailId: user.email_id,
        item: this.users.doorItem(user, false, groups),
        detail: {
          policies: policies.get(user.email_id) ?? [],
          computer_usernames: usernames.get(user.email_id) ?? [],
          smartcards: cards.get(user.email_id) ?? [],
        },
      }));
    };
  }
}
