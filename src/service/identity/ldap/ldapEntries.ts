/**
 * What a sync reads of an LDAP server (docs/identity-sources.md, "LDAP and Active Directory"): its people and its
 * groups, already mapped through the preset and the site's attributes (ldapReader.ts), so the sync's plan
 * (syncPlan.ts) compares plain records and never speaks LDAP.
 */

/** One user entry. */
export interface LdapPerson {
  /** The id attribute's value (entryUUID; objectGUID as lower-case hex): stable across renames and moves. */
  id: string;
  dn: string;
  /** Lower case; null: the entry has none (skipped by the sync, and said so). */
  email: string | null;
  firstName: string;
  lastName: string;
  /** The username attribute's value; the e-mail's local part when the entry has none. */
  username: string;
  /** By the disabled rule (AD: userAccountControl bit 2). */
  disabled: boolean;
  /** membership memberOf: the DNs of the groups the entry names; [] in member mode. */
  memberOf: string[];
  /** The mapped card number (attributes.card), null when none is mapped or the entry has none. */
  card: string | null;
  /** The mapped PIN (attributes.pin), null when none is mapped or the entry has none. */
  pin: string | null;
}

/** One group entry under groups.baseDn. */
export interface LdapGroup {
  id: string;
  dn: string;
  name: string;
  /** membership member: the DNs its member attribute lists; [] in memberOf mode. */
  members: string[];
}

/** Everything one read found. */
export interface LdapSnapshot {
  people: LdapPerson[];
  /** [] without a groups section. */
  groups: LdapGroup[];
  /** How membership is read (the preset's or attributes.membership). */
  membership: 'member' | 'memberOf';
}

/**
 * Why LDAP could not be read, in words an operator can act on ("cannot bind as CN=...: invalid credentials",
 * "cannot reach ldaps://dc1:636: connection refused", "the server's certificate is not signed by caFile ...").
 * A read that throws it changes nothing.
 */
export class LdapReadError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LdapReadError';
  }
}

/** Reads the whole directory once (one connection: bind, paged searches, unbind). */
export interface LdapReader {
  read(): Promise<LdapSnapshot>;
}

/** DNs compare case-blind and without the spaces after commas (`CN=A, OU=B` is `cn=a,ou=b`). */
export function normalizeDn(dn: string): string {
  return dn
    .split(',')
    .map((part) => part.trim().toLowerCase())
    .join(',');
}
