import { cachePath, statePath } from '../store/database.js';
import { doorStateDir } from '../store/doorState.js';
import { LOCK_FILE, assertWritable } from '../system/dataDirLock.js';
import { join } from 'node:path';

/** What the daemon writes in its data directory besides the lock: both databases with their WAL files, the doors' state. */
export function daemonWrites(dataDir: string): string[] {
  const databases = [cachePath(dataDir), statePath(dataDir)];
  return [...databases, ...databases.flatMap((f) => [`${f}-wal`, `${f}-shm`]), doorStateDir(dataDir)];
}

/**
 * Why `door-agent run` would refuse this data directory as not writable, in its own words (for `config check`);
 * null when it would not. Only looks: a directory that does not exist yet is made by `run` and is not checked here.
 * @internal
 */
export function dataDirWriteProblem(dataDir: string): string | null {
  try {
    assertWritable(dataDir, [join(dataDir, LOCK_FILE), ...daemonWrites(dataDir)], 78);
    return null;
  } catch (err) {
    const missing = typeof err === 'object' && err !== null && (err as { cause?: { code?: string } }).cause?.code === 'ENOENT';
    return missing ? null : err instanceof Error ? err.message : String(err);
  }
}
