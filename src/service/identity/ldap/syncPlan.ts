import type { IdentitySource, SyncCounts } from '../../../api/identity.js';
import type { LdapPerson, LdapSnapshot } from './ldapEntries.js';
import { desiredMemberships, indexBy, planGroups, type GoneGroup, type GroupChange, type HeldGroup } from './syncGroupPlan.js';

/**
 * What one LDAP sync would change (docs/identity-sources.md, "What a sync does"): the users and user groups LDAP
 * owns, and the local or SCIM users an entry's e-mail names, compared with what a read of LDAP found. Pure: no IO.
 * Only what differs becomes an operation, so a sync where nothing changed plans nothing and writes nothing.
 */

/** A card or PIN as the service holds it. */
export interface HeldCard {
  number: string;
  label: string | null;
  validFrom: string | null;
  validUntil: string | null;
}

/** A user as the service holds them. */
export interface HeldUser {
  emailId: number;
  email: string;
  firstName: string;
  lastName: string;
  username: string;
  suspended: boolean;
  source: IdentitySource;
  /** Removed (DELETE /user, or by an earlier sync): the record is kept and an entry of its e-mail brings it back. */
  removed: boolean;
  externalId: string | null;
  sourceDn: string | null;
  /** Its cards and PINs, in order; read only when the site maps them from LDAP ([] otherwise). */
  cards: HeldCard[];
}

/** What the service holds that a sync compares with LDAP. */
export interface HeldState {
  /** The users LDAP owns that are not removed. */
  ldapUsers: HeldUser[];
  /** Any other user (local or SCIM, or removed) whose e-mail one of the entries has. */
  others: HeldUser[];
  /** The user groups LDAP owns, gone ones included. */
  groups: HeldGroup[];
  /** With cards mapped: for each card number or PIN the entries carry, the active users (email_ids) holding it. */
  cardHolders: ReadonlyMap<string, readonly number[]>;
}

/** Which of a user's cards LDAP gives (attributes.card, attributes.pin); null: cards stay at the service. */
export interface CardMapping {
  card: boolean;
  pin: boolean;
  /** The label of a PIN: the first of server.pinLabels. */
  pinLabel: string;
}

export interface PlanOptions {
  onMissing: 'suspend' | 'remove';
  cards: CardMapping | null;
}

/** The label of a card LDAP gives. */
export const LDAP_CARD_LABEL = 'LDAP';

/** The columns of a user a sync writes (a create: all of them; otherwise only those that changed). */
export interface UserFields {
  email?: string;
  firstName?: string;
  lastName?: string;
  username?: string;
  externalId?: string;
  sourceDn?: string;
}

export interface NewCard {
  number: string;
  label: string;
}

/** What one user's change adds to the run's counts. */
export type Tally = Partial<Pick<SyncCounts, 'created' | 'claimed' | 'updated' | 'suspended' | 'reactivated' | 'removed' | 'memberships'>>;

/**
 * One user's change. `create`: a new user from an entry; `claim`: a local user with an entry's e-mail, now LDAP's;
 * `update`: a user LDAP owns whose entry changed; `gone`: one whose entry is no longer read.
 */
export interface UserChange {
  action: 'create' | 'claim' | 'update' | 'gone';
  /** null for a create. */
  emailId: number | null;
  /** The user's e-mail after the change (logs, the guard's sample). */
  email: string;
  fields: UserFields;
  /** true: suspended, false: active again; absent: as they are. A create: the entry's state. */
  suspended?: boolean;
  /** Removed as DELETE /user does (onMissing: remove). */
  remove?: boolean;
  /** The new cards and PINs, when they change. */
  cards?: NewCard[];
  /** Groups joined, by key (the group entry's id). */
  join: string[];
  /** Groups left (LDAP's), by group_id. */
  leave: number[];
  /** What it adds to the run's counts. */
  tally: Tally;
  /** It suspends or removes a user who is active now: what the guard counts. */
  locksOut: boolean;
}

/** An entry the sync leaves alone, and why (logged, counted in skipped). */
export interface Skip {
  dn: string;
  email: string | null;
  reason: string;
}

/** A card or PIN of an entry that is not given (logged with its last 4 digits at most). */
export interface CardNote {
  email: string;
  /** A card's last 4 digits; '' for a PIN, and for a value that is not a number. */
  last4: string;
  reason: string;
}

export interface SyncPlan {
  users: UserChange[];
  groups: GroupChange[];
  /** The group_id of each live user group LDAP owns, by key (a new one's comes from its insert). */
  groupIds: ReadonlyMap<string, number>;
  gone: GoneGroup[];
  /** Members of LDAP's live groups that no entry makes members (a user LDAP does not own): taken out. */
  strays: Array<{ groupId: number; emailId: number }>;
  skips: Skip[];
  cardNotes: CardNote[];
  counts: SyncCounts;
  /** The users LDAP owns that are active (not suspended) before the sync: the guard's whole. */
  ldapActive: number;
}

/** The counts of a run that changed nothing. */
export function zeroCounts(entries = 0, groups = 0): SyncCounts {
  return {
    entries,
    groups,
    created: 0,
    claimed: 0,
    updated: 0,
    suspended: 0,
    reactivated: 0,
    removed: 0,
    memberships: 0,
    groupsChanged: 0,
    skipped: 0,
  };
}

/** Adds a change's tally to `counts`. */
export function addTally(counts: Required<Tally>, tally: Tally): void {
  for (const [key, n] of Object.entries(tally) as Array<[keyof Tally, number]>) counts[key] += n;
}

/** Whether a plan writes anything. */
export function planChangesNothing(plan: SyncPlan): boolean {
  return plan.users.length === 0 && plan.groups.length === 0 && plan.gone.length === 0 && plan.strays.length === 0;
}

/** What the agents store of a card or PIN number (params.ts smartcardParam): 1 to 40 digits. */
const CARD_NUMBER = /^\d{1,40}$/;

const lower = (s: string) => s.toLowerCase();
const NO_KEYS: ReadonlySet<string> = new Set();

/** The fields of `user` that differ from the entry's (e-mail compared case-blind, as the column does). */
function changedFields(user: HeldUser, person: LdapPerson & { email: string }): UserFields {
  const fields: UserFields = {};
  if (lower(user.email) !== person.email) fields.email = person.email;
  if (user.firstName !== person.firstName) fields.firstName = person.firstName;
  if (user.lastName !== person.lastName) fields.lastName = person.lastName;
  if (user.username !== person.username) fields.username = person.username;
  if (user.externalId !== person.id) fields.externalId = person.id;
  if (user.sourceDn !== person.dn) fields.sourceDn = person.dn;
  return fields;
}

function sameCards(held: readonly HeldCard[], wanted: readonly NewCard[]): boolean {
  return (
    held.length === wanted.length &&
    held.every((c, i) => c.number === wanted[i]!.number && c.label === wanted[i]!.label && c.validFrom === null && c.validUntil === null)
  );
}

/** Plans a sync: `held` (what the service holds) brought to `snapshot` (what LDAP says). */
export function planSync(held: HeldState, snapshot: LdapSnapshot, options: PlanOptions): SyncPlan {
  const counts = zeroCounts(snapshot.people.length, snapshot.groups.length);
  const skips: Skip[] = [];
  const cardNotes: CardNote[] = [];
  const users: UserChange[] = [];

  // --- Groups: matched by id, else by DN (a group whose id attribute changed); the others are gone.
  const groupPlan = planGroups(held.groups, snapshot.groups);
  counts.groupsChanged += groupPlan.changes.length + groupPlan.gone.filter((g) => g.mark).length;
  for (const g of groupPlan.gone) counts.memberships += g.members.length;

  // Each entry's groups, by key: from the groups' member lists, or the entries' memberOf.
  const wantedGroups = desiredMemberships(snapshot);
  // The live groups each user is in now, by key.
  const heldGroups = new Map<number, Set<string>>();
  for (const [key, groupId] of groupPlan.groupIds) {
    for (const member of groupPlan.membersOf.get(groupId) ?? []) {
      const keys = heldGroups.get(member) ?? new Set<string>();
      keys.add(key);
      heldGroups.set(member, keys);
    }
  }
  // Most users' groups are as LDAP says: one answer for them all (its arrays are never written to).
  const none = { join: [] as string[], leave: [] as number[] };
  const membership = (emailId: number | null, personId: string | null): { join: string[]; leave: number[] } => {
    const wanted = (personId === null ? undefined : wantedGroups.get(personId)) ?? NO_KEYS;
    const have = (emailId === null ? undefined : heldGroups.get(emailId)) ?? NO_KEYS;
    if (wanted.size === 0 && have.size === 0) return none;
    if (wanted.size === have.size && [...wanted].every((k) => have.has(k))) return none;
    return {
      join: [...wanted].filter((k) => !have.has(k)),
      leave: [...have].filter((k) => !wanted.has(k)).map((k) => groupPlan.groupIds.get(k)!),
    };
  };

  // --- Cards and PINs, when mapped: numbers another active user holds are not given (UserStore.newlyShared's rule).
  const holders = new Map<string, Set<number>>();
  for (const [number, ids] of held.cardHolders) holders.set(number, new Set(ids));
  const planCards = (holderId: number, heldCards: readonly HeldCard[], person: LdapPerson & { email: string }): NewCard[] | undefined => {
    const mapping = options.cards;
    if (mapping === null) return undefined;
    const own = new Set(heldCards.map((c) => c.number));
    const wanted: NewCard[] = [];
    const offer = (number: string | null, label: string, what: string) => {
      if (number === null) return;
      if (!CARD_NUMBER.test(number)) {
        cardNotes.push({ email: person.email, last4: '', reason: `its ${what} is not 1 to 40 digits` });
        return;
      }
      const heldElsewhere = [...(holders.get(number) ?? [])].some((id) => id !== holderId);
      if (wanted.some((c) => c.number === number) || (heldElsewhere && !own.has(number))) {
        // A PIN's last digits are most of it: never written anywhere.
        cardNotes.push({ email: person.email, last4: what === 'PIN' ? '' : number.slice(-4), reason: `its ${what} is held by another user` });
        return;
      }
      wanted.push({ number, label });
    };
    if (mapping.card) offer(person.card, LDAP_CARD_LABEL, 'card');
    if (mapping.pin) offer(person.pin, mapping.pinLabel, 'PIN');
    if (sameCards(heldCards, wanted)) return undefined;
    for (const c of heldCards) holders.get(c.number)?.delete(holderId);
    for (const c of wanted) {
      const ids = holders.get(c.number) ?? new Set<number>();
      ids.add(holderId);
      holders.set(c.number, ids);
    }
    return wanted;
  };

  // --- Users.
  const ldapById = indexBy(held.ldapUsers, (u) => u.externalId);
  const ldapByEmail = indexBy(held.ldapUsers, (u) => lower(u.email));
  const othersByEmail = indexBy(held.others, (u) => lower(u.email));
  const entryIds = new Set(snapshot.people.map((p) => p.id));
  // The e-mails two or more entries have, with their entries.
  const emailCount = new Map<string, number>();
  for (const p of snapshot.people) if (p.email !== null) emailCount.set(p.email, (emailCount.get(p.email) ?? 0) + 1);
  const shared = new Map<string, LdapPerson[]>();
  for (const p of snapshot.people) if (p.email !== null && emailCount.get(p.email)! > 1) shared.set(p.email, [...(shared.get(p.email) ?? []), p]);
  /** The LDAP users an entry stands for (matched, whether or not the entry is skipped): not gone. */
  const seen = new Set<number>();
  /** The new users so far (each stands as a negative id among the cards' holders). */
  let newUsers = 0;

  for (const person of snapshot.people) {
    const byId = ldapById.get(person.id);
    if (byId) seen.add(byId.emailId);
    const skip = (reason: string) => {
      skips.push({ dn: person.dn, email: person.email, reason });
      counts.skipped++;
    };
    if (person.email === null) {
      skip('the entry has no e-mail address');
      continue;
    }
    const entry = person as LdapPerson & { email: string };
    const sharing = shared.get(entry.email);
    if (sharing !== undefined) {
      skip(`${sharing.length} entries have the e-mail ${entry.email}: ${sharing.map((p) => p.dn).join('; ')}`);
      continue;
    }
    // An LDAP user of this e-mail whose id no entry has (its id attribute changed, or a new entry took over a leaver's
    // address): the same user, re-keyed.
    const byEmail = ldapByEmail.get(entry.email);
    const rekeyed = !byId && byEmail && !seen.has(byEmail.emailId) && (byEmail.externalId === null || !entryIds.has(byEmail.externalId)) ? byEmail : undefined;
    const user = byId ?? rekeyed;
    if (user) {
      seen.add(user.emailId);
      const fields = changedFields(user, entry);
      if (fields.email !== undefined) {
        const holder = ldapByEmail.get(entry.email) ?? othersByEmail.get(entry.email);
        if (holder && holder.emailId !== user.emailId) {
          skip(`its new e-mail ${entry.email} is another user's (email_id ${holder.emailId}): ${user.email} is kept as it is`);
          continue;
        }
      }
      const cards = planCards(user.emailId, user.cards, entry);
      const { join, leave } = membership(user.emailId, person.id);
      const change: UserChange = { action: 'update', emailId: user.emailId, email: entry.email, fields, join, leave, tally: {}, locksOut: false };
      if (Object.keys(fields).length > 0 || cards !== undefined) change.tally.updated = 1;
      if (cards !== undefined) change.cards = cards;
      if (person.disabled !== user.suspended) {
        change.suspended = person.disabled;
        change.tally[person.disabled ? 'suspended' : 'reactivated'] = 1;
        change.locksOut = person.disabled;
      }
      if (join.length + leave.length > 0) change.tally.memberships = join.length + leave.length;
      if (Object.keys(change.tally).length > 0) users.push(change);
      continue;
    }
    const other = othersByEmail.get(entry.email);
    if (other && !other.removed && other.source === 'scim') {
      skip(`${entry.email} is managed by the identity provider (SCIM): a user is never taken from one source by another`);
      continue;
    }
    if (byEmail) {
      skip(`${entry.email} is the e-mail of another LDAP entry's user (email_id ${byEmail.emailId})`);
      continue;
    }
    if (other && !other.removed) {
      // A local user: claimed, their fields now LDAP's (rank, tag, policies, local groups stay).
      const fields = changedFields(other, entry);
      delete fields.email; // the same address, maybe in another case
      const cards = planCards(other.emailId, other.cards, entry);
      const { join, leave } = membership(other.emailId, person.id);
      const change: UserChange = { action: 'claim', emailId: other.emailId, email: other.email, fields, join, leave, tally: { claimed: 1 }, locksOut: false };
      if (cards !== undefined) change.cards = cards;
      if (person.disabled !== other.suspended) {
        change.suspended = person.disabled;
        change.tally[person.disabled ? 'suspended' : 'reactivated'] = 1;
        change.locksOut = person.disabled;
      }
      if (join.length + leave.length > 0) change.tally.memberships = join.length + leave.length;
      users.push(change);
      continue;
    }
    // A new user (a removed record of that e-mail is brought back: UserStore.ensure).
    const cards = planCards(-++newUsers, [], entry);
    const { join } = membership(null, person.id);
    const change: UserChange = {
      action: 'create',
      emailId: null,
      email: entry.email,
      fields: { email: entry.email, firstName: entry.firstName, lastName: entry.lastName, username: entry.username, externalId: entry.id, sourceDn: entry.dn },
      join,
      leave: [],
      tally: { created: 1 },
      locksOut: false,
    };
    if (person.disabled) change.suspended = true;
    if (cards !== undefined && cards.length > 0) change.cards = cards;
    if (join.length > 0) change.tally.memberships = join.length;
    users.push(change);
  }

  // --- Users whose entry is gone: suspended (and out of LDAP's groups), or removed.
  for (const user of held.ldapUsers) {
    if (seen.has(user.emailId)) continue;
    const change: UserChange = {
      action: 'gone',
      emailId: user.emailId,
      email: user.email,
      fields: {},
      join: [],
      leave: [],
      tally: {},
      locksOut: !user.suspended,
    };
    if (options.onMissing === 'remove') {
      change.remove = true;
      change.tally.removed = 1;
    } else {
      if (!user.suspended) {
        change.suspended = true;
        change.tally.suspended = 1;
      }
      change.leave = membership(user.emailId, null).leave;
      if (change.leave.length > 0) change.tally.memberships = change.leave.length;
    }
    if (Object.keys(change.tally).length > 0) users.push(change);
  }
  for (const change of users) addTally(counts, change.tally);

  // --- Members of LDAP's live groups that no entry governs (a user of another source put there): taken out.
  const governed = new Set<number>(held.ldapUsers.map((u) => u.emailId));
  for (const change of users) if (change.emailId !== null) governed.add(change.emailId);
  const strays: Array<{ groupId: number; emailId: number }> = [];
  for (const groupId of groupPlan.groupIds.values()) {
    for (const member of groupPlan.membersOf.get(groupId) ?? []) if (!governed.has(member)) strays.push({ groupId, emailId: member });
  }
  counts.memberships += strays.length;

  return {
    users,
    groups: groupPlan.changes,
    groupIds: groupPlan.groupIds,
    gone: groupPlan.gone,
    strays,
    skips,
    cardNotes,
    counts,
    ldapActive: held.ldapUsers.filter((u) => !u.suspended).length,
  };
}
