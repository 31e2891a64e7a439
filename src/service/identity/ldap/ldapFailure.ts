/**
 * Why a read of LDAP failed, in words an operator can act on (docs/identity-sources.md, "When LDAP cannot be
 * read"): what could not be reached, which certificate was refused, which bind or base DN the server refused.
 * Pure; ldapReader.ts says which step failed and with what.
 */

/**
 * The step of a read that failed: the same result code means different things at each. The connection is made by
 * the first step (StartTLS, the bind, or an anonymous read's users search); its errors are told by their codes.
 */
export type LdapStep = 'startTls' | 'bind' | 'users' | 'groups';

export interface FailureContext {
  step: LdapStep;
  /** The configured url, and its host:port with the default port spelled out. */
  url: string;
  hostPort: string;
  /** The name the certificate must carry (serverName, else the URL's host). */
  certificateName: string;
  caFile: string | undefined;
  bindDn: string | undefined;
  /** The base DN of the failed search (users.baseDn or groups.baseDn). */
  baseDn: string;
  timeoutSeconds: number;
  pageSize: number;
}

const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);

/** Active Directory's reasons for refusing a bind (`data 52e` in its diagnostic). */
const AD_BIND_REASONS: Record<string, string> = {
  '525': 'no such user',
  '52e': 'invalid credentials',
  '530': 'not permitted to log on at this time',
  '531': 'not permitted to log on from this machine',
  '532': 'the password has expired',
  '533': 'the account is disabled',
  '701': 'the account has expired',
  '773': 'the password must be changed',
  '775': 'the account is locked out',
};

/** LDAP result codes (RFC 4511) a read may meet. */
const RESULT = {
  timeLimitExceeded: 3,
  sizeLimitExceeded: 4,
  authMethodNotSupported: 7,
  strongerAuthRequired: 8,
  adminLimitExceeded: 11,
  unavailableCriticalExtension: 12,
  confidentialityRequired: 13,
  noSuchObject: 32,
  invalidDNSyntax: 34,
  inappropriateAuthentication: 48,
  invalidCredentials: 49,
  insufficientAccessRights: 50,
  busy: 51,
  unavailable: 52,
  unwillingToPerform: 53,
} as const;

function codeOf(err: unknown): unknown {
  return typeof err === 'object' && err !== null && 'code' in err ? (err as { code: unknown }).code : undefined;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The server's own words in an ldapts result error (`<diagnostic> Code: 0x31`), '' when it said nothing. */
function diagnostic(err: unknown): string {
  return messageOf(err)
    .replace(/\s*Code: 0x[0-9a-f]+\s*$/i, '')
    .trim();
}

const searchName = (step: LdapStep) => (step === 'groups' ? 'groups' : 'users');

/** A socket's or TLS's error code (ECONNREFUSED, SELF_SIGNED_CERT_IN_CHAIN, ...) in words; null for others. */
function transportFailure(code: string, err: unknown, c: FailureContext): string | null {
  const at = `${c.hostPort} (${c.url})`;
  switch (code) {
    case 'ECONNREFUSED':
      return `cannot reach ${at}: connection refused (ECONNREFUSED): is the LDAP server running, and is url right?`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `cannot reach ${at}: the host name does not resolve (${code}): check url and this machine's DNS`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `cannot reach ${at}: no route to the host (${code}): check the network`;
    case 'ETIMEDOUT':
      return `cannot reach ${at}: no connection within ${c.timeoutSeconds} s (ETIMEDOUT): a firewall, or the server is down`;
    case 'ECONNRESET':
    case 'EPIPE':
      // Node's words when the peer hangs up in the middle of the handshake: a plain LDAP port, most often.
      if (/before secure TLS connection was established/.test(messageOf(err))) {
        return `TLS: ${at} closed the connection during the handshake (${code}): is this port plain LDAP behind an ldaps:// url? (use ldap:// with startTls: true)`;
      }
      return `the connection to ${at} was closed by the server or a firewall (${code})`;
    case 'CERT_HAS_EXPIRED':
      return `TLS: the certificate of ${at} has expired (CERT_HAS_EXPIRED): renew it on the server, or check this machine's clock`;
    case 'CERT_NOT_YET_VALID':
      return `TLS: the certificate of ${at} is not valid yet (CERT_NOT_YET_VALID): check this machine's clock`;
    case 'ERR_TLS_CERT_ALTNAME_INVALID': {
      const reason = typeof (err as { reason?: unknown }).reason === 'string' ? (err as { reason: string }).reason : messageOf(err);
      return `TLS: the certificate of ${at} is not for ${c.certificateName} (${reason.replace(/[.:\s]+$/, '')}): set serverName to a name it carries, or use that name in url`;
    }
    case 'EPROTO':
    case 'ERR_SSL_WRONG_VERSION_NUMBER':
    case 'ERR_SSL_PACKET_LENGTH_TOO_LONG':
      return `TLS: the handshake with ${at} failed (${code}): is this port plain LDAP behind an ldaps:// url? (use ldap:// with startTls: true)`;
  }
  if (UNTRUSTED.has(code)) {
    return c.caFile
      ? `TLS: the certificate of ${at} is not signed by caFile ${c.caFile} (${code}): give caFile the CA that signed the server's certificate`
      : `TLS: the certificate of ${at} is not signed by a CA this machine trusts (${code}): set caFile to the CA that signed it`;
  }
  return null;
}

/** A refused bind: the DN, and the server's reason (Active Directory's data code read). */
function bindFailure(code: number, err: unknown, c: FailureContext): string {
  const who = `cannot bind as ${c.bindDn ?? 'anonymous'}`;
  const said = diagnostic(err);
  switch (code) {
    case RESULT.invalidCredentials: {
      const ad = /data ([0-9a-f]{3})/i.exec(said)?.[1]?.toLowerCase();
      const reason = (ad && AD_BIND_REASONS[ad]) || 'invalid credentials';
      return `${who}: ${reason}${reason === 'invalid credentials' ? ' (check bindDn and the password in bindPasswordFile)' : ''}`;
    }
    case RESULT.inappropriateAuthentication:
      return `${who}: inappropriate authentication (the server takes no bind without a password for this DN)`;
    case RESULT.strongerAuthRequired:
    case RESULT.confidentialityRequired:
      return `${who}: the server wants a protected connection first (${said || `result ${code}`}): use ldaps:// or startTls: true`;
    case RESULT.authMethodNotSupported:
      return `${who}: the server does not take a simple bind (${said || 'authMethodNotSupported'})`;
    case RESULT.invalidDNSyntax:
      return `${who}: the server says bindDn is not a valid DN`;
  }
  return `${who}: ${said || `result code ${code}`}`;
}

/** A refused search (users or groups). */
function searchFailure(code: number, err: unknown, c: FailureContext): string {
  const which = searchName(c.step);
  const baseKey = `${which}.baseDn`;
  const said = diagnostic(err);
  switch (code) {
    case RESULT.noSuchObject:
      return `${baseKey} ${c.baseDn} does not exist on the server: check ${baseKey} (and that bindDn may read it)`;
    case RESULT.invalidDNSyntax:
      return `${baseKey} ${c.baseDn} is not a DN the server takes`;
    case RESULT.sizeLimitExceeded:
      return (
        `the server stopped the ${which} search at its size limit (sizeLimitExceeded), though it was paged (pageSize ${c.pageSize}): ` +
        `raise the server's limit for bindDn (OpenLDAP: limits ... size.prtotal=unlimited) or narrow ${which}.filter`
      );
    case RESULT.timeLimitExceeded:
      return `the server stopped the ${which} search at its time limit (timeLimitExceeded, timeoutSeconds ${c.timeoutSeconds}): narrow ${which}.filter or raise timeoutSeconds`;
    case RESULT.adminLimitExceeded:
      return `the server refused the ${which} search for an administrative limit (adminLimitExceeded${said ? `: ${said}` : ''}): lower pageSize`;
    case RESULT.unavailableCriticalExtension:
      return `the server does not page searches (unavailableCriticalExtension): LDAP reads need the paged results control (RFC 2696)`;
    case RESULT.insufficientAccessRights:
      return `bindDn ${c.bindDn ?? '(anonymous)'} may not search ${c.baseDn} (insufficientAccessRights): grant it read access there`;
    case RESULT.strongerAuthRequired:
    case RESULT.confidentialityRequired:
      return `the server wants a protected or authenticated connection to search ${c.baseDn} (${said || `result ${code}`}): use TLS, and a bindDn`;
    case RESULT.busy:
    case RESULT.unavailable:
    case RESULT.unwillingToPerform:
      return `the server did not search ${c.baseDn} (${said || `result ${code}`}): try again later`;
  }
  return `the ${which} search under ${c.baseDn} failed: ${said || `result code ${code}`}`;
}

/** ldapts's own errors (no code): timeouts, a closed connection, a filter it cannot parse. */
function clientFailure(err: unknown, c: FailureContext): string {
  const message = messageOf(err);
  const at = `${c.hostPort} (${c.url})`;
  if (message === 'Connection timeout') {
    return `cannot reach ${at}: no connection within ${c.timeoutSeconds} s (connect timeout): a firewall, or the server is down`;
  }
  if (/Operation timed out/.test(message)) {
    const what = c.step === 'users' || c.step === 'groups' ? `a page of the ${c.step} search` : c.step === 'bind' ? 'the bind' : 'StartTLS';
    return `no answer from ${at} to ${what} within timeoutSeconds (${c.timeoutSeconds} s)`;
  }
  if (/Connection closed|Socket error|socket connection not established/i.test(message)) {
    return `the connection to ${at} was lost during the ${c.step === 'users' || c.step === 'groups' ? `${c.step} search` : c.step} (${message.split('\n').pop()})`;
  }
  if (/parens|filter/i.test(message) && (c.step === 'users' || c.step === 'groups')) {
    return `${c.step}.filter is not an LDAP filter (${message})`;
  }
  return `${c.step === 'users' || c.step === 'groups' ? `the ${c.step} search` : c.step} failed at ${at}: ${message}`;
}

/** What an operator reads of a failed step. */
export function describeLdapFailure(err: unknown, c: FailureContext): string {
  const code = codeOf(err);
  if (typeof code === 'string') {
    const transport = transportFailure(code, err, c);
    if (transport !== null) return transport;
  }
  if (typeof code === 'number') {
    if (c.step === 'startTls')
      return `the server at ${c.hostPort} refused StartTLS (${diagnostic(err) || `result code ${code}`}): does it have a certificate? (else use ldaps://)`;
    if (c.step === 'bind') return bindFailure(code, err, c);
    return searchFailure(code, err, c);
  }
  return clientFailure(err, c);
}
