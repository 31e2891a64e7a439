import { normalizeDn, type LdapGroup, type LdapSnapshot } from './ldapEntries.js';

/**
 * The groups' part of an LDAP sync's plan (syncPlan.ts): which user groups LDAP owns are made, renamed, moved, back
 * or gone, and which groups each entry should be in. Pure: no IO.
 */

/** A user group LDAP owns, with its members (email_ids). */
export interface HeldGroup {
  groupId: number;
  name: string;
  externalId: string | null;
  sourceDn: string | null;
  /** Gone from LDAP at an earlier sync (source_gone_at set): emptied and kept. */
  gone: boolean;
  members: number[];
}

/** A group entry made a user group, or its user group changed (renamed, moved, back after being gone). */
export interface GroupChange {
  /** The group entry's id: its user group's external_id. */
  key: string;
  /** null: a new user group. */
  groupId: number | null;
  fields: { name?: string; externalId?: string; sourceDn?: string };
  /** It had gone from LDAP and is back. */
  back: boolean;
}

/** A user group LDAP owns whose entry is gone: emptied, marked gone, kept. */
export interface GoneGroup {
  groupId: number;
  name: string;
  /** Not marked gone yet. */
  mark: boolean;
  /** The members it loses. */
  members: number[];
}

/** The first item of each key (null: none). */
export function indexBy<T, K>(items: readonly T[], key: (item: T) => K | null): Map<K, T> {
  const map = new Map<K, T>();
  for (const item of items) {
    const k = key(item);
    if (k !== null && !map.has(k)) map.set(k, item);
  }
  return map;
}

/** Each entry's groups (by key): the groups' member lists, or the entries' memberOf; only groups read are known. */
export function desiredMemberships(snapshot: LdapSnapshot): Map<string, Set<string>> {
  const wanted = new Map<string, Set<string>>();
  const add = (personId: string, key: string) => {
    const keys = wanted.get(personId) ?? new Set<string>();
    keys.add(key);
    wanted.set(personId, keys);
  };
  if (snapshot.membership === 'member') {
    const personByDn = indexBy(snapshot.people, (p) => normalizeDn(p.dn));
    for (const group of snapshot.groups) {
      for (const dn of group.members) {
        const person = personByDn.get(normalizeDn(dn));
        if (person) add(person.id, group.id);
      }
    }
  } else {
    const groupByDn = indexBy(snapshot.groups, (g) => normalizeDn(g.dn));
    for (const person of snapshot.people) {
      for (const dn of person.memberOf) {
        const group = groupByDn.get(normalizeDn(dn));
        if (group) add(person.id, group.id);
      }
    }
  }
  return wanted;
}

/** The groups: made, renamed, moved, back, or gone; and each live one's group_id and members. */
export function planGroups(
  held: readonly HeldGroup[],
  entries: readonly LdapGroup[],
): { changes: GroupChange[]; gone: GoneGroup[]; groupIds: Map<string, number>; membersOf: Map<number, number[]> } {
  const byId = indexBy(held, (g) => g.externalId);
  const byDn = indexBy(held, (g) => (g.sourceDn === null ? null : normalizeDn(g.sourceDn)));
  const entryIds = new Set(entries.map((g) => g.id));
  const matched = new Set<number>();
  const changes: GroupChange[] = [];
  const groupIds = new Map<string, number>();
  const membersOf = new Map<number, number[]>();
  for (const entry of entries) {
    let group = byId.get(entry.id);
    if (group && matched.has(group.groupId)) group = undefined;
    if (!group) {
      const candidate = byDn.get(normalizeDn(entry.dn));
      if (candidate && !matched.has(candidate.groupId) && (candidate.externalId === null || !entryIds.has(candidate.externalId))) group = candidate;
    }
    if (!group) {
      changes.push({ key: entry.id, groupId: null, fields: { name: entry.name, externalId: entry.id, sourceDn: entry.dn }, back: false });
      continue;
    }
    matched.add(group.groupId);
    groupIds.set(entry.id, group.groupId);
    membersOf.set(group.groupId, group.members);
    const fields: GroupChange['fields'] = {};
    if (group.name !== entry.name) fields.name = entry.name;
    if (group.externalId !== entry.id) fields.externalId = entry.id;
    if (group.sourceDn !== entry.dn) fields.sourceDn = entry.dn;
    if (Object.keys(fields).length > 0 || group.gone) changes.push({ key: entry.id, groupId: group.groupId, fields, back: group.gone });
  }
  const gone: GoneGroup[] = [];
  for (const group of held) {
    if (matched.has(group.groupId)) continue;
    if (!group.gone || group.members.length > 0) gone.push({ groupId: group.groupId, name: group.name, mark: !group.gone, members: group.members });
  }
  return { changes, gone, groupIds, membersOf };
}
