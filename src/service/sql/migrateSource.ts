import { createHash } from 'node:crypto';
import { chownSync, existsSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { DoorAgentError, EXIT_INVALID_CONFIG, describeFsError, errorCode } from '../../util/errors.js';
import { SERVICE_MIGRATIONS } from '../migrations.js';
import type { SqlValue } from './sqlDb.js';

/** A table of the source as it is copied: its name and its columns, in the order SQLite lists them. */
export interface SourceTable {
  name: string;
  columns: string[];
}

/** What the doors hold of the directory: the revision, the history it belongs to, and the revisions' tags. */
export interface DirectoryState {
  revision: number;
  at: string | null;
  history: string;
  renewedAt: string;
  reason: string;
  /** A restore awaiting acceptance since then (schema 15), null for none. */
  restorePendingSince: string | null;
  /** The current revision's tag (null before the first revision). */
  tag: string | null;
  tags: number;
  /** MD5 of every `revision:tag`, by revision, joined with commas (null when there is none): as tagsDigestSql computes it. */
  tagsDigest: string | null;
}

/** tagsDigest computed by PostgreSQL, for the copy. */
export const TAGS_DIGEST_SQL = "SELECT md5(string_agg(revision::text || ':' || tag, ',' ORDER BY revision)) AS digest FROM directory_tags";

/** Tables the PostgreSQL triggers write into while the others are copied: emptied, then copied last. */
export const TRIGGER_FED = ['directory_pending'];

const refusal = (message: string, cause?: unknown) =>
  new DoorAgentError(message, cause === undefined ? { exitCode: EXIT_INVALID_CONFIG } : { exitCode: EXIT_INVALID_CONFIG, cause });

/** What SQLite keeps beside a database in WAL mode. */
const SIDE_FILES = ['-wal', '-shm'];

/** The size of a file; 0 when there is none. */
function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * The service's SQLite database (server.dataDir/service.db) as `door-agent service migrate` reads it: opened
 * read-only (never written, never migrated), at this door-agent's schema version, read in one read transaction
 * so every table is taken at the same moment.
 */
export class MigrationSource {
  private constructor(
    private readonly db: Database.Database,
    readonly file: string,
    /** The WAL files this read creates (SQLite makes them even read-only): handed to the file's owner after. */
    private readonly sideFiles: string[],
  ) {}

  /** Refuses (exit 78) a file that is missing, not a SQLite database, or of another schema version. */
  static open(file: string): MigrationSource {
    if (!existsSync(file)) throw refusal(`there is no service database at ${file}: check server.dataDir in the configuration (--config)`);
    const wal = fileSize(`${file}-wal`);
    if (wal > 0) {
      // A stopped service leaves no write-ahead log: what is written after the copy would be left behind.
      throw refusal(
        `${file}-wal holds ${wal} bytes: the service is running on ${file}, or it did not stop cleanly. ` +
          'Stop it (one that was killed: start it once and stop it), then migrate',
      );
    }
    const sideFiles = SIDE_FILES.map((suffix) => `${file}${suffix}`).filter((f) => !existsSync(f));
    let db: Database.Database;
    try {
      db = new Database(file, { readonly: true, fileMustExist: true });
    } catch (err) {
      throw refusal(`cannot open the service database ${file}: ${describeFsError(err)} (check server.dataDir)`, err);
    }
    try {
      const version = db.pragma('user_version', { simple: true }) as number;
      const current = SERVICE_MIGRATIONS.length;
      if (version < current) {
        throw refusal(
          `the service database ${file} has schema version ${version}, older than this door-agent's (${current}): ` +
            'start the service once on it to upgrade it, stop it, then migrate',
        );
      }
      if (version > current) {
        throw refusal(`the service database ${file} has schema version ${version}, newer than this door-agent knows (${current}): upgrade door-agent`);
      }
      // One snapshot of every table (the read transaction begins at the first read).
      db.exec('BEGIN');
    } catch (err) {
      db.close();
      if (err instanceof DoorAgentError) throw err;
      const code = errorCode(err);
      const what = code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT' ? 'is not a readable SQLite database' : 'cannot be read';
      throw refusal(`the service database ${file} ${what}: ${(err as Error).message}`, err);
    }
    return new MigrationSource(db, file, sideFiles);
  }

  /**
   * Every table but SQLite's own (sqlite_*), a table before those whose foreign keys point at it (so the copy
   * needs no deferred constraints), TRIGGER_FED last.
   */
  tables(): SourceTable[] {
    const names = this.db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
      .pluck()
      .all() as string[];
    const parents = new Map(
      names.map((name) => [
        name,
        (this.db.prepare('SELECT "table" FROM pragma_foreign_key_list(?)').pluck().all(name) as string[]).filter((p) => p !== name && names.includes(p)),
      ]),
    );
    const ordered: string[] = [];
    const visit = (name: string, path: Set<string>) => {
      if (ordered.includes(name) || path.has(name)) return;
      path.add(name);
      for (const parent of parents.get(name) ?? []) visit(parent, path);
      ordered.push(name);
    };
    for (const name of names) if (!TRIGGER_FED.includes(name)) visit(name, new Set());
    for (const name of names) if (TRIGGER_FED.includes(name)) ordered.push(name);
    return ordered.map((name) => ({
      name,
      columns: this.db.prepare('SELECT name FROM pragma_table_info(?) ORDER BY cid').pluck().all(name) as string[],
    }));
  }

  /** The table's rows, each as its columns' values: integers as bigint (exact past 2^53), text as it is. */
  rows(table: SourceTable): IterableIterator<SqlValue[]> {
    const columns = table.columns.map(quote).join(', ');
    return this.db
      .prepare(`SELECT ${columns} FROM ${quote(table.name)}`)
      .raw(true)
      .safeIntegers(true)
      .iterate() as IterableIterator<SqlValue[]>;
  }

  count(table: string): number {
    return this.db
      .prepare(`SELECT count(*) FROM ${quote(table)}`)
      .pluck()
      .get() as number;
  }

  directory(): DirectoryState {
    const revision = this.db.prepare('SELECT revision, at FROM directory_revision WHERE id = 1').get() as { revision: number; at: string } | undefined;
    const history = this.db.prepare('SELECT history, renewed_at, reason, restore_pending_since FROM directory_history WHERE id = 1').get() as
      | { history: string; renewed_at: string; reason: string; restore_pending_since: string | null }
      | undefined;
    if (history === undefined) throw refusal(`the service database ${this.file} has no directory history (a damaged file: restore it from a backup)`);
    const current = revision?.revision ?? 0;
    const digest = createHash('md5');
    let tags = 0;
    for (const [rev, tag] of this.db.prepare('SELECT revision, tag FROM directory_tags ORDER BY revision').raw(true).iterate() as IterableIterator<
      [number, string]
    >) {
      digest.update(`${tags === 0 ? '' : ','}${rev}:${tag}`);
      tags++;
    }
    return {
      revision: current,
      at: revision?.at ?? null,
      history: history.history,
      renewedAt: history.renewed_at,
      reason: history.reason,
      restorePendingSince: history.restore_pending_since,
      tag: (this.db.prepare('SELECT tag FROM directory_tags WHERE revision = ?').pluck().get(current) as string | undefined) ?? null,
      tags,
      tagsDigest: tags === 0 ? null : digest.digest('hex'),
    };
  }

  close(): void {
    if (this.db.inTransaction) this.db.exec('COMMIT');
    this.db.close();
    // Run as root, the files SQLite made would be root's: a service started on SQLite again could not open them.
    if (process.getuid?.() !== 0) return;
    const { uid, gid } = statSync(this.file);
    for (const side of this.sideFiles) {
      try {
        chownSync(side, uid, gid);
      } catch {
        // not made
      }
    }
  }
}
