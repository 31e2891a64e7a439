import { createHash, randomBytes } from 'node:crypto';
import { base32 } from '../../protocol/fleetSigning.js';
import type { SqlDb } from '../sql/sqlDb.js';

/** The SHA-256 (hex) of a code's secret: all the service keeps of it, and what its signed answer is bound to. */
export const secretDigest = (secret: string) => createHash('sha256').update(secret, 'utf8').digest('hex');

/** The code as an installer types it: `da1.<secret>.<fingerprint>` (api/fleet.ts, ENROL_CODE). */
export const enrolCode = (secret: string, fingerprint: string) => `da1.${secret}.${fingerprint}`;

/** Why a secret was not taken: unknown to this service, used, or expired (with when). */
export type CodeRefusal = { reason: 'unknown' } | { reason: 'used' | 'expired'; at: number };

/**
 * The enrolment codes (docs/fleet.md, "Enrolment"): single use, each good for a number of hours. Only the SHA-256
 * of a code's secret is stored.
 */
export class EnrolCodes {
  constructor(private readonly db: SqlDb) {}

  /** A new code's secret (20 random bytes, base32), stored as its digest; good until now + hours. */
  async create(now: number, hours: number, createdBy: string): Promise<{ secret: string; expiresAt: number }> {
    const secret = base32(randomBytes(20));
    const expiresAt = now + hours * 3_600_000;
    await this.db.run('INSERT INTO fleet_enrol_codes (secret_sha256, created_at, expires_at, created_by) VALUES (?, ?, ?, ?)', [
      secretDigest(secret),
      now,
      expiresAt,
      createdBy,
    ]);
    return { secret, expiresAt };
  }

  /**
   * Marks the code of `secret` used, in the caller's transaction (with what its use makes: one commits, or neither);
   * null when it was taken, else why not. Two uses racing: one wins (SQLite runs one transaction after the other;
   * PostgreSQL's serializable transaction makes the loser run again, and it finds the code used).
   */
  async use(secret: string, now: number): Promise<CodeRefusal | null> {
    const digest = secretDigest(secret);
    const row = await this.db.get<{ expires_at: number | string; used_at: number | string | null }>(
      'SELECT expires_at, used_at FROM fleet_enrol_codes WHERE secret_sha256 = ?',
      [digest],
    );
    if (!row) return { reason: 'unknown' };
    if (row.used_at !== null) return { reason: 'used', at: Number(row.used_at) };
    if (now >= Number(row.expires_at)) return { reason: 'expired', at: Number(row.expires_at) };
    const { changes } = await this.db.run('UPDATE fleet_enrol_codes SET used_at = ? WHERE secret_sha256 = ? AND used_at IS NULL', [now, digest]);
    return changes === 1 ? null : { reason: 'used', at: now };
  }
}
