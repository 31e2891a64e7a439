import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import * as z from 'zod';
import { historySchema, tagSchema, type DirectoryVersion } from '../protocol/directory.js';
import type { SqlDb } from './sql/sqlDb.js';

/** Tags of this many past revisions are kept: an agent holding an older one is answered in full (safe). */
const TAGS_KEPT = 100_000;

const markSchema = z.object({ history: historySchema, revision: z.number().int().nonnegative(), tag: tagSchema.nullable() });
type Mark = z.output<typeof markSchema>;

/**
 * The high-water mark of a SQLite service database: `<name>-history.json` beside it (service.db ->
 * service-history.json), OUTSIDE the database so that a restored database does not bring back its own. null for an
 * in-memory database. (On PostgreSQL the mark is server.dataDir/service-history.json: root.ts.)
 */
export function markFileFor(file: string): string | null {
  if (file === '' || file === ':memory:') return null;
  return join(dirname(file), `${basename(file).replace(/\.db$/, '')}-history.json`);
}

/**
 * The identity of the directory's history (docs/reference-service.md "Backup and restore"): a random id kept in
 * the database, renewed when the history may have gone back, and a random tag per revision. Every revision issued
 * is also recorded in the mark file; a database that holds less than its mark (same id, lower revision, or another
 * id) was restored: the id is renewed at start.
 */
export class DirectoryHistory {
  constructor(
    private readonly db: SqlDb,
    private readonly markFile: string | null,
    private readonly logger?: Logger,
  ) {}

  async id(): Promise<string> {
    return (await this.db.value<string>('SELECT history FROM directory_history WHERE id = 1'))!;
  }

  /** A new tag for a revision being issued: inside the caller's transaction. */
  async issueTag(revision: number): Promise<void> {
    await this.db.run('INSERT INTO directory_tags (revision, tag) VALUES (?, ?) ON CONFLICT (revision) DO UPDATE SET tag = excluded.tag', [
      revision,
      randomBytes(8).toString('hex'),
    ]);
    await this.db.run('DELETE FROM directory_tags WHERE revision <= ?', [revision - TAGS_KEPT]);
  }

  /** A new history id: every agent holding the old one syncs in full. The mark is written once it is committed. */
  async renew(reason: string, now: number, current: { revision: number; tag: string | null }): Promise<string> {
    const history = randomBytes(16).toString('hex');
    await this.db.run('UPDATE directory_history SET history = ?, renewed_at = ?, reason = ? WHERE id = 1', [history, new Date(now).toISOString(), reason]);
    this.db.afterCommit(() => this.record({ revision: current.revision, history, tag: current.tag }));
    return history;
  }

  /** The revision just issued (or the history just renewed), written to the mark file atomically. */
  record(version: DirectoryVersion): void {
    if (this.markFile === null || version.history === null) return;
    const mark: Mark = { history: version.history, revision: version.revision, tag: version.tag };
    const temp = `${this.markFile}.tmp`;
    try {
      const fd = openSync(temp, 'w', 0o600);
      try {
        writeSync(fd, `${JSON.stringify(mark)}\n`);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temp, this.markFile);
    } catch (err) {
      // The mark only detects a restore at start; the database stays the truth. Said, never thrown into a change.
      this.logger?.warn({ err: { message: (err as Error).message }, file: this.markFile }, 'cannot write the directory history mark');
    }
  }

  private readMark(): Mark | null {
    if (this.markFile === null) return null;
    let text: string;
    try {
      text = readFileSync(this.markFile, 'utf8');
    } catch {
      return null; // none yet: a new database, or one from before histories
    }
    try {
      const parsed = markSchema.safeParse(JSON.parse(text));
      if (parsed.success) return parsed.data;
    } catch {
      // not JSON
    }
    this.logger?.warn({ file: this.markFile }, 'the directory history mark is not readable: it is written again');
    return null;
  }

  /**
   * At start: a database that holds less than its mark was restored (or replaced), so its history is renewed:
   * a door that synced from the discarded history is then answered in full instead of with deltas of the new one.
   * Returns true when it renewed.
   */
  async checkAtStart(current: { revision: number; tag: string | null }, now: number): Promise<boolean> {
    const mark = this.readMark();
    const history = await this.id();
    const wentBack =
      mark !== null && (mark.history !== history || mark.revision > current.revision || (mark.revision === current.revision && mark.tag !== current.tag));
    if (!wentBack) {
      this.record({ revision: current.revision, history, tag: current.tag });
      return false;
    }
    const renewed = await this.db.transaction(() => this.renew('restored: the database holds less than its mark', now, current));
    this.logger?.warn(
      { markHistory: mark.history, markRevision: mark.revision, databaseHistory: history, databaseRevision: current.revision, newHistory: renewed },
      `the service database was restored or replaced: it holds directory revision ${current.revision}, the service had issued ${mark.revision}` +
        `${mark.history !== history ? ' in another history' : ''}; the directory history is renewed and every door syncs in full`,
    );
    return true;
  }
}
