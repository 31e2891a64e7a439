import type { DirectoryVersion } from '../protocol/directory.js';
import type { Db } from './database.js';
import { readMeta, writeMeta } from './meta.js';
import { statement } from '../util/preparedStatements.js';

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
  // One statement for both keys: the daemon asks at every revision message.
  const rows = statement(db, 'SELECT key, value FROM meta WHERE key IN (?, ?)').all(REVISION_KEY, HISTORY_KEY) as { key: string; value: string }[];
  const revisionRow = rows.find((row) => row.key === REVISION_KEY);
  if (revisionRow === undefined) return null;
  const revision = JSON.parse(revisionRow.value) as number | null;
  if (revision === null) return null;
  const historyRow = rows.find((row) => row.key === HISTORY_KEY);
  const identity = historyRow === undefined ? undefined : (JSON.parse(historyRow.value) as { history: string | null; tag: string | null } | null);
  return { revision, history: identity?.history ?? null, tag: identity?.tag ?? null };
}

/** Rows that already say so are not rewritten (gentle on the SD card). */
export function writeHeldRevision(db: Db, version: DirectoryVersion): void {
  const held = readHeldVersion(db);
  if (held?.revision !== version.revision) writeMeta(db, REVISION_KEY, version.revision);
  if (held?.history !== version.history || held?.tag !== version.tag) writeMeta(db, HISTORY_KEY, { history: version.history, tag: version.tag });
}

export function forgetHeldRevision(db: Db): void {
  statement(db, 'DELETE FROM meta WHERE key IN (?, ?)').run(REVISION_KEY, HISTORY_KEY);
}
