import { isIP } from 'node:net';

/**
 * A loopback host (localhost, 127.x.y.z, ::1, bracketed or not): the one place a setting may speak in clear text
 * (syslog's tcp://, LDAP's ldap:// without StartTLS).
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  return bare === '::1';
}
