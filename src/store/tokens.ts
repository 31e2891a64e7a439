import { createHash } from 'node:crypto';

/** Guest tokens are stored and looked up by digest only: the cache never holds a usable magic_token. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
