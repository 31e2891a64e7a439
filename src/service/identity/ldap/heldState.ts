import type { IdentitySource } from '../../../api/identity.js';
import type { SqlDb } from '../../sql/sqlDb.js';
import type { LdapSnapshot } from './ldapEntries.js';
import type { HeldGroup } from './syncGroupPlan.js';
import type { HeldCard } from './syncCardPlan.js';
import type { HeldState, HeldUser } from './syncPlan.js';

/**
 * What an LDAP sync compares a read with (syncPlan.ts's HeldState), in a few queries whatever the number of users:
 * the users and user groups LDAP owns, the other users an entry's e-mail names, and with cards mapped, their cards
 * and who holds each number the entries carry.
 */

type UserRow = {
  email_id: number;
  email: string;
  first_name: string;
  last_name: string;
  username: string;
  rank: HeldUser['rank'];
  suspended: number;
  source: IdentitySource;
  removed_at: string | null;
  external_id: string | null;
  source_dn: string | null;
};
const USER_COLUMNS = 'email_id, email, first_name, last_name, username, rank, suspended, source, removed_at, external_id, source_dn';

const heldUser = (r: UserRow): HeldUser => ({
  emailId: r.email_id,
  email: r.email,
  firstName: r.first_name,
  lastName: r.last_name,
  username: r.username,
  rank: r.rank,
  suspended: r.suspended === 1,
  source: r.source,
  removed: r.removed_at !== null,
  externalId: r.external_id,
  sourceDn: r.source_dn,
  cards: [],
});

/** Reads what the service holds for `snapshot`; `cardsMapped`: the site maps cards or PINs from LDAP. */
export async function readHeldState(db: SqlDb, snapshot: LdapSnapshot, cardsMapped: boolean): Promise<HeldState> {
  const ldapUsers = (await db.all<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE source = 'ldap' AND removed_at IS NULL ORDER BY email_id`)).map(heldUser);
  const emails = [...new Set(snapshot.people.flatMap((p) => (p.email === null ? [] : [p.email])))];
  // lower() on both sides: PostgreSQL's CITEXT column would compare with the JSON's text values case-sensitively.
  const others = (
    await db.all<UserRow>(
      `SELECT ${USER_COLUMNS} FROM users WHERE NOT (source = 'ldap' AND removed_at IS NULL) AND lower(email) ${db.inJsonTexts} ORDER BY email_id`,
      [JSON.stringify(emails)],
    )
  ).map(heldUser);

  const cardHolders = new Map<string, number[]>();
  if (cardsMapped) {
    const byId = new Map<number, HeldUser>();
    for (const u of [...ldapUsers, ...others]) if (!u.removed) byId.set(u.emailId, u);
    const cards = await db.all<{ email_id: number; number: string; label: string | null; valid_from: string | null; valid_until: string | null }>(
      `SELECT s.email_id, s.number, s.label, s.valid_from, s.valid_until FROM smartcards s JOIN users u ON u.email_id = s.email_id
         WHERE u.removed_at IS NULL AND (u.source = 'ldap' OR s.email_id ${db.inJsonIds}) ORDER BY s.email_id, s.position`,
      [JSON.stringify([...byId.keys()])],
    );
    for (const c of cards) {
      const card: HeldCard = { number: c.number, label: c.label, validFrom: c.valid_from, validUntil: c.valid_until };
      byId.get(c.email_id)?.cards.push(card);
    }
    const numbers = [...new Set(snapshot.people.flatMap((p) => [p.card, p.pin].filter((n): n is string => n !== null)))];
    const held = await db.all<{ number: string; email_id: number }>(
      `SELECT s.number, s.email_id FROM smartcards s JOIN users u ON u.email_id = s.email_id WHERE u.removed_at IS NULL AND s.number ${db.inJsonTexts}`,
      [JSON.stringify(numbers)],
    );
    for (const h of held) cardHolders.set(h.number, [...(cardHolders.get(h.number) ?? []), h.email_id]);
  }

  const groups = (
    await db.all<{ group_id: number; name: string; external_id: string | null; source_dn: string | null; source_gone_at: number | null }>(
      "SELECT group_id, name, external_id, source_dn, source_gone_at FROM groups WHERE type = 'users' AND source = 'ldap' ORDER BY group_id",
    )
  ).map(
    (g): HeldGroup => ({ groupId: g.group_id, name: g.name, externalId: g.external_id, sourceDn: g.source_dn, gone: g.source_gone_at !== null, members: [] }),
  );
  const groupById = new Map(groups.map((g) => [g.groupId, g]));
  const members = await db.all<{ group_id: number; member_id: number }>(
    `SELECT m.group_id, m.member_id FROM group_members m JOIN groups g ON g.group_id = m.group_id
       WHERE g.type = 'users' AND g.source = 'ldap' ORDER BY m.group_id, m.member_id`,
  );
  for (const m of members) groupById.get(m.group_id)?.members.push(m.member_id);
  const otherGroupNames = (await db.all<{ name: string }>("SELECT name FROM groups WHERE type = 'users' AND source <> 'ldap'")).map((g) => g.name);
  return { ldapUsers, others, groups, cardHolders, otherGroupNames };
}
