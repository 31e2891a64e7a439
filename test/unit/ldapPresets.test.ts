import { describe, expect, it } from 'vitest';
import { LdapReadError } from '../../src/service/identity/ldap/ldapEntries.js';
import { groupFromEntry, personFromEntry, type RawEntry } from '../../src/service/identity/ldap/ldapEntryMap.js';
import { binarySpellings, groupAttributes, LDAP_PRESETS, ldapMapping, userAttributes } from '../../src/service/identity/ldap/presets.js';
import type { LdapAttributes } from '../../src/service/options.js';

/** The presets of docs/identity-sources.md ("The presets"), the site's overrides, and entries read through them. */

const users = { baseDn: 'OU=Staff,DC=example,DC=org' };
const groups = { baseDn: 'OU=Door Groups,DC=example,DC=org' };
const openldap = ldapMapping({ preset: 'openldap', attributes: {}, users, groups });
const ad = ldapMapping({ preset: 'active-directory', attributes: {}, users, groups });
const withAttributes = (attributes: LdapAttributes) => ldapMapping({ preset: 'openldap', attributes, users, groups });

describe('the presets', () => {
  it('are the table of the manual', () => {
    expect(openldap).toEqual({
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
    });
    expect(ad).toEqual({
      userFilter: '(&(objectClass=user)(!(objectClass=computer)))',
      groupFilter: '(objectClass=group)',
      id: 'objectGUID',
      email: ['mail', 'userPrincipalName'],
      firstName: 'givenName',
      lastName: 'sn',
      username: 'sAMAccountName',
      disabled: { attribute: 'userAccountControl', mask: 2 },
      membership: 'memberOf',
      groupName: 'cn',
      card: null,
      pin: null,
    });
  });

  it('take the site filters over their own', () => {
    const m = ldapMapping({
      preset: 'active-directory',
      attributes: {},
      users: { baseDn: users.baseDn, filter: '(objectClass=user)' },
      groups: { baseDn: groups.baseDn, filter: '(cn=Door*)' },
    });
    expect(m.userFilter).toBe('(objectClass=user)');
    expect(m.groupFilter).toBe('(cn=Door*)');
  });

  it('take each attribute the site names over theirs, and keep the others', () => {
    const m = ldapMapping({
      preset: 'active-directory',
      attributes: { id: 'employeeID', email: 'proxyAddresses', disabled: { attribute: 'accountStatus', values: ['inactive'] }, card: 'badgeNumber' },
      users,
    });
    expect(m).toMatchObject({
      id: 'employeeID',
      // A site's e-mail attribute replaces the list: userPrincipalName is no longer a fallback.
      email: ['proxyAddresses'],
      disabled: { attribute: 'accountStatus', values: ['inactive'] },
      card: 'badgeNumber',
      pin: null,
      username: 'sAMAccountName',
      membership: 'memberOf',
    });
    expect(withAttributes({ membership: 'memberOf', groupName: 'description' })).toMatchObject({ membership: 'memberOf', groupName: 'description' });
  });

  it('are not changed by a merge', () => {
    ldapMapping({ preset: 'active-directory', attributes: { email: 'x' }, users }).email.push('y');
    expect(LDAP_PRESETS['active-directory'].email).toEqual(['mail', 'userPrincipalName']);
  });

  it('ask the server for what they read, once each', () => {
    expect(userAttributes(openldap)).toEqual(['entryUUID', 'mail', 'givenName', 'sn', 'uid']);
    expect(userAttributes(ad)).toEqual(['objectGUID', 'mail', 'userPrincipalName', 'givenName', 'sn', 'sAMAccountName', 'userAccountControl', 'memberOf']);
    expect(userAttributes(withAttributes({ username: 'mail', card: 'employeeNumber', pin: 'pager' }))).toEqual([
      'entryUUID',
      'mail',
      'givenName',
      'sn',
      'employeeNumber',
      'pager',
    ]);
    expect(groupAttributes(openldap)).toEqual(['entryUUID', 'cn', 'member']);
    expect(groupAttributes(ad)).toEqual(['objectGUID', 'cn']);
  });

  it('name binary attributes in every spelling ldapts may meet', () => {
    expect(binarySpellings(userAttributes(openldap))).toEqual([]);
    expect(binarySpellings(['objectguid', 'mail'])).toEqual(['objectguid', 'objectGUID']);
  });
});

const guid = Buffer.from('0123456789abcdef0123456789abcdef', 'hex');

describe('a user entry read through a preset', () => {
  it('OpenLDAP: the e-mail in lower case, the first of several values, member mode', () => {
    const entry: RawEntry = {
      dn: 'uid=jdoe,ou=people,dc=example,dc=org',
      entryUUID: '5f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d',
      mail: ['Jane.Doe@Example.ORG', 'jd@example.org'],
      givenName: 'Jane',
      sn: ['Doe', 'Doe-Smith'],
      uid: 'jdoe',
    };
    expect(personFromEntry(entry, openldap)).toEqual({
      id: '5f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d',
      dn: 'uid=jdoe,ou=people,dc=example,dc=org',
      email: 'jane.doe@example.org',
      firstName: 'Jane',
      lastName: 'Doe',
      username: 'jdoe',
      disabled: false,
      memberOf: [],
      card: null,
      pin: null,
    });
  });

  it('Active Directory: objectGUID as hex, memberOf kept as given, names read case-blind', () => {
    const entry: RawEntry = {
      dn: 'CN=Jane Doe,OU=Staff,DC=example,DC=org',
      objectguid: guid,
      MAIL: 'jane@example.org',
      givenname: 'Jane',
      sn: 'Doe',
      samaccountname: 'jdoe',
      userAccountControl: '512',
      memberOf: ['CN=Door Staff,OU=Door Groups,DC=example,DC=org', 'CN=Night, OU=Door Groups,DC=example,DC=org'],
    };
    expect(personFromEntry(entry, ad)).toEqual({
      id: '0123456789abcdef0123456789abcdef',
      dn: 'CN=Jane Doe,OU=Staff,DC=example,DC=org',
      email: 'jane@example.org',
      firstName: 'Jane',
      lastName: 'Doe',
      username: 'jdoe',
      disabled: false,
      memberOf: ['CN=Door Staff,OU=Door Groups,DC=example,DC=org', 'CN=Night, OU=Door Groups,DC=example,DC=org'],
      card: null,
      pin: null,
    });
  });

  it('Active Directory: userPrincipalName when there is no mail; no e-mail at all is null', () => {
    const base: RawEntry = { dn: 'CN=x,DC=example,DC=org', objectGUID: guid, userPrincipalName: 'JRoe@Example.org', mail: [], userAccountControl: '512' };
    expect(personFromEntry(base, ad).email).toBe('jroe@example.org');
    // The requested attributes an entry lacks come back empty: neither is an address.
    const none = personFromEntry({ dn: 'CN=x,DC=example,DC=org', objectGUID: guid, userPrincipalName: [], mail: ' ', userAccountControl: '512' }, ad);
    expect(none.email).toBeNull();
    expect(none.username).toBe('');
  });

  it('the username is the e-mail local part when the entry has none', () => {
    expect(personFromEntry({ dn: 'uid=x', entryUUID: 'u1', mail: 'Kim.Lee@example.org' }, openldap).username).toBe('kim.lee');
  });

  it.each([
    ['512', false],
    ['514', true],
    ['66050', true],
    ['66048', false],
    // A value beyond 32 bits still has its low bits read right.
    ['4294967298', true],
    ['not a number', false],
  ])('userAccountControl %s: disabled %s', (value, disabled) => {
    expect(personFromEntry({ dn: 'CN=x', objectGUID: guid, userAccountControl: value }, ad).disabled).toBe(disabled);
  });

  it('a flag rule on an entry without its attribute stops the read, naming the attribute and the entry', () => {
    // A bind account not allowed to read userAccountControl must not make every disabled account enabled.
    const read = () => personFromEntry({ dn: 'CN=Jo Roe,OU=Staff,DC=example,DC=org', objectGUID: guid, mail: 'jroe@example.org' }, ad);
    expect(read).toThrow(LdapReadError);
    expect(read).toThrow(
      'cannot tell whether user CN=Jo Roe,OU=Staff,DC=example,DC=org is disabled: it has no userAccountControl (can the bind account read it?)',
    );
  });

  it('a binary id that arrives as text stops the read (its bytes are lost)', () => {
    const read = () => personFromEntry({ dn: 'CN=x,DC=example,DC=org', objectGUID: 'not bytes', userAccountControl: '512' }, ad);
    expect(read).toThrow(LdapReadError);
    expect(read).toThrow('user CN=x,DC=example,DC=org: its objectGUID (attributes.id) arrived as text, not bytes: it cannot be read as an id');
    expect(() => groupFromEntry({ dn: 'CN=g,DC=example,DC=org', objectGUID: 'text' }, ad)).toThrow(LdapReadError);
  });

  it('a rule of listed values is case-blind, over every value of the attribute', () => {
    const m = withAttributes({ disabled: { attribute: 'employeeType', values: ['Disabled', 'left'] } });
    expect(personFromEntry({ dn: 'uid=x', entryUUID: 'u', employeeType: ['contractor', 'DISABLED'] }, m).disabled).toBe(true);
    expect(personFromEntry({ dn: 'uid=x', entryUUID: 'u', employeeType: 'contractor' }, m).disabled).toBe(false);
    expect(personFromEntry({ dn: 'uid=x', entryUUID: 'u' }, m).disabled).toBe(false);
  });

  it('a rule of a present attribute: present means disabled', () => {
    const m = withAttributes({ disabled: { attribute: 'pwdAccountLockedTime' } });
    expect(personFromEntry({ dn: 'uid=x', entryUUID: 'u', pwdAccountLockedTime: '000001010000Z' }, m).disabled).toBe(true);
    expect(personFromEntry({ dn: 'uid=x', entryUUID: 'u', pwdAccountLockedTime: [] }, m).disabled).toBe(false);
  });

  it('maps a card and a PIN only from attributes the site names', () => {
    const entry: RawEntry = { dn: 'uid=x', entryUUID: 'u', employeeNumber: ' 0042 ', pager: '4711' };
    expect(personFromEntry(entry, openldap)).toMatchObject({ card: null, pin: null });
    expect(personFromEntry(entry, withAttributes({ card: 'employeeNumber', pin: 'pager' }))).toMatchObject({ card: '0042', pin: '4711' });
    expect(personFromEntry({ dn: 'uid=x', entryUUID: 'u' }, withAttributes({ card: 'employeeNumber' })).card).toBeNull();
  });

  it('an entry without its id stops the read, naming the entry and attributes.id', () => {
    const read = () => personFromEntry({ dn: 'uid=svc,ou=people,dc=example,dc=org', mail: 'svc@example.org', entryUUID: [] }, openldap);
    expect(read).toThrow(LdapReadError);
    expect(read).toThrow(
      "user uid=svc,ou=people,dc=example,dc=org has no entryUUID (attributes.id): every entry the users' filter matches needs one; choose another attributes.id or narrow the filter",
    );
  });
});

describe('a group entry read through a preset', () => {
  it('OpenLDAP: its name and its members DNs', () => {
    const entry: RawEntry = {
      dn: 'cn=Doors,ou=groups,dc=example,dc=org',
      entryUUID: 'g1',
      cn: 'Doors',
      member: ['uid=a,ou=people,dc=example,dc=org', 'uid=b,ou=people,dc=example,dc=org'],
    };
    expect(groupFromEntry(entry, openldap)).toEqual({
      id: 'g1',
      dn: 'cn=Doors,ou=groups,dc=example,dc=org',
      name: 'Doors',
      members: ['uid=a,ou=people,dc=example,dc=org', 'uid=b,ou=people,dc=example,dc=org'],
    });
  });

  it('Active Directory: no members on the group (memberOf mode), the id as hex', () => {
    expect(groupFromEntry({ dn: 'CN=Door Staff,OU=Door Groups,DC=example,DC=org', objectGUID: guid, cn: 'Door Staff', member: 'CN=a' }, ad)).toEqual({
      id: '0123456789abcdef0123456789abcdef',
      dn: 'CN=Door Staff,OU=Door Groups,DC=example,DC=org',
      name: 'Door Staff',
      members: [],
    });
  });

  it('a group without its name attribute is named by its DN', () => {
    expect(groupFromEntry({ dn: 'cn=Night Shift,ou=groups,dc=example,dc=org', entryUUID: 'g2', cn: [] }, openldap).name).toBe('Night Shift');
  });
});
