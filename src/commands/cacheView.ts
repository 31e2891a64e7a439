import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quickCheck } from '../store/cacheDamage.js';
import { openDatabase, type Db } from '../store/database.js';
import { count } from '../util/plural.js';

/**
 * The cache as `status` reads it. Without one (never synced or imported, the daemon never run) status still reports
 * the doors and the daemon: it reads an empty cache made in a temporary directory, and says the cache is missing.
 * A damaged one (store/cacheDamage.ts: every page checked) is read the same way, and `damaged` says what is wrong.
 */
export function openCacheView(file: string): { db: Db; missing: boolean; damaged: string | null; close(): void } {
  const damaged = existsSync(file) ? quickCheck(file) : null;
  if (existsSync(file) && damaged === null) {
    const db = openDatabase(file, { readonly: true });
    return { db, missing: false, damaged, close: () => db.close() };
  }
  const dir = mkdtempSync(join(tmpdir(), 'door-agent-status-'));
  try {
    const db = openDatabase(join(dir, 'cache.db'));
    return {
      db,
      missing: damaged === null,
      damaged,
      close: () => {
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** What a missing cache means for the door, and what to do. */
export function missingCacheWarning(file: string): string {
  return `WARNING: no cache at ${file}: every card, PIN and guest link is refused until door-agent sync (or import) provisions it`;
}

/** The `cache:` line of status: the counts and where the directory last came from (an import or a sync). */
export function cacheLine(
  counts: { users: number; credentials: number; guestLinks: number },
  lastImport: { at: string; file: string } | null,
  lastSyncAt: string | null,
): string {
  const origins = [
    ...(lastImport ? [{ at: lastImport.at, text: `last import ${lastImport.at} from ${lastImport.file}` }] : []),
    ...(lastSyncAt ? [{ at: lastSyncAt, text: `last sync ${lastSyncAt}` }] : []),
  ].sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
  return (
    `cache: ${count(counts.users, 'user')}, ${count(counts.credentials, 'credential')}, ${count(counts.guestLinks, 'guest link')}` +
    (origins.length > 0 ? `; ${origins.map((o) => o.text).join(', ')}` : '; never imported or synced')
  );
}
