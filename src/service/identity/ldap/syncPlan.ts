import type { IdentitySource, SyncCounts } from '../../../api/identity.js';
import { normalizeDn, type LdapPerson, type LdapSnapshot } from './ldapEntries.js';
import { isOperatorRank } from '../ownership.js';
import { CardPlanner, type CardMapping, type CardNote, type HeldCard, type NewCard } from './syncCardPlan.js';
import { desiredMemberships, indexBy, planGroups, type GoneGroup, type GroupChange, type HeldGroup } from './syncGroupPlan.js';

/**
 * What one LDAP sync would change (docs/identity-sources.md, "What a sync does"): the users and user groups LDAP
 * owns, and the local or SCIM users an entry's e-mail names, compared with what a read of LDAP found. Pure: no IO.
 * Only what differs becomes an operation, so a sync where nothing changed plans nothing and writes nothing.
 */

/** A user as the service holds them. */
export interface HeldUser {
  emailId: number;
  email: string;
  firstName: string;
  lastName: string;
  username: string;
  /** ADMIN and SUPER are operators: never claimed, their e-mail never changed by a source (D1). */
  rank: 'REGULAR' | 'ADMIN' | 'SUPER';
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
  /** The names of the user groups no LDAP entry owns (local or SCIM): a door's access.groups matches by name. */
  otherGroupNames: readonly string[];
}

export interface PlanOptions {
  onMissing: 'suspend' | 'remove';
  cards: CardMapping | null;
}

/** The columns of a user a sync writes (a create: all of them; otherwise only those that changed). */
export interface UserFields {
  email?: string;
  firstName?: string;
  lastName?: string;
  username?: string;
  externalId?: string;
  sourceDn?: string;
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
  /**
   * A create on the record of this LDAP user, removed first: the entry of their e-mail is another person's (another
   * DN, another id). The record comes back as UserStore.ensure brings a removed one back, with nothing of theirs.
   */
  replaces?: number;
  /** The new cards and PINs LDAP gives, when they change: they replace the user's cards of `cardLabels` only. */
  cards?: NewCard[];
  /** The labels of the cards LDAP gives (LDAP, the PIN label when PINs are mapped): the others are the service's. */
  cardLabels?: string[];
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
  /** New or renamed LDAP groups named as a local or SCIM user group: its members get that group's doors (logged). */
  nameClashes: Array<{ name: string; dn: string }>;
  counts: SyncCounts;
  /** The users LDAP owns that are active (not suspended) before the sync: the guard's whole. */
  ldapActive: number;
  /** The user groups LDAP owns that are live (not gone) before the sync: the guard's whole for groups. */
  ldapGroups: number;
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

  // --- Cards and PINs, when mapped (syncCardPlan.ts).
  const cardPlanner = new CardPlanner(options.cards, held.cardHolders, cardNotes);
  const cardLabels = cardPlanner.labels;
  const planCards = cardPlanner.plan.bind(cardPlanner);

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

  const isOperator = (u: HeldUser) => isOperatorRank(u.rank);

  for (const person of snapshot.people) {
    const byId = ldapById.get(person.id);
    if (byId) seen.add(byId.emailId);
    const skip = (reason: string) => {
      skips.push({ dn: person.dn, email: person.email, reason });
      counts.skipped++;
    };
    // An entry skipped still locks its user out when it is disabled: a leaver's entry is often disabled and its mail
    // cleared or forwarded in one go.
    const skipEntry = (reason: string) => {
      skip(reason);
      if (byId && person.disabled && !byId.suspended) {
        users.push({
          action: 'update',
          emailId: byId.emailId,
          email: byId.email,
          fields: {},
          suspended: true,
          join: [],
          leave: [],
          tally: { suspended: 1 },
          locksOut: true,
        });
      }
    };
    if (person.email === null) {
      skipEntry('the entry has no e-mail address');
      continue;
    }
    const entry = person as LdapPerson & { email: string };
    const sharing = shared.get(entry.email);
    if (sharing !== undefined) {
      skipEntry(`${sharing.length} entries have the e-mail ${entry.email}: ${sharing.map((p) => p.dn).join('; ')}`);
      continue;
    }
    // An LDAP user of this e-mail whose id no entry has: the same entry if its DN is the user's (its id attribute
    // changed), re-keyed; another person otherwise (a new hire given a leaver's address), who gets a fresh record.
    const byEmail = ldapByEmail.get(entry.email);
    const unclaimed =
      !byId && byEmail && !seen.has(byEmail.emailId) && (byEmail.externalId === null || !entryIds.has(byEmail.externalId)) ? byEmail : undefined;
    const sameEntry = unclaimed !== undefined && unclaimed.sourceDn !== null && normalizeDn(unclaimed.sourceDn) === normalizeDn(entry.dn);
    const user = byId ?? (sameEntry ? unclaimed : undefined);
    if (user) {
      seen.add(user.emailId);
      const fields = changedFields(user, entry);
      if (fields.email !== undefined) {
        const holder = ldapByEmail.get(entry.email) ?? othersByEmail.get(entry.email);
        if (holder && holder.emailId !== user.emailId) {
          skipEntry(`its new e-mail ${entry.email} is another user's (email_id ${holder.emailId}): ${user.email} is kept as it is`);
          continue;
        }
        if (isOperator(user)) {
          // The console mails an operator's sign-in links to this address: LDAP does not move it.
          delete fields.email;
          skip(`its new e-mail ${entry.email} is not taken: ${user.email} is an operator (rank ${user.rank}); the other fields are updated`);
        }
      }
      const cards = planCards(user.emailId, user.cards, entry);
      const { join, leave } = membership(user.emailId, person.id);
      const change: UserChange = {
        action: 'update',
        emailId: user.emailId,
        email: fields.email ?? user.email,
        fields,
        join,
        leave,
        tally: {},
        locksOut: false,
      };
      if (Object.keys(fields).length > 0 || cards !== undefined) change.tally.updated = 1;
      if (cards !== undefined) {
        change.cards = cards;
        change.cardLabels = cardLabels;
      }
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
    if (byEmail && !unclaimed) {
      skip(`${entry.email} is the e-mail of another LDAP entry's user (email_id ${byEmail.emailId})`);
      continue;
    }
    if (other && !other.removed && isOperator(other)) {
      skip(`${entry.email} is an operator's (rank ${other.rank}): an operator is never taken over by a source`);
      continue;
    }
    if (other && !other.removed && other.suspended) {
      skip(`${entry.email} is suspended at the service: a source does not take over (nor lift) a suspension an operator made`);
      continue;
    }
    if (other && !other.removed) {
      // A local user: claimed, their fields now LDAP's (rank, tag, policies, local groups stay).
      const fields = changedFields(other, entry);
      delete fields.email; // the same address, maybe in another case
      const cards = planCards(other.emailId, other.cards, entry);
      const { join, leave } = membership(other.emailId, person.id);
      const change: UserChange = { action: 'claim', emailId: other.emailId, email: other.email, fields, join, leave, tally: { claimed: 1 }, locksOut: false };
      if (cards !== undefined) {
        change.cards = cards;
        change.cardLabels = cardLabels;
      }
      if (person.disabled) {
        change.suspended = true;
        change.tally.suspended = 1;
        change.locksOut = true;
      }
      if (join.length + leave.length > 0) change.tally.memberships = join.length + leave.length;
      users.push(change);
      continue;
    }
    // A new user (a removed record of that e-mail is brought back: UserStore.ensure). With `unclaimed`, that record
    // is another person's, removed first: nothing of theirs (cards, groups, policies, rank) goes to the new one.
    if (unclaimed) seen.add(unclaimed.emailId);
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
    if (cards !== undefined && cards.length > 0) {
      change.cards = cards;
      change.cardLabels = cardLabels;
    }
    if (join.length > 0) change.tally.memberships = join.length;
    if (unclaimed) {
      change.replaces = unclaimed.emailId;
      change.tally.removed = 1;
      // Their removal is a lock-out when they are active (the guard counts it), as a gone user's is.
      change.locksOut = !unclaimed.suspended;
      const left = heldGroups.get(unclaimed.emailId)?.size ?? 0;
      if (left > 0) change.tally.memberships = (change.tally.memberships ?? 0) + left;
    }
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

  // A door's access.groups names a group: an LDAP group of a local group's name gives its members that group's doors.
  const otherNames = new Set(held.otherGroupNames);
  const groupDns = new Map(snapshot.groups.map((g) => [g.id, g.dn]));
  const nameClashes = groupPlan.changes.flatMap((g) =>
    g.fields.name !== undefined && otherNames.has(g.fields.name) ? [{ name: g.fields.name, dn: groupDns.get(g.key) ?? g.key }] : [],
  );

  return {
    users,
    groups: groupPlan.changes,
    groupIds: groupPlan.groupIds,
    gone: groupPlan.gone,
    strays,
    skips,
    cardNotes,
    nameClashes,
    counts,
    ldapActive: held.ldapUsers.filter((u) => !u.suspended).length,
    ldapGroups: held.groups.filter((g) => !g.gone).length,
  };
}
