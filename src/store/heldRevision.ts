import type { Db } from './database.js';
import { readMeta, writeMeta } from './meta.js';

/**
 * The service's directory revision the cache holds (GET /directory): a sync asks for the changes since it. Anything
 * else that replaces the cache's users (an import) forgets it, so the next sync is a full one: a delta on top of
 * data that did not come from that revision would keep whatever the import brought back (a removed user).
 */
const REVISION_KEY = 'directory_revision';

export function readHeldRevision(db: Db): number | null {
  return readMeta<number>(db, REVISION_KEY) ?? null;
}

export function writeHeldRevision(db: Db, revision: number): void {
  writeMeta(db, REVISION_KEY, revision);
}

export function forgetHeldRevision(db: Db): void {
  db.prepare('DELETE FROM meta WHERE key = ?').run(REVISION_KEY);
}
