import { createHash, randomBytes } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import type { ServiceDb as Db } from './database.js';

/** A user's rank (PUT /modifyrank), and the rank of an API key issued for a person or a program. */
export type Rank = 'REGULAR' | 'ADMIN' | 'SUPER';
export const RANKS: readonly Rank[] = ['REGULAR', 'ADMIN', 'SUPER'];

/**
 * What an API key may do: a rank, or DOOR, the key of a door controller (issue 32 item 16): it reads users and
 * their PINs in clear (a door needs both factors of a card_and_pin door) and changes nothing. REGULAR keys read
 * PINs masked.
 */
export type KeyKind = Rank | 'DOOR';
export const KEY_KINDS: readonly KeyKind[] = [...RANKS, 'DOOR'];

/** A key's SHA-256, as stored: what a console session keeps to check its key again (never the key itself). */
export const keyDigest = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

/** API keys: only a SHA-256 is stored; 0 or no expiry means never (docs/access-control-api.md, Authentication). */
export class ApiKeys {
  // Prepared once: every request of every endpoint checks its key.
  private readonly byHash: Statement<[string], { rank: KeyKind; expires_at: number | null }>;

  constructor(private readonly db: Db) {
    this.byHash = db.prepare('SELECT rank, expires_at FROM api_keys WHERE key_hash = ?');
  }

  /** Creates a key and returns it: the only time it is ever visible. */
  create(rank: KeyKind, expiresDays: number, now: number): string {
    const key = `dak_${randomBytes(32).toString('base64url')}`;
    const expiresAt = expiresDays > 0 ? now + expiresDays * 86_400_000 : null;
    this.db.prepare('INSERT INTO api_keys (key_hash, rank, created_at, expires_at) VALUES (?, ?, ?, ?)').run(keyDigest(key), rank, now, expiresAt);
    return key;
  }

  /** The kind of a valid, unexpired key, or null. */
  verify(key: string, now: number): KeyKind | null {
    if (!/^dak_[A-Za-z0-9_-]{43}$/.test(key)) return null;
    return this.verifyDigest(keyDigest(key), now);
  }

  /** The kind of the key with this digest (keyDigest) while it is stored and unexpired, or null. */
  verifyDigest(hash: string, now: number): KeyKind | null {
    const row = this.byHash.get(hash);
    if (!row || (row.expires_at !== null && now >= row.expires_at)) return null;
    return row.rank;
  }
}
