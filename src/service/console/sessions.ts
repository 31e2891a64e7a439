import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../../util/clock.js';
import type { Rank } from '../apiKeys.js';
import type { SessionHolder } from './sessionHolder.js';

/** How a session was opened, as the page names who is signed in. */
export interface Session {
  rank: Rank;
  /** "API key" or the user's e-mail (the page adds the rank). */
  who: string;
  csrf: string;
  createdAt: number;
  lastSeenAt: number;
  /** Whose rank the session uses, checked again at each use; absent: the rank given at open. */
  holder?: SessionHolder;
}

export interface SessionLimits {
  idleMs: number;
  maxMs: number;
}

const digest = (id: string) => createHash('sha256').update(id).digest('hex');

/**
 * Console sessions, in memory: the cookie carries a random 32-byte id, only its SHA-256 is kept (a heap dump
 * gives no usable cookie). A session ends when idle for `idleMs`, `maxMs` after it opened, or at logout; a
 * restart of the service signs everyone out. With `rankOf`, each use asks its holder's rank now: a holder who may
 * no longer sign in (suspended, demoted, a key expired) ends it, and a changed rank is the session's from then on.
 */
export class SessionStore {
  private readonly byHash = new Map<string, Session>();

  constructor(
    private readonly clock: Clock,
    private readonly limits: SessionLimits,
    private readonly rankOf?: (holder: SessionHolder) => Rank | null,
  ) {}

  open(rank: Rank, who: string, holder?: SessionHolder): { id: string; session: Session } {
    this.sweep();
    const id = randomBytes(32).toString('base64url');
    const now = this.clock.wallNow();
    const session: Session = { rank, who, csrf: randomBytes(24).toString('base64url'), createdAt: now, lastSeenAt: now };
    if (holder) session.holder = holder;
    this.byHash.set(digest(id), session);
    return { id, session };
  }

  /**
   * The live session of a cookie value, or why there is none (`ended`: its holder may no longer sign in). A request
   * restarts its idle time (`touch`); the live stream's own checks do not, so a page left open still idles out.
   */
  use(id: string | undefined, touch = true): { session: Session } | { problem: 'none' | 'expired' | 'ended' } {
    if (id === undefined || id === '') return { problem: 'none' };
    const key = digest(id);
    const session = this.byHash.get(key);
    if (!session) return { problem: 'expired' };
    const now = this.clock.wallNow();
    if (now - session.lastSeenAt > this.limits.idleMs || now - session.createdAt > this.limits.maxMs) {
      this.byHash.delete(key);
      return { problem: 'expired' };
    }
    if (session.holder && this.rankOf) {
      const rank = this.rankOf(session.holder);
      if (rank === null) {
        this.byHash.delete(key);
        return { problem: 'ended' };
      }
      session.rank = rank;
    }
    if (touch) session.lastSeenAt = now;
    return { session };
  }

  close(id: string | undefined): void {
    if (id) this.byHash.delete(digest(id));
  }

  private sweep(): void {
    const now = this.clock.wallNow();
    for (const [key, s] of this.byHash) {
      if (now - s.lastSeenAt > this.limits.idleMs || now - s.createdAt > this.limits.maxMs) this.byHash.delete(key);
    }
  }
}
