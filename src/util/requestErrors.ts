/**
 * A failed request (node:http's system or TLS error, or one wrapping it as its cause) as an operator reads it:
 * what could not be reached and why, with what to check. The URL is the service's, never one with a key in it.
 */

interface Cause {
  code?: unknown;
  message?: unknown;
  hostname?: unknown;
  address?: unknown;
  port?: unknown;
  reason?: unknown;
  errors?: unknown;
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

/** The innermost error that says something: the error, its cause, or the first of a happy-eyeballs AggregateError. */
function rootCause(err: unknown): Cause | undefined {
  let cause: unknown = err instanceof Error && err.cause !== undefined ? err.cause : err;
  if (cause && typeof cause === 'object' && Array.isArray((cause as Cause).errors) && !(cause as Cause).code) {
    cause = ((cause as Cause).errors as unknown[])[0] ?? cause;
  }
  return cause && typeof cause === 'object' ? (cause as Cause) : undefined;
}

/** host:port of the URL, the default port spelled out. */
function hostPort(url: URL): string {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `${url.hostname}:${port}`;
}

/** Why the request failed, without the URL: `connection refused: nothing is listening at 127.0.0.1:8080 ...`. */
export function requestFailureReason(err: unknown, url: URL): string {
  const cause = rootCause(err);
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  const message = typeof cause?.message === 'string' ? cause.message : err instanceof Error ? err.message : String(err);
  const at = hostPort(url);
  switch (code) {
    case 'ECONNREFUSED':
      return `connection refused: nothing is listening at ${at} (is the service running, and is service.baseUrl right?)`;
    case 'ENOTFOUND':
      return `the host name ${url.hostname} does not resolve (DNS: ENOTFOUND): check service.baseUrl and this controller's DNS`;
    case 'EAI_AGAIN':
      return `the host name ${url.hostname} could not be resolved now (DNS: EAI_AGAIN, no answer from the DNS server): check the network`;
    case 'ECONNRESET':
      return `the connection to ${at} was reset (ECONNRESET): the service or a proxy closed it`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `no route to ${url.hostname} (${code}): check the network`;
    case 'ETIMEDOUT':
      return `no connection to ${at} could be made (connect timeout): a firewall, or the host is down`;
    case 'CERT_HAS_EXPIRED':
      return `TLS: the service's certificate has expired (CERT_HAS_EXPIRED): renew it (or check this controller's clock)`;
    case 'CERT_NOT_YET_VALID':
      return `TLS: the service's certificate is not valid yet (CERT_NOT_YET_VALID): check this controller's clock`;
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return `TLS: the service's certificate is not for ${url.hostname} (hostname mismatch: ${(typeof cause?.reason === 'string' ? cause.reason : message).replace(/[:\s]+$/, '')})`;
    case 'EPROTO':
    case 'ERR_SSL_WRONG_VERSION_NUMBER':
      return `TLS: the handshake with ${at} failed (${code}): is it a plain http:// service behind an https:// URL?`;
  }
  if (code && UNTRUSTED.has(code)) {
    return (
      `TLS: the service's certificate is not trusted (${code}: ${message}): ` +
      `give door-agent the CA that signed it with NODE_EXTRA_CA_CERTS=/path/ca.pem (see docs/operations.md, Commands)`
    );
  }
  return code ? `${code}: ${message}` : message;
}
