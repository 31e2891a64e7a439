import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import * as z from 'zod';
import { historySchema, tagSchema, type DirectoryVersion } from '../protocol/directory.js';
import type { SqlDb } from './sql/sqlDb.js';

/** What the log says after a restore is detected: what the doors do now, and what the operator does. */
export const RESTORE_AWAITS_ACCEPTANCE =
  'The doors refuse what the restored database grants beyond their caches until the restore is accepted: make again what was revoked after the backup, ' +
  'then accept it with POST /directory/restore/accept or on the console';

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
 * A restore awaiting acceptance (docs/reference-service.md "Backup and restore"): when the service saw that its
 * database went back, and how (the renewal's reason). It undid every change made after the backup, revocations
 * included, so the doors keep refusing what it would grant beyond their caches until an operator accepts it.
 */
export interface PendingRestore {
  /** ISO time. */
  detectedAt: string;
  reason: string;
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

  /**
   * A new history id, because the database went back: every agent holding the old one syncs in full, and the
   * restore awaits acceptance (every renewal is one). The mark is written once it is committed.
   */
  async renew(reason: string, now: number, current: { revision: number; tag: string | null }): Promise<string> {
    const history = randomBytes(16).toString('hex');
    const at = new Date(now).toISOString();
    await this.db.run('UPDATE directory_history SET history = ?, renewed_at = ?, reason = ?, restore_pending_since = ? WHERE id = 1', [
      history,
      at,
      reason,
      at,
    ]);
    this.db.afterCommit(() => this.record({ revision: current.revision, history, tag: current.tag }));
    return history;
  }

  /** The restore awaiting acceptance, or null (none detected, or accepted). */
  async pendingRestore(): Promise<PendingRestore | null> {
    const row = await this.db.get<{ since: string | null; reason: string }>(
      'SELECT restore_pending_since AS since, reason FROM directory_history WHERE id = 1',
    );
    return row?.since ? { detectedAt: row.since, reason: row.reason } : null;
  }

  /** Inside the caller's transaction: the pending restore accepted. false when none awaited acceptance. */
  async acceptRestore(): Promise<boolean> {
    const cleared = await this.db.run('UPDATE directory_history SET restore_pending_since = NULL WHERE id = 1 AND restore_pending_since IS NOT NULL');
    return cleared.changes > 0;
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
        `${mark.history !== history ? ' in another history' : ''}; the directory history is renewed and every door syncs in full. ${RESTORE_AWAITS_ACCEPTANCE}`,
    );
    return true;
  }
}
