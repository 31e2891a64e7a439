import { existsSync } from 'node:fs';
import { CacheDamagedError, isCacheDamage, keepAside, moveInto, quickCheck } from './cacheDamage.js';
import { CredentialCache } from './credentialCache.js';
import { openDatabase, type Db } from './database.js';

/** The cache found damaged: since when (wall ms) and what SQLite said. */
export interface CacheDamage {
  since: number;
  error: string;
}

/** What changed: the cache was found damaged (at start or while running), or a rebuilt one took its place. */
export type CacheChange = { kind: 'damaged'; damage: CacheDamage; atStart: boolean } | { kind: 'replaced'; damage: CacheDamage; keptAs: string };

/**
 * The daemon's connection to the cache (cache.db), or the damage that stands in for it. A damaged file is never
 * written again nor deleted: the connection is closed, every read refuses with CacheDamagedError, and the file
 * stays where it is until a rebuilt cache replaces it (`replace`: the damaged file is kept aside, renamed).
 * Damage is looked for when the cache is opened (SQLite's quick_check, every page once) and recognized in the
 * error of any read afterwards (`failed`).
 */
export class CacheConnection {
  private db_: Db | null = null;
  private credentials_: CredentialCache | null = null;
  private damage_: CacheDamage | null = null;
  private readonly listeners: Array<(change: CacheChange) => void> = [];

  constructor(
    private readonly file: string,
    private readonly options: { busyTimeoutMs: number; wallNow: () => number },
  ) {}

  /**
   * Opens the cache (created when there is none). A damaged file is not opened: the damage is kept and told to
   * the listeners once the caller calls `announce` (the audit log may not be open yet). Other failures throw.
   */
  open(): void {
    const error = existsSync(this.file) ? quickCheck(this.file) : null;
    if (error !== null) {
      this.damage_ = { since: this.options.wallNow(), error };
      return;
    }
    try {
      this.db_ = openDatabase(this.file, { busyTimeoutMs: this.options.busyTimeoutMs });
    } catch (err) {
      if (!isCacheDamage(err)) throw err;
      this.damage_ = { since: this.options.wallNow(), error: messageOf(err) };
    }
  }

  /** Tells the listeners of damage found by `open`. */
  announce(): void {
    if (this.damage_) this.tell({ kind: 'damaged', damage: this.damage_, atStart: true });
  }

  close(): void {
    this.db_?.close();
    this.db_ = null;
    this.credentials_ = null;
  }

  /** `listener` hears of each change (damage found, a rebuilt cache in place). */
  onChange(listener: (change: CacheChange) => void): void {
    this.listeners.push(listener);
  }

  /** The damage found, null while the cache is sound. */
  get damage(): CacheDamage | null {
    return this.damage_;
  }

  /** The connection; throws CacheDamagedError while the cache is damaged. */
  get db(): Db {
    if (this.damage_) throw new CacheDamagedError(this.damage_.error);
    if (!this.db_) throw new Error('the store is not started');
    return this.db_;
  }

  /** The read side of the decisions, one per connection (its statements prepared once). */
  credentials(): CredentialCache {
    const db = this.db;
    if (this.credentials_?.db !== db) this.credentials_ = new CredentialCache(db);
    return this.credentials_;
  }

  /**
   * A read or write of the cache failed with `err`. Damage (SQLITE_CORRUPT, SQLITE_NOTADB) closes the connection
   * and is told to the listeners, once; returns whether `err` was damage (another error is the caller's).
   */
  failed(err: unknown): boolean {
    if (!isCacheDamage(err)) return false;
    if (this.damage_) return true;
    this.damage_ = { since: this.options.wallNow(), error: err instanceof CacheDamagedError ? err.reason : messageOf(err) };
    this.close();
    this.tell({ kind: 'damaged', damage: this.damage_, atStart: false });
    return true;
  }

  /**
   * A rebuilt cache (`rebuilt`, complete, its connections closed) takes the damaged one's place: the damaged file
   * and its -wal and -shm are renamed aside (returned), the rebuilt file moved in and opened, and the decisions resume.
   */
  replace(rebuilt: string): string {
    const damage = this.damage_;
    if (!damage) throw new Error('the cache is not damaged: nothing to replace');
    this.close();
    const keptAs = keepAside(this.file, this.options.wallNow());
    moveInto(rebuilt, this.file);
    this.db_ = openDatabase(this.file, { busyTimeoutMs: this.options.busyTimeoutMs });
    this.damage_ = null;
    this.tell({ kind: 'replaced', damage, keptAs });
    return keptAs;
  }

  private tell(change: CacheChange): void {
    for (const listener of this.listeners) listener(change);
  }
}

function messageOf(err: unknown): string {
  // The damage itself, not the advice an error of openDatabase wraps it in.
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e.cause === undefined || !(e.cause instanceof Error)) return e.message;
  }
  return err instanceof Error ? err.message : String(err);
}
