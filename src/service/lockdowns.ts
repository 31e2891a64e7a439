import { scopeName, type LockdownMessage, type LockdownScope } from '../protocol/lockdown.js';
import type { SqlDb } from './sql/sqlDb.js';

/*
 * Lockdowns as the service stores them (table lockdowns) and the issued_at of its other retained messages: what
 * POST /lockdown (routesLockdown.ts) writes and the publisher (statePublisher.ts) sends.
 */

/** A lockdown as the service stores it (table lockdowns): the last start or end asked for, per scope. */
export interface StoredLockdown {
  scope: LockdownScope;
  active: boolean;
  by: string;
  reason: string | null;
  /** ms: when it started or ended (a repeated start or end keeps it). */
  changedAt: number;
  /** unix seconds: issued_at of the last message published about this scope. */
  issuedAt: number;
}

interface Row {
  scope: string;
  active: number;
  by: string;
  reason: string | null;
  changed_at: number;
  issued_at: number;
}

/**
 * issued_at (unix seconds) for the next message about a subject: strictly after the last one, even within the
 * same second or after the clock stepped back, so the doors take it as newer and refuse a replay of the one before.
 */
function nextIssuedAt(nowMs: number, last: number | undefined): number {
  return Math.max(Math.floor(nowMs / 1000), (last ?? 0) + 1);
}

/**
 * Issues (and persists) the next issued_at for a retained message that has no table of its own ('holidays'):
 * kept in the database so a restarted service never goes back to an older one. Read and written in one
 * transaction: two processes issuing at once never issue the same one.
 */
export function issueRetained(db: SqlDb, subject: string, nowMs: number): Promise<number> {
  return db.transaction(async () => {
    const last = await db.value<number>('SELECT issued_at FROM retained_issued_at WHERE subject = ?', [subject]);
    const at = nextIssuedAt(nowMs, last);
    await db.run('INSERT INTO retained_issued_at (subject, issued_at) VALUES (?, ?) ON CONFLICT (subject) DO UPDATE SET issued_at = excluded.issued_at', [
      subject,
      at,
    ]);
    return at;
  });
}

/** The scope a scope name (protocol/lockdown.ts scopeName: 'door:<uuid>', 'agent:<id>') names. */
export function scopeOf(name: string): LockdownScope {
  const separator = name.indexOf(':');
  const kind = name.slice(0, separator);
  const id = name.slice(separator + 1);
  return kind === 'door' ? { kind: 'door', uuid: id } : { kind: 'agent', id };
}

function fromRow(row: Row): StoredLockdown {
  return { scope: scopeOf(row.scope), active: row.active === 1, by: row.by, reason: row.reason, changedAt: row.changed_at, issuedAt: row.issued_at };
}

/** The message published retained for a stored lockdown (protocol/lockdown.ts). */
export function lockdownMessage(lockdown: StoredLockdown): LockdownMessage {
  return { lockdown: lockdown.active, by: lockdown.by, ...(lockdown.reason !== null ? { reason: lockdown.reason } : {}) };
}

/** Text in code-unit order, as SQLite's BINARY collation sorts it (PostgreSQL's collation may sort otherwise). */
const byScope = (a: Row, b: Row) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0);

/** The lockdowns table: each change and each publication gets its issued_at here, in the same transaction. */
export class LockdownStore {
  constructor(private readonly db: SqlDb) {}

  /** Every stored lockdown, by scope name (sorted here, so both engines give the same order). */
  async all(): Promise<StoredLockdown[]> {
    return (await this.db.all<Row>('SELECT scope, active, "by" AS by, reason, changed_at, issued_at FROM lockdowns')).sort(byScope).map(fromRow);
  }

  async get(scope: LockdownScope): Promise<StoredLockdown | undefined> {
    const row = await this.db.get<Row>('SELECT scope, active, "by" AS by, reason, changed_at, issued_at FROM lockdowns WHERE scope = ?', [scopeName(scope)]);
    return row ? fromRow(row) : undefined;
  }

  /**
   * Records a start or an end; returns the state before it and the stored one (with its message's issued_at).
   * Read and written in one transaction: issued_at stays strictly later than the last, whoever changes the scope.
   */
  set(
    scope: LockdownScope,
    change: { active: boolean; by: string; reason: string | null },
    nowMs: number,
  ): Promise<{ previous: StoredLockdown | undefined; stored: StoredLockdown }> {
    return this.db.transaction(async () => {
      const previous = await this.get(scope);
      const stored: StoredLockdown = {
        scope,
        ...change,
        changedAt: previous !== undefined && previous.active === change.active ? previous.changedAt : nowMs,
        issuedAt: nextIssuedAt(nowMs, previous?.issuedAt),
      };
      await this.db.run(
        `INSERT INTO lockdowns (scope, active, "by", reason, changed_at, issued_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (scope) DO UPDATE SET active = excluded.active, "by" = excluded."by", reason = excluded.reason,
           changed_at = excluded.changed_at, issued_at = excluded.issued_at`,
        [scopeName(scope), stored.active ? 1 : 0, stored.by, stored.reason, stored.changedAt, stored.issuedAt],
      );
      return { previous, stored };
    });
  }

  /** Every stored lockdown with a new issued_at each, persisted in one transaction: what a (re)connect publishes again. */
  reissueAll(nowMs: number): Promise<StoredLockdown[]> {
    return this.db.transaction(async () => {
      const reissued: StoredLockdown[] = [];
      for (const lockdown of await this.all()) {
        const issuedAt = nextIssuedAt(nowMs, lockdown.issuedAt);
        await this.db.run('UPDATE lockdowns SET issued_at = ? WHERE scope = ?', [issuedAt, scopeName(lockdown.scope)]);
        reissued.push({ ...lockdown, issuedAt });
      }
      return reissued;
    });
  }
}
