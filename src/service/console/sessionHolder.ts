import type { ApiKeys, Rank } from '../apiKeys.js';
import type { UserStore } from '../users.js';

/**
 * Who a console session stands for: the user a mailed link signed in, or the API key given (its SHA-256 only).
 * The session's rank is theirs now, checked at each request, not the one they had at sign-in.
 */
export type SessionHolder = { kind: 'user'; emailId: number } | { kind: 'key'; keyDigest: string };

/** A holder as console_sessions stores it: its kind, and the user's email_id as text or the key's SHA-256. */
export function holderColumns(holder: SessionHolder | undefined): [kind: string | null, id: string | null] {
  if (holder === undefined) return [null, null];
  return holder.kind === 'user' ? ['user', String(holder.emailId)] : ['key', holder.keyDigest];
}

/** The holder of a console_sessions row; undefined for a session that keeps the rank given at open. */
export function holderOfColumns(kind: string | null, id: string | null): SessionHolder | undefined {
  if (id === null) return undefined;
  if (kind === 'user') return { kind: 'user', emailId: Number(id) };
  if (kind === 'key') return { kind: 'key', keyDigest: id };
  return undefined;
}

/**
 * The rank a holder may use the console with now, or null when they may no longer sign in: a user removed,
 * suspended or of rank REGULAR (the mailed sign-in is for ADMIN and SUPER), a key expired or gone. A session whose
 * holder is refused ends (sessions.ts); a rank changed between ADMIN and SUPER is followed.
 */
export async function holderRank(holder: SessionHolder, deps: { users: UserStore; keys: ApiKeys; now: number }): Promise<Rank | null> {
  if (holder.kind === 'user') {
    const user = await deps.users.get(holder.emailId);
    return user && user.suspended === 0 && user.rank !== 'REGULAR' ? user.rank : null;
  }
  const kind = await deps.keys.verifyDigest(holder.keyDigest, deps.now);
  return kind === null || kind === 'DOOR' ? null : kind;
}
