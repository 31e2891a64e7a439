import { describe, expect, it } from 'vitest';
import { describeLdapFailure, type FailureContext } from '../../src/service/identity/ldap/ldapFailure.js';

/**
 * What an operator reads when LDAP cannot be read, for the failures a test's slapd cannot produce (Active
 * Directory's bind reasons, DNS, a server without paging); test/integration/ldapReader.test.ts meets the others
 * on a real server.
 */

const context: FailureContext = {
  step: 'bind',
  url: 'ldaps://dc1.example.org',
  hostPort: 'dc1.example.org:636',
  certificateName: 'dc1.example.org',
  caFile: '/etc/door-agent/ldap-ca.pem',
  bindDn: 'CN=door-agent,OU=Service Accounts,DC=example,DC=org',
  baseDn: 'OU=Staff,DC=example,DC=org',
  timeoutSeconds: 30,
  pageSize: 500,
};

/** An error as ldapts makes it from a result: the server's diagnostic, then the code. */
function result(code: number, diagnostic = ''): Error & { code: number } {
  return Object.assign(new Error(`${diagnostic} Code: 0x${code.toString(16)}`), { code });
}

function system(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

describe('describeLdapFailure', () => {
  it("reads Active Directory's reason for a refused bind", () => {
    const ad = (data: string) => result(49, `80090308: LdapErr: DSID-0C09044E, comment: AcceptSecurityContext error, data ${data}, v4563`);
    expect(describeLdapFailure(ad('52e'), context)).toBe(
      'cannot bind as CN=door-agent,OU=Service Accounts,DC=example,DC=org: invalid credentials (check bindDn and the password in bindPasswordFile)',
    );
    expect(describeLdapFailure(ad('533'), context)).toBe('cannot bind as CN=door-agent,OU=Service Accounts,DC=example,DC=org: the account is disabled');
    expect(describeLdapFailure(ad('775'), context)).toBe('cannot bind as CN=door-agent,OU=Service Accounts,DC=example,DC=org: the account is locked out');
    expect(describeLdapFailure(ad('532'), context)).toBe('cannot bind as CN=door-agent,OU=Service Accounts,DC=example,DC=org: the password has expired');
  });

  it('says a server wants TLS before a bind', () => {
    expect(
      describeLdapFailure(result(8, '00002028: LdapErr: DSID-0C090259, comment: The server requires binds to turn on integrity checking'), context),
    ).toMatch(/^cannot bind as CN=door-agent,.*: the server wants a protected connection first \(00002028: .*\): use ldaps:\/\/ or startTls: true$/);
  });

  it('names the host that does not resolve, and a connection that timed out', () => {
    expect(describeLdapFailure(system('ENOTFOUND', 'getaddrinfo ENOTFOUND dc1.example.org'), context)).toBe(
      "cannot reach dc1.example.org:636 (ldaps://dc1.example.org): the host name does not resolve (ENOTFOUND): check url and this machine's DNS",
    );
    expect(describeLdapFailure(new Error('Connection timeout'), context)).toBe(
      'cannot reach dc1.example.org:636 (ldaps://dc1.example.org): no connection within 30 s (connect timeout): a firewall, or the server is down',
    );
  });

  it('says what stopped a search', () => {
    const users = { ...context, step: 'users' as const };
    expect(describeLdapFailure(result(3), users)).toBe(
      'the server stopped the users search at its time limit (timeLimitExceeded, timeoutSeconds 30): narrow users.filter or raise timeoutSeconds',
    );
    expect(describeLdapFailure(result(12), users)).toBe(
      'the server does not page searches (unavailableCriticalExtension): LDAP reads need the paged results control (RFC 2696)',
    );
    expect(describeLdapFailure(result(50), { ...context, step: 'groups', baseDn: 'OU=Door Groups,DC=example,DC=org' })).toBe(
      'bindDn CN=door-agent,OU=Service Accounts,DC=example,DC=org may not search OU=Door Groups,DC=example,DC=org (insufficientAccessRights): grant it read access there',
    );
    expect(describeLdapFailure(new Error('SearchRequest: Operation timed out'), users)).toBe(
      'no answer from dc1.example.org:636 (ldaps://dc1.example.org) to a page of the users search within timeoutSeconds (30 s)',
    );
  });

  it('tells a machine that trusts the usual CAs to pin one', () => {
    expect(describeLdapFailure(system('UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate'), { ...context, caFile: undefined })).toBe(
      'TLS: the certificate of dc1.example.org:636 (ldaps://dc1.example.org) is not signed by a CA this machine trusts (UNABLE_TO_VERIFY_LEAF_SIGNATURE): set caFile to the CA that signed it',
    );
  });
});
