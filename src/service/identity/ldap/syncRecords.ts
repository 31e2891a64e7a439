import type { SyncCounts, SyncRunAnswer } from '../../../api/identity.js';
import type { SqlDb } from '../../sql/sqlDb.js';
import { syncRunAnswer, type SyncRunRow } from '../syncRuns.js';

/**
 * What an LDAP sync records in the database (schema 14): the lease in identity_sync_state that lets one sync run at
 * a time across every service process, the schedule's next_at and last_ok_at, and each run in identity_sync_runs
 * (running, then ok, failed or held), of which the last RUNS_KEPT are kept.
 */

const SOURCE = 'ldap';
/** The runs kept per source. */
const RUNS_KEPT = 200;

/** How a run ended. */
export interface RunOutcome {
  outcome: 'ok' | 'failed' | 'held';
  reason: string | null;
  counts: SyncCounts;
  wouldSuspend: number | null;
  sample: string[] | null;
}

export class SyncRecords {
  constructor(
    private readonly db: SqlDb,
    /** This sync's name in the lease (host:pid and an instance's own suffix). */
    private readonly holder: string,
  ) {}

  /**
   * Takes the lease until `until`, in one statement: when nobody holds it, or its holder's lease ran out (a process
   * that died). False when another holds it.
   */
  async takeLease(now: number, until: number): Promise<boolean> {
    const taken = await this.db.run(
      `INSERT INTO identity_sync_state (source, running_by, running_until) VALUES (?, ?, ?)
         ON CONFLICT (source) DO UPDATE SET running_by = excluded.running_by, running_until = excluded.running_until
         WHERE identity_sync_state.running_by IS NULL OR identity_sync_state.running_until < ?`,
      [SOURCE, this.holder, until, now],
    );
    return taken.changes === 1;
  }

  /** Who holds the lease (for the refusal's words), null when nobody does. */
  async leaseHolder(now: number): Promise<string | null> {
    const row = await this.db.get<{ running_by: string | null; running_until: number | null }>(
      'SELECT running_by, running_until FROM identity_sync_state WHERE source = ?',
      [SOURCE],
    );
    return row?.running_by != null && (row.running_until ?? 0) >= now ? row.running_by : null;
  }

  /** Extends the lease (in the caller's transaction); false when this sync no longer holds it. */
  async renewLease(until: number): Promise<boolean> {
    return (
      (await this.db.run('UPDATE identity_sync_state SET running_until = ? WHERE source = ? AND running_by = ?', [until, SOURCE, this.holder])).changes === 1
    );
  }

  async releaseLease(): Promise<void> {
    await this.db.run('UPDATE identity_sync_state SET running_by = NULL, running_until = NULL WHERE source = ? AND running_by = ?', [SOURCE, this.holder]);
  }

  /**
   * A new run, `running` (with the lease held). A run still `running` is one whose process stopped before it ended
   * (the lease ran out since): it is recorded as failed.
   */
  async begin(trigger: string, now: number): Promise<number> {
    await this.db.run("UPDATE identity_sync_runs SET outcome = 'failed', finished_at = ?, reason = ? WHERE source = ? AND outcome = 'running'", [
      now,
      'the service process running it stopped before it ended',
      SOURCE,
    ]);
    const runId = await this.db.value<number>(
      "INSERT INTO identity_sync_runs (source, trigger, started_at, outcome) VALUES (?, ?, ?, 'running') RETURNING run_id",
      [SOURCE, trigger, now],
    );
    return Number(runId);
  }

  /** Records how run `runId` ended (last_ok_at with an ok), drops the runs beyond RUNS_KEPT, and answers it. */
  async finish(runId: number, now: number, outcome: RunOutcome): Promise<SyncRunAnswer> {
    return this.db.transaction(async () => {
      await this.db.run('UPDATE identity_sync_runs SET outcome = ?, finished_at = ?, reason = ?, counts = ?, would_suspend = ?, sample = ? WHERE run_id = ?', [
        outcome.outcome,
        now,
        outcome.reason,
        JSON.stringify(outcome.counts),
        outcome.wouldSuspend,
        outcome.sample === null ? null : JSON.stringify(outcome.sample),
        runId,
      ]);
      if (outcome.outcome === 'ok') await this.db.run('UPDATE identity_sync_state SET last_ok_at = ? WHERE source = ?', [now, SOURCE]);
      await this.db.run(
        `DELETE FROM identity_sync_runs WHERE source = ? AND run_id < (
           SELECT min(run_id) FROM (SELECT run_id FROM identity_sync_runs WHERE source = ? ORDER BY run_id DESC LIMIT ?) AS kept)`,
        [SOURCE, SOURCE, RUNS_KEPT],
      );
      const row = await this.db.get<SyncRunRow>('SELECT * FROM identity_sync_runs WHERE run_id = ?', [runId]);
      return syncRunAnswer(row!);
    });
  }

  /** When the next scheduled sync is (ms), null when none is set. */
  async nextAt(): Promise<number | null> {
    return (await this.db.value<number | null>('SELECT next_at FROM identity_sync_state WHERE source = ?', [SOURCE])) ?? null;
  }

  async setNextAt(at: number): Promise<void> {
    await this.db.run(`INSERT INTO identity_sync_state (source, next_at) VALUES (?, ?) ON CONFLICT (source) DO UPDATE SET next_at = excluded.next_at`, [
      SOURCE,
      at,
    ]);
  }
}
