import type { DirectoryVersion } from '../protocol/directory.js';
import type { Db } from './database.js';
import { readMeta, writeMeta } from './meta.js';

/**
 * The service's directory version the cache holds (GET /directory): a sync asks for the changes since it, naming
 * its history and tag, so a service whose history went back (restored from a backup) answers in full. Anything
 * else that replaces the cache's users (an import) forgets it, so the next sync is a full one: a delta on top of
 * data that did not come from that revision would keep whatever the import brought back (a removed user).
 */
const REVISION_KEY = 'directory_revision';
/** The history id and revision tag, beside the revision (kept apart: a cache from before histories has none). */
const HISTORY_KEY = 'directory_history';

export function readHeldRevision(db: Db): number | null {
  return readMeta<number>(db, REVISION_KEY) ?? null;
}

export function readHeldVersion(db: Db): DirectoryVersion | null {
  const revision = readHeldRevision(db);
  if (revision === null) return null;
  const identity = readMeta<{ history: string | null; tag: string | null }>(db, HISTORY_KEY);
  return { revision, history: identity?.history ?? null, tag: identity?.tag ?? null };
}

/** Rows that already say so are not rewritten (gentle on the SD card). */
export function writeHeldRevision(db: Db, version: DirectoryVersion): void {
  const held = readHeldVersion(db);
  if (held?.revision !== version.revision) writeMeta(db, REVISION_KEY, version.revision);
  if (held?.history !== version.history || held?.tag !== version.tag) writeMeta(db, HISTORY_KEY, { history: version.history, tag: version.tag });
}

export function forgetHeldRevision(db: Db): void {
  db.prepare('DELETE FROM meta WHERE key IN (?, ?)').run(REVISION_KEY, HISTORY_KEY);
}
