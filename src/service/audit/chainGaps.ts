import type { Logger } from 'pino';
import type { Clock, Timers } from '../../util/clock.js';
import type { SqlDb } from '../sql/sqlDb.js';
import type { ChainRow } from './eventStore.js';

/** One gap of a chain: seqs from..to missing while later ones came; since: when the first seq past it came (ms). */
export interface ChainGap {
  from: number;
  to: number;
  since: number;
}

/** server.audit.gapSeconds's default (for a caller of buildService that gives no server.audit). */
export const DEFAULT_GAP_SECONDS = 300;

/** The most gaps listed of one chain. */
const MAX_GAPS = 100;

/**
 * The seqs of `chain` missing at the service while later ones came (oldest first), each at least `ageMs` old: a
 * seq only a moment late (a broker delivering out of order after a reconnect) is not a gap yet.
 */
export async function gapsOf(db: SqlDb, chain: ChainRow, now: number, ageMs: number): Promise<ChainGap[]> {
  if (chain.gap_since === null) return [];
  const rows = await db.all<{ seq: number; prev: number | null; received_at: number }>(
    `SELECT seq, prev, received_at FROM (
       SELECT seq, received_at, LAG(seq) OVER (ORDER BY seq) AS prev FROM audit_events WHERE agent_id = ? AND chain_id = ? AND seq > ?
     ) AS t WHERE prev IS NULL OR seq > prev + 1 ORDER BY seq LIMIT ?`,
    [chain.agent_id, chain.chain_id, chain.contiguous_seq, MAX_GAPS],
  );
  const gaps: ChainGap[] = [];
  for (const row of rows) {
    const from = (row.prev ?? chain.contiguous_seq) + 1;
    if (from < row.seq && row.received_at <= now - ageMs) gaps.push({ from, to: row.seq - 1, since: row.received_at });
  }
  return gaps;
}

/**
 * Watches the chains for gaps (docs/audit.md): a chain whose next seq has not come for gapSeconds while later ones
 * have is logged once (warn `audit gap`, with agent, chain, from, to), whichever process sees it first (the row's
 * gap_reported_at is set in the same statement that decides it), and its agent is asked for them (gapRequests.ts).
 * The API and the console list the gaps themselves.
 */
export class GapWatch {
  private timer: unknown = null;
  private closed = false;

  constructor(
    private readonly deps: {
      db: SqlDb;
      gapSeconds: number;
      clock: Clock;
      timers: Timers;
      logger: Logger;
      /** Asks the agents for the events of their gaps (with a broker), after each check. */
      requests?: { ask(): Promise<number> };
    },
  ) {}

  /** Checks now, then every tenth of gapSeconds (at least every 30 s). */
  start(): void {
    void this.tick();
  }

  private async tick(): Promise<void> {
    this.timer = null;
    if (this.closed) return;
    await this.check().catch((err: unknown) => this.deps.logger.warn({ err }, 'cannot check the audit chains for gaps'));
    await this.deps.requests?.ask().catch((err: unknown) => this.deps.logger.warn({ err }, 'cannot ask the agents for the events of their gaps'));
    if (this.closed) return;
    const every = Math.min(30_000, Math.max(1000, (this.deps.gapSeconds * 1000) / 10));
    this.timer = this.deps.timers.setTimeout(() => void this.tick(), every);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** Logs each gap older than gapSeconds not yet reported; returns how many it logged. */
  async check(): Promise<number> {
    const { db, clock, logger } = this.deps;
    const now = clock.wallNow();
    const ageMs = this.deps.gapSeconds * 1000;
    const due = await db.all<ChainRow>('SELECT * FROM audit_chains WHERE gap_since IS NOT NULL AND gap_since <= ? AND gap_reported_at IS NULL', [now - ageMs]);
    let logged = 0;
    for (const chain of due) {
      const [gap] = await gapsOf(db, chain, now, ageMs);
      if (gap === undefined) continue;
      const claimed = await db.run(
        'UPDATE audit_chains SET gap_reported_at = ? WHERE agent_id = ? AND chain_id = ? AND gap_since = ? AND gap_reported_at IS NULL',
        [now, chain.agent_id, chain.chain_id, chain.gap_since],
      );
      if (claimed.changes === 0) continue;
      logged++;
      logger.warn({ agent: chain.agent_id, chain: chain.chain_id, from: gap.from, to: gap.to, since: new Date(gap.since).toISOString() }, 'audit gap');
    }
    return logged;
  }

  close(): void {
    this.closed = true;
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
  }
}
