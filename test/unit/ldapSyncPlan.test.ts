import { describe, expect, it } from 'vitest';
import type { LdapGroup, LdapPerson, LdapSnapshot } from '../../src/service/identity/ldap/ldapEntries.js';
import type { HeldGroup } from '../../src/service/identity/ldap/syncGroupPlan.js';
import type { CardMapping } from '../../src/service/identity/ldap/syncCardPlan.js';
import { judgePlan } from '../../src/service/identity/ldap/syncGuard.js';
import { planChangesNothing, planSync, zeroCounts, type HeldState, type HeldUser, type PlanOptions } from '../../src/service/identity/ldap/syncPlan.js';

// The LDAP sync's plan (docs/identity-sources.md, "What a sync does") and its guard ("The guard"), from plain
// records: what the service holds, what a read of LDAP found, and the operations that bring one to the other.

const BASE = 'ou=people,dc=example,dc=org';
const dnOf = (uid: string) => `uid=${uid},${BASE}`;
const groupDn = (cn: string) => `cn=${cn},ou=groups,dc=example,dc=org`;

function person(uid: string, over: Partial<LdapPerson> = {}): LdapPerson {
  return {
    id: `id-${uid}`,
    dn: dnOf(uid),
    email: `${uid}@example.org`,
    firstName: uid[0]!.toUpperCase() + uid.slice(1),
    lastName: 'Example',
    username: uid,
    disabled: false,
    memberOf: [],
    card: null,
    pin: null,
    ...over,
  };
}

/** The user the service holds for `p` after a sync that made them (email_id `emailId`). */
function heldFor(p: LdapPerson, emailId: number, over: Partial<HeldUser> = {}): HeldUser {
  return {
    emailId,
    email: p.email!,
    firstName: p.firstName,
    lastName: p.lastName,
    username: p.username,
    rank: 'REGULAR',
    suspended: p.disabled,
    source: 'ldap',
    removed: false,
    externalId: p.id,
    sourceDn: p.dn,
    cards: [],
    ...over,
  };
}

function local(email: string, emailId: number, over: Partial<HeldUser> = {}): HeldUser {
  return {
    emailId,
    email,
    firstName: 'Local',
    lastName: 'User',
    username: email.split('@')[0]!,
    rank: 'REGULAR',
    suspended: false,
    source: 'local',
    removed: false,
    externalId: null,
    sourceDn: null,
    cards: [],
    ...over,
  };
}

function group(cn: string, members: LdapPerson[] = []): LdapGroup {
  return { id: `gid-${cn}`, dn: groupDn(cn), name: cn, members: members.map((m) => m.dn) };
}

function heldGroup(g: LdapGroup, groupId: number, members: number[], over: Partial<HeldGroup> = {}): HeldGroup {
  return { groupId, name: g.name, externalId: g.id, sourceDn: g.dn, gone: false, members, ...over };
}

const snapshot = (people: LdapPerson[], groups: LdapGroup[] = [], membership: 'member' | 'memberOf' = 'member'): LdapSnapshot => ({
  people,
  groups,
  membership,
});
const state = (over: Partial<HeldState> = {}): HeldState => ({ ldapUsers: [], others: [], groups: [], cardHolders: new Map(), otherGroupNames: [], ...over });
const SUSPEND: PlanOptions = { onMissing: 'suspend', cards: null };
const CARDS: CardMapping = { card: true, pin: true, pinLabel: 'PIN' };

/** Ten people, held as the last sync left them (email_ids 1..10), in groups A (1..5) and B (6..10). */
function synced() {
  const people = Array.from({ length: 10 }, (_, i) => person(`p${i + 1}`));
  const a = group('A', people.slice(0, 5));
  const b = group('B', people.slice(5));
  const held = state({
    ldapUsers: people.map((p, i) => heldFor(p, i + 1)),
    groups: [heldGroup(a, 100, [1, 2, 3, 4, 5]), heldGroup(b, 101, [6, 7, 8, 9, 10])],
  });
  return { people, a, b, held };
}

describe('the plan of a first sync', () => {
  it('makes a user of each entry with its fields, suspended when disabled, and each group with its members', () => {
    const ann = person('ann');
    const bob = person('bob', { disabled: true, firstName: 'Bob', lastName: 'Builder', username: 'bobb' });
    const plan = planSync(state(), snapshot([ann, bob], [group('Staff', [ann, bob])]), SUSPEND);
    expect(plan.users).toEqual([
      expect.objectContaining({
        action: 'create',
        emailId: null,
        email: 'ann@example.org',
        fields: { email: 'ann@example.org', firstName: 'Ann', lastName: 'Example', username: 'ann', externalId: 'id-ann', sourceDn: dnOf('ann') },
        join: ['gid-Staff'],
      }),
      expect.objectContaining({ action: 'create', email: 'bob@example.org', suspended: true, join: ['gid-Staff'] }),
    ]);
    expect(plan.users[0]!.suspended).toBeUndefined();
    expect(plan.groups).toEqual([
      { key: 'gid-Staff', groupId: null, fields: { name: 'Staff', externalId: 'gid-Staff', sourceDn: groupDn('Staff') }, back: false },
    ]);
    expect(plan.counts).toEqual({ ...zeroCounts(2, 1), created: 2, memberships: 2, groupsChanged: 1 });
    // New disabled entries lock no one out: the guard has nothing to count.
    expect(judgePlan(plan, 0.05).held).toBe(false);
  });

  it('reads memberOf when the directory lists membership on the user (Active Directory)', () => {
    const staff = group('Staff');
    const doors = group('Doors');
    const ann = person('ann', { memberOf: [groupDn('Staff'), 'CN=Doors, OU=Groups, DC=Example, DC=Org', 'cn=Elsewhere,ou=other,dc=example,dc=org'] });
    const plan = planSync(state(), snapshot([ann], [staff, doors], 'memberOf'), SUSPEND);
    // The DN's case and spaces do not matter; a group outside groups.baseDn (not read) is not synced.
    expect(plan.users[0]!.join).toEqual(['gid-Staff', 'gid-Doors']);
  });

  it("matches a group's member DNs case-blind and without the spaces after commas", () => {
    const ann = person('ann');
    const g: LdapGroup = {
      id: 'g1',
      dn: groupDn('G'),
      name: 'G',
      members: ['UID=ann, OU=People, DC=example, DC=org', 'uid=nobody,ou=people,dc=example,dc=org'],
    };
    expect(planSync(state(), snapshot([ann], [g]), SUSPEND).users[0]!.join).toEqual(['g1']);
  });
});

describe('a sync where nothing changed', () => {
  it('plans nothing: no user, group or membership operation, counts all 0 but the entries', () => {
    const { people, a, b, held } = synced();
    const plan = planSync(held, snapshot(people, [a, b]), SUSPEND);
    expect(planChangesNothing(plan)).toBe(true);
    expect(plan.counts).toEqual(zeroCounts(10, 2));
    expect(plan.ldapActive).toBe(10);
  });

  it('takes an e-mail held in another case as the same', () => {
    const ann = person('ann');
    const plan = planSync(state({ ldapUsers: [heldFor(ann, 1, { email: 'Ann@Example.org' })] }), snapshot([ann]), SUSPEND);
    expect(planChangesNothing(plan)).toBe(true);
  });
});

describe('changes in LDAP', () => {
  it('a name changed: that field only, counted updated', () => {
    const { people, a, b, held } = synced();
    people[2] = { ...people[2]!, lastName: 'Married' };
    const plan = planSync(held, snapshot(people, [a, b]), SUSPEND);
    expect(plan.users).toEqual([expect.objectContaining({ action: 'update', emailId: 3, fields: { lastName: 'Married' }, join: [], leave: [] })]);
    expect(plan.counts).toEqual({ ...zeroCounts(10, 2), updated: 1 });
  });

  it('a rename or move keeps the user (matched by id): the DN, username and e-mail follow', () => {
    const { people, a, b, held } = synced();
    people[0] = { ...people[0]!, dn: 'uid=p1-new,ou=moved,dc=example,dc=org', username: 'p1-new', email: 'p1.new@example.org' };
    a.members[0] = people[0].dn;
    const plan = planSync(held, snapshot(people, [a, b]), SUSPEND);
    expect(plan.users).toEqual([
      expect.objectContaining({
        action: 'update',
        emailId: 1,
        email: 'p1.new@example.org',
        fields: { email: 'p1.new@example.org', username: 'p1-new', sourceDn: 'uid=p1-new,ou=moved,dc=example,dc=org' },
        join: [],
        leave: [],
      }),
    ]);
  });

  it('a new e-mail that another user has: skipped and named, the user kept as they are (not gone)', () => {
    const { people, a, b, held } = synced();
    people[0] = { ...people[0]!, email: 'p2@example.org' };
    people[1] = { ...people[1]!, email: 'p2-new@example.org' };
    const plan = planSync(held, snapshot(people, [a, b]), SUSPEND);
    // p2 takes a new address; p1 cannot take p2's old one in the same sync (the next sync gives it).
    expect(plan.users).toEqual([expect.objectContaining({ emailId: 2, fields: { email: 'p2-new@example.org' } })]);
    expect(plan.skips).toEqual([{ dn: dnOf('p1'), email: 'p2@example.org', reason: expect.stringContaining("another user's (email_id 2)") }]);
    expect(plan.counts.skipped).toBe(1);
    expect(plan.counts.suspended).toBe(0);
  });

  it('disabled: suspended; enabled again: active again', () => {
    const { people, a, b, held } = synced();
    people[3] = { ...people[3]!, disabled: true };
    held.ldapUsers[4]!.suspended = true;
    const plan = planSync(held, snapshot(people, [a, b]), SUSPEND);
    expect(plan.users).toEqual([
      expect.objectContaining({ emailId: 4, suspended: true, fields: {}, locksOut: true }),
      expect.objectContaining({ emailId: 5, suspended: false, fields: {}, locksOut: false }),
    ]);
    expect(plan.counts).toMatchObject({ suspended: 1, reactivated: 1, updated: 0 });
  });

  it('a group move: out of the old group, into the new one', () => {
    const { people, a, b, held } = synced();
    a.members.splice(1, 1);
    b.members.push(people[1]!.dn);
    const plan = planSync(held, snapshot(people, [a, b]), SUSPEND);
    expect(plan.users).toEqual([expect.objectContaining({ emailId: 2, join: ['gid-B'], leave: [100], fields: {} })]);
    expect(plan.counts).toEqual({ ...zeroCounts(10, 2), memberships: 2 });
  });

  it('an entry gone: suspended and out of LDAP groups (onMissing: suspend)', () => {
    const { people, a, b, held } = synced();
    const gone = people.splice(6, 1)[0]!;
    b.members = b.members.filter((m) => m !== gone.dn);
    const plan = planSync(held, snapshot(people, [a, b]), SUSPEND);
    expect(plan.users).toEqual([expect.objectContaining({ action: 'gone', emailId: 7, suspended: true, leave: [101], locksOut: true })]);
    expect(plan.counts).toEqual({ ...zeroCounts(9, 2), suspended: 1, memberships: 1 });
  });

  it('an entry gone whose user is suspended already: nothing to do, and nothing for the guard', () => {
    const { people, a, b, held } = synced();
    held.ldapUsers[6]!.suspended = true;
    held.groups[1]!.members = [6, 8, 9, 10];
    people.splice(6, 1);
    b.members.splice(1, 1);
    const plan = planSync(held, snapshot(people, [a, b]), SUSPEND);
    expect(planChangesNothing(plan)).toBe(true);
    expect(plan.ldapActive).toBe(9);
  });

  it('an entry gone with onMissing remove: removed (as DELETE /user does)', () => {
    const { people, a, b, held } = synced();
    people.splice(6, 1);
    const plan = planSync(held, snapshot(people, [a, b]), { onMissing: 'remove', cards: null });
    expect(plan.users).toEqual([expect.objectContaining({ action: 'gone', emailId: 7, remove: true, locksOut: true, leave: [] })]);
    expect(plan.users[0]!.suspended).toBeUndefined();
    expect(plan.counts).toMatchObject({ removed: 1, suspended: 0 });
  });

  it('an entry back after being gone: active again', () => {
    const { people, a, b, held } = synced();
    held.ldapUsers[6]!.suspended = true;
    expect(planSync(held, snapshot(people, [a, b]), SUSPEND).users).toEqual([expect.objectContaining({ emailId: 7, suspended: false })]);
  });

  it("an entry whose id attribute changed keeps its user by e-mail (re-keyed), unless another entry has the user's id", () => {
    const { people, a, b, held } = synced();
    people[0] = { ...people[0]!, id: 'new-id' };
    const plan = planSync(held, snapshot(people, [a, b]), SUSPEND);
    expect(plan.users).toEqual([expect.objectContaining({ action: 'update', emailId: 1, fields: { externalId: 'new-id' } })]);
  });
});

describe('entries skipped', () => {
  it('an entry with no e-mail: skipped and named; a user it stands for is kept as they are', () => {
    const { people, a, b, held } = synced();
    people[0] = { ...people[0]!, email: null, lastName: 'Changed' };
    const plan = planSync(held, snapshot([...people, person('new', { email: null })], [a, b]), SUSPEND);
    expect(plan.skips.map((s) => [s.dn, s.reason])).toEqual([
      [dnOf('p1'), 'the entry has no e-mail address'],
      [dnOf('new'), 'the entry has no e-mail address'],
    ]);
    expect(plan.users).toEqual([]);
    expect(plan.counts.skipped).toBe(2);
  });

  it('two entries with the same e-mail: both skipped, each naming the other', () => {
    const x = person('x', { email: 'same@example.org' });
    const y = person('y', { email: 'same@example.org' });
    const plan = planSync(state(), snapshot([x, y, person('z')]), SUSPEND);
    expect(plan.users.map((u) => u.email)).toEqual(['z@example.org']);
    expect(plan.skips).toHaveLength(2);
    for (const s of plan.skips) expect(s.reason).toBe(`2 entries have the e-mail same@example.org: ${dnOf('x')}; ${dnOf('y')}`);
  });

  it('an e-mail owned by SCIM: a conflict, the user left as they are', () => {
    const plan = planSync(state({ others: [local('ann@example.org', 5, { source: 'scim' })] }), snapshot([person('ann')]), SUSPEND);
    expect(plan.users).toEqual([]);
    expect(plan.skips).toEqual([
      {
        dn: dnOf('ann'),
        email: 'ann@example.org',
        reason: 'ann@example.org is managed by the identity provider (SCIM): a user is never taken from one source by another',
      },
    ]);
  });
});

describe('claims', () => {
  it("a local user with an entry's e-mail is claimed: their fields and state become LDAP's", () => {
    const ann = person('ann', { disabled: true });
    const plan = planSync(state({ others: [local('Ann@Example.org', 9)] }), snapshot([ann], [group('G', [ann])]), SUSPEND);
    expect(plan.users).toEqual([
      expect.objectContaining({
        action: 'claim',
        emailId: 9,
        fields: { firstName: 'Ann', lastName: 'Example', username: 'ann', externalId: 'id-ann', sourceDn: dnOf('ann') },
        suspended: true,
        join: ['gid-G'],
        locksOut: true,
      }),
    ]);
    expect(plan.counts).toMatchObject({ claimed: 1, suspended: 1, created: 0, memberships: 1 });
  });

  it("a removed user's e-mail: a create (UserStore.ensure brings the record back)", () => {
    const plan = planSync(state({ others: [local('ann@example.org', 9, { removed: true, source: 'scim' })] }), snapshot([person('ann')]), SUSPEND);
    expect(plan.users).toEqual([expect.objectContaining({ action: 'create', emailId: null })]);
  });
});

describe('groups', () => {
  it('renamed or moved: updated (matched by id); gone: emptied and marked, kept; back: unmarked', () => {
    const { people, a, held } = synced();
    const renamed = { ...a, name: 'A2', dn: groupDn('A2') };
    const c = group('C');
    held.groups.push(heldGroup(c, 102, [], { gone: true }));
    const plan = planSync(held, snapshot(people, [renamed, c]), SUSPEND);
    expect(plan.groups).toEqual([
      { key: 'gid-A', groupId: 100, fields: { name: 'A2', sourceDn: groupDn('A2') }, back: false },
      { key: 'gid-C', groupId: 102, fields: {}, back: true },
    ]);
    expect(plan.gone).toEqual([{ groupId: 101, name: 'B', mark: true, members: [6, 7, 8, 9, 10] }]);
    // B's members lose it with the group (counted there), not each on their own.
    expect(plan.users).toEqual([]);
    expect(plan.counts).toEqual({ ...zeroCounts(10, 2), groupsChanged: 3, memberships: 5 });
  });

  it('a group gone at an earlier sync and empty: nothing', () => {
    const { people, a, b, held } = synced();
    held.groups[1] = { ...held.groups[1]!, gone: true, members: [] };
    b.members = [];
    expect(planChangesNothing(planSync(held, snapshot(people, [a]), SUSPEND))).toBe(true);
  });

  it('a group whose id changed is found by its DN', () => {
    const { people, a, b, held } = synced();
    const plan = planSync(held, snapshot(people, [{ ...a, id: 'other' }, b]), SUSPEND);
    expect(plan.groups).toEqual([{ key: 'other', groupId: 100, fields: { externalId: 'other' }, back: false }]);
    expect(plan.users).toEqual([]);
  });

  it('a member LDAP does not own (a local user put in an LDAP group) is taken out', () => {
    const { people, a, b, held } = synced();
    held.groups[0]!.members.push(50);
    const plan = planSync(held, snapshot(people, [a, b]), SUSPEND);
    expect(plan.strays).toEqual([{ groupId: 100, emailId: 50 }]);
    expect(plan.counts.memberships).toBe(1);
  });
});

describe('cards and PINs mapped from LDAP', () => {
  const options: PlanOptions = { onMissing: 'suspend', cards: CARDS };

  it('given to a new user with the labels LDAP and PIN; not at all without a mapping', () => {
    const ann = person('ann', { card: '123456', pin: '4321' });
    expect(planSync(state(), snapshot([ann]), options).users[0]!.cards).toEqual([
      { number: '123456', label: 'LDAP' },
      { number: '4321', label: 'PIN' },
    ]);
    expect(planSync(state(), snapshot([ann]), SUSPEND).users[0]!.cards).toBeUndefined();
  });

  it('the same cards: nothing; a new number: the list replaced; the attribute emptied: the card taken away', () => {
    const ann = person('ann', { card: '123456' });
    const cards = [{ number: '123456', label: 'LDAP', validFrom: null, validUntil: null }];
    expect(planChangesNothing(planSync(state({ ldapUsers: [heldFor(ann, 1, { cards })] }), snapshot([ann]), options))).toBe(true);
    const changed = planSync(state({ ldapUsers: [heldFor(ann, 1, { cards })] }), snapshot([{ ...ann, card: '999' }]), options);
    expect(changed.users).toEqual([expect.objectContaining({ emailId: 1, cards: [{ number: '999', label: 'LDAP' }], fields: {} })]);
    expect(changed.counts.updated).toBe(1);
    const emptied = planSync(state({ ldapUsers: [heldFor(ann, 1, { cards })] }), snapshot([{ ...ann, card: null }]), options);
    expect(emptied.users).toEqual([expect.objectContaining({ emailId: 1, cards: [] })]);
  });

  it('a number another active user holds is not given (the last 4 digits noted); one the user holds already stays', () => {
    const ann = person('ann', { card: '11112222' });
    const bob = person('bob', { card: '33334444' });
    const held = state({
      ldapUsers: [heldFor(bob, 2, { cards: [{ number: '33334444', label: 'LDAP', validFrom: null, validUntil: null }] })],
      cardHolders: new Map([
        ['11112222', [7]],
        ['33334444', [2, 7]],
      ]),
    });
    const plan = planSync(held, snapshot([ann, bob]), options);
    expect(plan.users).toEqual([expect.objectContaining({ action: 'create', email: 'ann@example.org' })]);
    expect(plan.users[0]!.cards).toBeUndefined();
    expect(plan.cardNotes).toEqual([{ email: 'ann@example.org', last4: '2222', reason: 'its card is held by another user' }]);
  });

  it('two new entries with one number: the first gets it', () => {
    const plan = planSync(state(), snapshot([person('ann', { card: '5555' }), person('bob', { card: '5555' })]), options);
    expect(plan.users.map((u) => u.cards)).toEqual([[{ number: '5555', label: 'LDAP' }], undefined]);
    expect(plan.cardNotes).toEqual([{ email: 'bob@example.org', last4: '5555', reason: 'its card is held by another user' }]);
  });

  it('a value that is not 1 to 40 digits is not given, and not repeated in the note', () => {
    const plan = planSync(state(), snapshot([person('ann', { card: 'AB-12' })]), options);
    expect(plan.users[0]!.cards).toBeUndefined();
    expect(plan.cardNotes).toEqual([{ email: 'ann@example.org', last4: '', reason: 'its card is not 1 to 40 digits' }]);
  });
});

describe('the guard', () => {
  /** 100 active LDAP users, of whom `gone` have left LDAP. */
  function leaving(gone: number, onMissing: 'suspend' | 'remove' = 'suspend') {
    const people = Array.from({ length: 100 }, (_, i) => person(`u${i}`));
    const held = state({ ldapUsers: people.map((p, i) => heldFor(p, i + 1)) });
    return planSync(held, snapshot(people.slice(gone)), { onMissing, cards: null });
  }

  it('lets through up to maxSuspendShare of the active LDAP users', () => {
    expect(judgePlan(leaving(5), 0.05)).toMatchObject({ held: false, wouldSuspend: 5, of: 100, allowed: 5, reason: null });
  });

  it('holds a sync over it: the count, the whole, the share, what to check and the number to confirm', () => {
    const verdict = judgePlan(leaving(6), 0.05);
    expect(verdict).toMatchObject({ held: true, wouldSuspend: 6, of: 100, allowed: 5 });
    expect(verdict.reason).toBe(
      'would suspend 6 of 100 users from LDAP (over maxSuspendShare 5 %): check users.baseDn and users.filter, then apply with confirm_suspensions=6',
    );
    expect(verdict.sample).toEqual(['u0@example.org', 'u1@example.org', 'u2@example.org', 'u3@example.org', 'u4@example.org', 'u5@example.org']);
  });

  it('a filter that matches nothing: held, naming the first 10', () => {
    const verdict = judgePlan(leaving(100, 'remove'), 0.05);
    expect(verdict.reason).toMatch(/^would suspend or remove 100 of 100 users/);
    expect(verdict.sample).toHaveLength(10);
  });

  it('applies with a confirmation of at least the number; held again with fewer', () => {
    expect(judgePlan(leaving(30), 0.05, 30).held).toBe(false);
    expect(judgePlan(leaving(30), 0.05, 31).held).toBe(false);
    const again = judgePlan(leaving(30), 0.05, 29);
    expect(again.held).toBe(true);
    expect(again.reason).toContain('(confirm_suspensions=29 is fewer)');
  });

  it('always allows one: a leaver among a handful of users, or with maxSuspendShare 0', () => {
    expect(judgePlan(leaving(1), 0).held).toBe(false);
    expect(judgePlan(leaving(2), 0).held).toBe(true);
    const few = Array.from({ length: 4 }, (_, i) => person(`f${i}`));
    const plan = planSync(state({ ldapUsers: few.map((p, i) => heldFor(p, i + 1)) }), snapshot(few.slice(1)), SUSPEND);
    expect(judgePlan(plan, 0.05)).toMatchObject({ held: false, allowed: 1, wouldSuspend: 1, of: 4 });
  });

  it('counts disabled entries and claimed users it would suspend, not users suspended already', () => {
    const people = Array.from({ length: 20 }, (_, i) => person(`d${i}`));
    const held = state({
      ldapUsers: people.map((p, i) => heldFor(p, i + 1, { suspended: i < 10 })),
      others: [local('c@example.org', 99)],
    });
    const next = people.map((p) => ({ ...p, disabled: true }));
    const plan = planSync(held, snapshot([...next, person('c', { disabled: true })]), SUSPEND);
    // 10 active LDAP users disabled, and the claimed local user: 11 of 10 active.
    expect(judgePlan(plan, 0.5)).toMatchObject({ wouldSuspend: 11, of: 10, held: true });
  });
});

describe('operators and suspensions made at the service (D1)', () => {
  it('an ADMIN or SUPER local user is not claimed: skipped, named', () => {
    for (const rank of ['ADMIN', 'SUPER'] as const) {
      const plan = planSync(state({ others: [local('ann@example.org', 9, { rank })] }), snapshot([person('ann')]), SUSPEND);
      expect(plan.users).toEqual([]);
      expect(plan.skips.map((s) => s.reason)).toEqual([`ann@example.org is an operator's (rank ${rank}): an operator is never taken over by a source`]);
      expect(plan.counts.skipped).toBe(1);
    }
  });

  it('a local user suspended at the service is not claimed (nor reactivated): skipped, named', () => {
    const plan = planSync(state({ others: [local('bob@example.org', 3, { suspended: true })] }), snapshot([person('bob')]), SUSPEND);
    expect(plan.users).toEqual([]);
    expect(plan.skips.map((s) => s.reason)).toEqual([
      'bob@example.org is suspended at the service: a source does not take over (nor lift) a suspension an operator made',
    ]);
  });

  it('an LDAP user promoted to ADMIN: a new e-mail is not taken, every other field is, and the skip said', () => {
    const ann = person('ann');
    const plan = planSync(
      state({ ldapUsers: [heldFor(ann, 1, { rank: 'ADMIN' })] }),
      snapshot([{ ...ann, email: 'ann.new@example.org', lastName: 'New' }]),
      SUSPEND,
    );
    expect(plan.users).toEqual([expect.objectContaining({ action: 'update', emailId: 1, email: 'ann@example.org', fields: { lastName: 'New' } })]);
    expect(plan.skips.map((s) => s.reason)).toEqual([
      'its new e-mail ann.new@example.org is not taken: ann@example.org is an operator (rank ADMIN); the other fields are updated',
    ]);
  });
});

describe('a disabled entry that is otherwise skipped still locks its user out', () => {
  it.each([
    ['its e-mail cleared', { email: null }],
    ["its mail forwarded to another user's address", { email: 'boss@example.org' }],
  ])('%s', (_what, over: Partial<LdapPerson>) => {
    const { people, a, b, held } = synced();
    held.others = [local('boss@example.org', 50)];
    people[0] = { ...people[0]!, disabled: true, ...over };
    const plan = planSync(held, snapshot(people, [a, b]), SUSPEND);
    expect(plan.users).toEqual([expect.objectContaining({ action: 'update', emailId: 1, fields: {}, suspended: true, locksOut: true })]);
    expect(plan.counts).toMatchObject({ suspended: 1, skipped: 1 });
    expect(judgePlan(plan, 0).wouldSuspend).toBe(1);
  });

  it('two leavers given one shared address: both suspended, both skipped', () => {
    const { people, a, b, held } = synced();
    for (const i of [0, 1]) people[i] = { ...people[i]!, disabled: true, email: 'former@example.org' };
    const plan = planSync(held, snapshot(people, [a, b]), SUSPEND);
    expect(plan.users.map((u) => [u.emailId, u.suspended])).toEqual([
      [1, true],
      [2, true],
    ]);
    expect(plan.counts).toMatchObject({ suspended: 2, skipped: 2 });
    expect(judgePlan(plan, 0.05)).toMatchObject({ wouldSuspend: 2, held: true });
  });

  it('a skipped entry already suspended, or enabled: nothing', () => {
    const { people, a, b, held } = synced();
    held.ldapUsers[0] = { ...held.ldapUsers[0]!, suspended: true };
    people[0] = { ...people[0]!, disabled: true, email: null };
    people[1] = { ...people[1]!, email: null };
    expect(planSync(held, snapshot(people, [a, b]), SUSPEND).users).toEqual([]);
  });
});

describe("an LDAP user's address on another entry", () => {
  const leaver = person('jsmith');
  const hire = person('jsmith2', { id: 'id-new-hire', email: 'jsmith@example.org', firstName: 'Jane' });

  it("another DN: another person; the leaver's record removed and made the new hire's (a create on it)", () => {
    const held = state({ ldapUsers: [heldFor(leaver, 7, { suspended: true })], groups: [heldGroup(group('A'), 100, [7])] });
    const plan = planSync(held, snapshot([hire], [group('A')]), SUSPEND);
    expect(plan.users).toEqual([
      expect.objectContaining({
        action: 'create',
        emailId: null,
        replaces: 7,
        email: 'jsmith@example.org',
        fields: expect.objectContaining({ firstName: 'Jane', externalId: 'id-new-hire', sourceDn: dnOf('jsmith2') }),
        locksOut: false,
      }),
    ]);
    expect(plan.users[0]!.suspended).toBeUndefined();
    expect(plan.counts).toMatchObject({ created: 1, removed: 1, suspended: 0, memberships: 1 });
    // Suspended already: not a lock-out; active: one, as a gone user's removal is.
    expect(judgePlan(plan, 0).wouldSuspend).toBe(0);
    const active = planSync(state({ ldapUsers: [heldFor(leaver, 7), heldFor(person('x'), 8)] }), snapshot([hire, person('x')]), SUSPEND);
    expect(active.users).toEqual([expect.objectContaining({ action: 'create', replaces: 7, locksOut: true })]);
    expect(judgePlan(active, 0).wouldSuspend).toBe(1);
  });

  it('the same DN (its id attribute changed): the same user, re-keyed, spelled differently or not', () => {
    const plan = planSync(state({ ldapUsers: [heldFor(leaver, 7)] }), snapshot([{ ...leaver, id: 'id-2', dn: dnOf('jsmith').toUpperCase() }]), SUSPEND);
    expect(plan.users).toEqual([
      expect.objectContaining({ action: 'update', emailId: 7, fields: { externalId: 'id-2', sourceDn: dnOf('jsmith').toUpperCase() } }),
    ]);
    expect(plan.users[0]!.replaces).toBeUndefined();
  });
});

describe('the guard counts LDAP groups emptied', () => {
  /** 100 LDAP users, of whom `gone` have left, in 9 groups, of which `groupsGone` are no longer read. */
  function emptying(gone: number, groupsGone: number) {
    const people = Array.from({ length: 100 }, (_, i) => person(`u${i}`));
    const groups = Array.from({ length: 9 }, (_, i) => group(`g${i}`, people.slice(i * 10, i * 10 + 10)));
    const held = state({
      ldapUsers: people.map((p, i) => heldFor(p, i + 1)),
      groups: groups.map((g, i) =>
        heldGroup(
          g,
          100 + i,
          Array.from({ length: 10 }, (_, j) => i * 10 + j + 1),
        ),
      ),
    });
    return planSync(held, snapshot(people.slice(gone), groups.slice(groupsGone)), SUSPEND);
  }

  it('an empty group search: held, naming users and groups, what to check and the sum to confirm', () => {
    const verdict = judgePlan(emptying(3, 9), 0.05);
    expect(verdict).toMatchObject({ held: true, wouldSuspend: 12 });
    expect(verdict.reason).toBe(
      'would suspend 3 of 100 users and empty 9 of 9 groups from LDAP (over maxSuspendShare 5 %): check users.baseDn, users.filter, groups.baseDn and groups.filter, then apply with confirm_suspensions=12',
    );
    expect(judgePlan(emptying(3, 9), 0.05, 12).held).toBe(false);
    expect(judgePlan(emptying(3, 9), 0.05, 11).held).toBe(true);
  });

  it('one group gone (at least one is always allowed): applied', () => {
    expect(judgePlan(emptying(0, 1), 0.05)).toMatchObject({ held: false, wouldSuspend: 1 });
    expect(judgePlan(emptying(0, 2), 0.05).held).toBe(true);
  });
});

describe('cards LDAP gives beside the ones the service gave', () => {
  const options: PlanOptions = { onMissing: 'suspend', cards: CARDS };
  const badge = { number: '900', label: 'Badge', validFrom: '2024-01-01', validUntil: null };

  it("compares and replaces only LDAP's labels: a service card is no change, and stays", () => {
    const ann = person('ann', { card: '123456' });
    const cards = [badge, { number: '123456', label: 'LDAP', validFrom: null, validUntil: null }];
    expect(planChangesNothing(planSync(state({ ldapUsers: [heldFor(ann, 1, { cards })] }), snapshot([ann]), options))).toBe(true);
    const changed = planSync(state({ ldapUsers: [heldFor(ann, 1, { cards })] }), snapshot([{ ...ann, card: '999' }]), options);
    expect(changed.users).toEqual([expect.objectContaining({ cards: [{ number: '999', label: 'LDAP' }], cardLabels: ['LDAP', 'PIN'] })]);
    // Only cards mapped: a PIN given at the service is the service's.
    const cardOnly = planSync(state({ ldapUsers: [heldFor(ann, 1, { cards })] }), snapshot([{ ...ann, card: '999' }]), {
      onMissing: 'suspend',
      cards: { ...CARDS, pin: false },
    });
    expect(cardOnly.users[0]!.cardLabels).toEqual(['LDAP']);
  });

  it('a number the user holds already as a service card is not listed again', () => {
    const ann = person('ann', { card: '900' });
    const plan = planSync(state({ ldapUsers: [heldFor(ann, 1, { cards: [badge] })] }), snapshot([ann]), options);
    expect(planChangesNothing(plan)).toBe(true);
    expect(plan.cardNotes).toEqual([{ email: 'ann@example.org', last4: '900', reason: 'the user holds its card already (given at the service)' }]);
  });
});

describe('a new LDAP group named as a local user group', () => {
  it("is noted (its members get that name's doors), a renamed one too", () => {
    const night = group('Night Shift');
    const plan = planSync(state({ otherGroupNames: ['Night Shift', 'Day'] }), snapshot([], [night, group('Other')]), SUSPEND);
    expect(plan.nameClashes).toEqual([{ name: 'Night Shift', dn: night.dn }]);
    const renamed = planSync(state({ otherGroupNames: ['Day'], groups: [heldGroup(night, 5, [])] }), snapshot([], [{ ...night, name: 'Day' }]), SUSPEND);
    expect(renamed.nameClashes).toEqual([{ name: 'Day', dn: night.dn }]);
  });
});
