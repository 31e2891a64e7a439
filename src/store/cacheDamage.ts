import { existsSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { DoorAgentError, errorCode } from '../util/errors.js';
import { fsyncDirectory } from '../util/fsyncDirectory.js';

/**
 * A damaged cache (a page overwritten, as a failing SD card does): how it is recognized, checked for and kept
 * aside. The cache is a copy of the service's data, so a damaged one is rebuilt, never repaired in place, and the
 * damaged file is renamed, never deleted.
 */

/** What the operator does when the daemon cannot rebuild the cache itself (no `service` section). */
export const REBUILD_BY_HAND =
  'stop door-agent, move cache.db (and its -wal and -shm files) out of agent.dataDir, then run door-agent sync (or door-agent import FILE) and start door-agent again';

/** Whether `err` (or an error it was caused by) says the file is damaged: SQLITE_CORRUPT (any variant) or SQLITE_NOTADB. */
export function isCacheDamage(err: unknown): boolean {
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof CacheDamagedError) return true;
    const code = errorCode(e);
    if (code !== undefined && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB')) return true;
  }
  return false;
}

/**
 * The daemon holds no usable cache: it was found damaged (`reason`). Every credential is refused with
 * `cache_damaged` until the cache is rebuilt.
 */
export class CacheDamagedError extends DoorAgentError {
  constructor(readonly reason: string) {
    super(`the cache is damaged (${reason}): every credential is refused and the door stays locked until the cache is rebuilt`);
    this.name = 'CacheDamagedError';
  }
}

/** What a damage error says was wrong: a CacheDamagedError's reason, else the error's own message. */
export function damageReason(err: unknown): string {
  return err instanceof CacheDamagedError ? err.reason : err instanceof Error ? err.message : String(err);
}

/**
 * SQLite's quick_check of `file` on a connection of its own (so that no page cache hides what is on the disk now):
 * null when the file is sound, else what is wrong. Reads every page once; other failures (no file, no permission)
 * are thrown.
 */
export function quickCheck(file: string): string | null {
  let db: Database.Database | null = null;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const problems = (db.pragma('quick_check') as Array<{ quick_check: string }>).map((row) => row.quick_check).filter((text) => text !== 'ok');
    return problems.length === 0 ? null : `database disk image is malformed: ${problems[0]}`;
  } catch (err) {
    if (isCacheDamage(err)) return err instanceof Error ? err.message : String(err);
    throw err;
  } finally {
    db?.close();
  }
}

/**
 * Renames a damaged database aside, `<file>.damaged-<time>`, its -wal and -shm beside it under the same name (so
 * that SQLite still reads the set as one); never deletes anything. The -wal goes first: a crash in between leaves
 * the damaged file where it was (found again at the next start), never a log beside a file it does not belong to.
 * Returns the new name of the file.
 */
export function keepAside(file: string, at: number): string {
  const stamp = new Date(at).toISOString().replace(/[:.]/g, '-');
  let aside = `${file}.damaged-${stamp}`;
  for (let n = 1; [aside, `${aside}-wal`, `${aside}-shm`].some(existsSync); n++) aside = `${file}.damaged-${stamp}-${n}`;
  for (const suffix of ['-wal', '-shm']) if (existsSync(file + suffix)) renameSync(file + suffix, aside + suffix);
  if (existsSync(file)) renameSync(file, aside);
  fsyncDirectory(dirname(file));
  return aside;
}

/**
 * Puts `from` (a complete database whose connections are closed) in place of `to`. Its log is folded in first, so
 * a single file moves: no log can be left beside a file it does not belong to.
 */
export function moveInto(from: string, to: string): void {
  const db = new Database(from, { fileMustExist: true });
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
  if (existsSync(`${from}-wal`)) throw new DoorAgentError(`${from}-wal is still there after its checkpoint: the rebuilt cache was not moved in`);
  renameSync(from, to);
  fsyncDirectory(dirname(to));
}
