import { createHash, randomBytes } from 'node:crypto';
import { CoalescedReads } from '../util/coalescedReads.js';
import type { SqlDb } from './sql/sqlDb.js';

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

/**
 * Where a key opens doors: `api`, every route of the API; `scim`, only /scim/v2 (an identity provider's bearer token,
 * docs/identity-sources.md "The token"). A key opens no route of the other scope.
 */
export type KeyScope = 'api' | 'scim';
export const KEY_SCOPES: readonly KeyScope[] = ['api', 'scim'];

/** A key's SHA-256, as stored: what a console session keeps to check its key again (never the key itself). */
export const keyDigest = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

/**
 * A new key and its api_keys row (the key itself is never stored).
 * @internal also the bench's, which writes the row into a seeded file itself
 */
export function issueKey(
  rank: KeyKind,
  expiresDays: number,
  now: number,
): { key: string; row: { key_hash: string; rank: KeyKind; created_at: number; expires_at: number | null } } {
  const key = `dak_${randomBytes(32).toString('base64url')}`;
  const expiresAt = expiresDays > 0 ? now + expiresDays * 86_400_000 : null;
  return { key, row: { key_hash: keyDigest(key), rank, created_at: now, expires_at: expiresAt } };
}

/** API keys: only a SHA-256 is stored; 0 or no expiry means never (docs/access-control-api.md, Authentication). */
type KeyRow = { rank: KeyKind; expires_at: number | null; scope: KeyScope };

export class ApiKeys {
  /**
   * Every request checks its key: the checks asked for while one is at the database go together, as one read
   * (coalescedReads.ts), so a storm of doors costs a few round trips, not one each; none is answered from memory.
   */
  private readonly lookups: CoalescedReads<string, KeyRow | undefined>;

  constructor(private readonly db: SqlDb) {
    this.lookups = new CoalescedReads<string, KeyRow | undefined>(async (hashes) => {
      const rows = await db.all<KeyRow & { key_hash: string }>(`SELECT key_hash, rank, expires_at, scope FROM api_keys WHERE key_hash ${db.inJsonTexts}`, [
        JSON.stringify(hashes),
      ]);
      return new Map(rows.map((row) => [row.key_hash, row]));
    }, undefined);
  }

  /** Creates a key and returns it: the only time it is ever visible. */
  async create(rank: KeyKind, expiresDays: number, now: number, scope: KeyScope = 'api'): Promise<string> {
    const { key, row } = issueKey(rank, expiresDays, now);
    // An API key leaves scope to its default: `service key create` also works on a database of a schema before scopes.
    const values = [row.key_hash, row.rank, row.created_at, row.expires_at];
    await (scope === 'api'
      ? this.db.run('INSERT INTO api_keys (key_hash, rank, created_at, expires_at) VALUES (?, ?, ?, ?)', values)
      : this.db.run('INSERT INTO api_keys (key_hash, rank, created_at, expires_at, scope) VALUES (?, ?, ?, ?, ?)', [...values, scope]));
    return key;
  }

  /** The kind of a valid, unexpired key of the API's scope, or null (an SCIM token opens no route of the API). */
  async verify(key: string, now: number): Promise<KeyKind | null> {
    if (!wellFormed(key)) return null;
    return this.verifyDigest(keyDigest(key), now);
  }

  /** The kind of the API key with this digest (keyDigest) while it is stored and unexpired, or null. */
  async verifyDigest(hash: string, now: number): Promise<KeyKind | null> {
    return this.rankIn('api', hash, now);
  }

  /** The rank of a valid, unexpired SCIM token (scope scim), or null: the only keys /scim/v2 takes. */
  async verifyScim(key: string, now: number): Promise<KeyKind | null> {
    if (!wellFormed(key)) return null;
    return this.rankIn('scim', keyDigest(key), now);
  }

  private async rankIn(scope: KeyScope, hash: string, now: number): Promise<KeyKind | null> {
    // Inside a transaction, on its connection; otherwise with the other checks asked for meanwhile.
    const row = this.db.inTransaction()
      ? await this.db.get<KeyRow>('SELECT rank, expires_at, scope FROM api_keys WHERE key_hash = ?', [hash])
      : await this.lookups.read(hash);
    if (!row || row.scope !== scope || (row.expires_at !== null && now >= row.expires_at)) return null;
    return row.rank;
  }
}

/** What every key looks like (issueKey): anything else is refused without a query. */
const wellFormed = (key: string) => /^dak_[A-Za-z0-9_-]{43}$/.test(key);
