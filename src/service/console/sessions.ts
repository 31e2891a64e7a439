import { createHash, randomBytes } from 'node:crypto';
import * as z from 'zod';
import type { Clock } from '../../util/clock.js';
import type { Rank } from '../apiKeys.js';
import type { SqlDb } from '../sql/sqlDb.js';
import type { Flash } from './layout.js';
import { holderColumns, holderOfColumns, type SessionHolder } from './sessionHolder.js';

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
  /** The message for the session's next page (set by an action before its redirect; kept by keepFlash). */
  flash?: Flash;
}

export interface SessionLimits {
  idleMs: number;
  maxMs: number;
}

interface SessionRow {
  rank: Rank;
  who: string;
  csrf: string;
  created_at: number;
  last_seen_at: number;
  holder_kind: string | null;
  holder_id: string | null;
  flash: string | null;
}

const digest = (id: string) => createHash('sha256').update(id).digest('hex');
const storedFlash = z.object({ kind: z.enum(['ok', 'error']), text: z.string() });

function flashOf(text: string | null): Flash | undefined {
  if (text === null) return undefined;
  try {
    const parsed = storedFlash.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Console sessions, in the service's database (console_sessions), so that any of several service processes answers
 * any request: the cookie carries a random 32-byte id, only its SHA-256 is stored (a copy of the database gives no
 * usable cookie). A session ends when idle for `idleMs`, `maxMs` after it opened, or at logout; a restart of the
 * service keeps it. With `rankOf`, each use asks its holder's rank now: a holder who may no longer sign in
 * (suspended, demoted, a key expired) ends it, and a changed rank is the session's from then on.
 */
export class SessionStore {
  /** Each session given out by `use`: its row's key, and its flash as stored (keepFlash writes a change). */
  private readonly loaded = new WeakMap<Session, { hash: string; flash: string | null }>();
  /**
   * How far a use must be from the stored last use before it is written: a write per request would cost every
   * console request a write to the shared database. So the idle time is counted from a last use up to this much
   * earlier than the real one: 30 s, or a tenth of the idle time when that is shorter.
   */
  private readonly touchStepMs: number;

  constructor(
    private readonly db: SqlDb,
    private readonly clock: Clock,
    private readonly limits: SessionLimits,
    private readonly rankOf?: (holder: SessionHolder) => Promise<Rank | null>,
  ) {
    this.touchStepMs = Math.min(30_000, limits.idleMs / 10);
  }

  async open(rank: Rank, who: string, holder?: SessionHolder): Promise<{ id: string; session: Session }> {
    const now = this.clock.wallNow();
    // The sessions that ended idle or old are dropped as each one opens: the table holds the live ones and the few
    // that ended since the last sign-in.
    await this.db.run('DELETE FROM console_sessions WHERE last_seen_at < ? OR created_at < ?', [now - this.limits.idleMs, now - this.limits.maxMs]);
    const id = randomBytes(32).toString('base64url');
    const session: Session = { rank, who, csrf: randomBytes(24).toString('base64url'), createdAt: now, lastSeenAt: now };
    if (holder) session.holder = holder;
    await this.db.run(
      'INSERT INTO console_sessions (id_hash, rank, who, csrf, created_at, last_seen_at, holder_kind, holder_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [digest(id), rank, who, session.csrf, now, now, ...holderColumns(holder)],
    );
    return { id, session };
  }

  /**
   * The live session of a cookie value, or why there is none (`ended`: its holder may no longer sign in). A request
   * restarts its idle time (`touch`); the live stream's own checks do not, so a page left open still idles out.
   * Asks the holder's rank of the database; a session closed meanwhile (logout) is not given back when this use
   * writes to it (a new rank, a new last use).
   */
  async use(id: string | undefined, touch = true): Promise<{ session: Session } | { problem: 'none' | 'expired' | 'ended' }> {
    if (id === undefined || id === '') return { problem: 'none' };
    const hash = digest(id);
    const row = await this.db.get<SessionRow>(
      'SELECT rank, who, csrf, created_at, last_seen_at, holder_kind, holder_id, flash FROM console_sessions WHERE id_hash = ?',
      [hash],
    );
    if (!row) return { problem: 'expired' };
    const now = this.clock.wallNow();
    if (now - row.last_seen_at > this.limits.idleMs || now - row.created_at > this.limits.maxMs) {
      await this.close(id);
      return { problem: 'expired' };
    }
    const session: Session = { rank: row.rank, who: row.who, csrf: row.csrf, createdAt: row.created_at, lastSeenAt: row.last_seen_at };
    const holder = holderOfColumns(row.holder_kind, row.holder_id);
    if (holder) session.holder = holder;
    const flash = flashOf(row.flash);
    if (flash) session.flash = flash;
    if (holder && this.rankOf) {
      const rank = await this.rankOf(holder);
      if (rank === null) {
        await this.close(id);
        return { problem: 'ended' };
      }
      session.rank = rank;
    }
    const touched = touch && now - row.last_seen_at >= this.touchStepMs;
    if (touched || session.rank !== row.rank) {
      // The later of two uses stays (two requests of one session at once, on two processes).
      const { changes } = await this.db.run(
        'UPDATE console_sessions SET rank = ?, last_seen_at = CASE WHEN last_seen_at < ? THEN ? ELSE last_seen_at END WHERE id_hash = ?',
        [session.rank, touched ? now : 0, now, hash],
      );
      if (changes === 0) return { problem: 'expired' };
      if (touched) session.lastSeenAt = now;
    }
    this.loaded.set(session, { hash, flash: row.flash });
    return { session };
  }

  /**
   * Stores a change of the session's message, set or taken by the request that used it: the next page may be
   * served by another process. A message taken is cleared only if it is still the one read (not one set since).
   */
  async keepFlash(session: Session): Promise<void> {
    const loaded = this.loaded.get(session);
    if (!loaded) return;
    const text = session.flash ? JSON.stringify(session.flash) : null;
    if (text === loaded.flash) return;
    if (text === null) await this.db.run('UPDATE console_sessions SET flash = NULL WHERE id_hash = ? AND flash = ?', [loaded.hash, loaded.flash]);
    else await this.db.run('UPDATE console_sessions SET flash = ? WHERE id_hash = ?', [text, loaded.hash]);
    loaded.flash = text;
  }

  async close(id: string | undefined): Promise<void> {
    if (id) await this.db.run('DELETE FROM console_sessions WHERE id_hash = ?', [digest(id)]);
  }
}
