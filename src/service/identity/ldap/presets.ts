import type { LdapDisabledRule, LdapSourceOptions } from '../../options.js';

/**
 * How a directory's entries are read (docs/identity-sources.md, "The presets"): the filters and the attribute of
 * each field, from the preset with the site's `attributes` and filters over it. Pure: ldapReader.ts asks the
 * server for mapping's attributes, ldapEntryMap.ts reads the entries through it.
 */
export interface LdapMapping {
  userFilter: string;
  groupFilter: string;
  /** Stable across renames and moves: entryUUID, objectGUID (binary: read as hex). */
  id: string;
  /** Tried in order, the first with a value wins (AD: mail, else userPrincipalName). */
  email: string[];
  firstName: string;
  lastName: string;
  username: string;
  /** null: an entry is active. */
  disabled: LdapDisabledRule | null;
  /** `member`: the group lists its users' DNs; `memberOf`: the user lists its groups' DNs. */
  membership: 'member' | 'memberOf';
  groupName: string;
  /** null: cards stay at the service. */
  card: string | null;
  /** null: PINs stay at the service. */
  pin: string | null;
}

type Preset = LdapSourceOptions['preset'];

/** The doc's table, column by column. @internal also the tests', which check it against the doc */
export const LDAP_PRESETS: Readonly<Record<Preset, Readonly<LdapMapping>>> = {
  openldap: {
    userFilter: '(objectClass=inetOrgPerson)',
    groupFilter: '(objectClass=groupOfNames)',
    id: 'entryUUID',
    email: ['mail'],
    firstName: 'givenName',
    lastName: 'sn',
    username: 'uid',
    disabled: null,
    membership: 'member',
    groupName: 'cn',
    card: null,
    pin: null,
  },
  'active-directory': {
    userFilter: '(&(objectClass=user)(!(objectClass=computer)))',
    groupFilter: '(objectClass=group)',
    id: 'objectGUID',
    email: ['mail', 'userPrincipalName'],
    firstName: 'givenName',
    lastName: 'sn',
    username: 'sAMAccountName',
    // ACCOUNTDISABLE (0x2) of userAccountControl.
    disabled: { attribute: 'userAccountControl', mask: 2 },
    membership: 'memberOf',
    groupName: 'cn',
    card: null,
    pin: null,
  },
};

/**
 * Attributes whose values are bytes, not text (Active Directory's GUIDs and SIDs): an id read from one is its
 * bytes in lower-case hex. Compared case-blind, as LDAP compares attribute names.
 */
const BINARY_ATTRIBUTES = ['objectGUID', 'objectSid', 'mS-DS-ConsistencyGuid'];

export function isBinaryAttribute(name: string): boolean {
  return BINARY_ATTRIBUTES.some((binary) => binary.toLowerCase() === name.toLowerCase());
}

/**
 * The names to give ldapts for the binary ones among `attributes`: it returns an attribute as bytes only when
 * named exactly as the server spells it, so the site's spelling, Active Directory's and lower case.
 */
export function binarySpellings(attributes: string[]): string[] {
  const binary = attributes.filter(isBinaryAttribute);
  const spellings = binary.flatMap((name) => [name, name.toLowerCase(), BINARY_ATTRIBUTES.find((b) => b.toLowerCase() === name.toLowerCase())!]);
  return [...new Set(spellings)];
}

/** The preset of `options` with the site's filters and `attributes` over it. */
export function ldapMapping(options: Pick<LdapSourceOptions, 'preset' | 'attributes' | 'users' | 'groups'>): LdapMapping {
  const preset = LDAP_PRESETS[options.preset];
  const a = options.attributes;
  return {
    userFilter: options.users.filter ?? preset.userFilter,
    groupFilter: options.groups?.filter ?? preset.groupFilter,
    id: a.id ?? preset.id,
    email: a.email === undefined ? [...preset.email] : [a.email],
    firstName: a.firstName ?? preset.firstName,
    lastName: a.lastName ?? preset.lastName,
    username: a.username ?? preset.username,
    disabled: a.disabled ?? preset.disabled,
    membership: a.membership ?? preset.membership,
    groupName: a.groupName ?? preset.groupName,
    card: a.card ?? preset.card,
    pin: a.pin ?? preset.pin,
  };
}

/** What a user search asks for: every attribute the mapping reads of a user, once each. */
export function userAttributes(m: LdapMapping): string[] {
  const names = [m.id, ...m.email, m.firstName, m.lastName, m.username];
  if (m.disabled) names.push(m.disabled.attribute);
  if (m.membership === 'memberOf') names.push('memberOf');
  if (m.card) names.push(m.card);
  if (m.pin) names.push(m.pin);
  return unique(names);
}

/** What a group search asks for. */
export function groupAttributes(m: LdapMapping): string[] {
  return unique([m.id, m.groupName, ...(m.membership === 'member' ? ['member'] : [])]);
}

/** Case-blind, first spelling kept. */
function unique(names: string[]): string[] {
  const seen = new Set<string>();
  return names.filter((name) => {
    const key = name.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
