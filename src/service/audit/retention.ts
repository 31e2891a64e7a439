import type { Logger } from 'pino';
import type { Clock, Timers } from '../../util/clock.js';
import type { Leadership } from '../sql/leadership.js';
import type { SqlDb } from '../sql/sqlDb.js';
import type { AuditEventStore, ChainRow } from './eventStore.js';

const DAY_MS = 86_400_000;

/**
 * server.audit.retentionDays (docs/audit.md): once a day, and when this process starts leading, the leading
 * process deletes the events older than that. Per chain it deletes a run of seqs from the chain's start, through
 * the last old record before the first young one, and records it in pruned_through_seq, so `service audit verify`
 * tells a retention from a deletion; a record past it is kept even if its time is older (a clock stepped back),
 * rather than leaving a hole no record explains.
 */
export class Retention {
  private timer: unknown = null;
  private closed = false;

  constructor(
    private readonly deps: {
      db: SqlDb;
      store: AuditEventStore;
      retentionDays: number;
      leadership: Leadership;
      clock: Clock;
      timers: Timers;
      logger: Logger;
    },
  ) {}

  start(): void {
    this.deps.leadership.onChange((leading) => {
      if (leading) this.schedule(0);
    });
    if (this.deps.leadership.leading) this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = this.deps.timers.setTimeout(() => void this.tick(), ms);
    (this.timer as { unref?: () => void }).unref?.();
  }

  private async tick(): Promise<void> {
    this.timer = null;
    if (this.closed || !this.deps.leadership.leading) return;
    await this.prune().catch((err: unknown) => this.deps.logger.warn({ err }, 'audit retention: cannot delete old events; tried again in a day'));
    this.schedule(DAY_MS);
  }

  /** Deletes what is older than retentionDays now; how many events it deleted. */
  async prune(): Promise<number> {
    const { db, store, clock, logger } = this.deps;
    const cutoff = clock.wallNow() - this.deps.retentionDays * DAY_MS;
    const chains = await db.all<ChainRow>('SELECT * FROM audit_chains ORDER BY agent_id, chain_id');
    let deleted = 0;
    for (const listed of chains) {
      deleted += await db.transaction(async () => {
        const chain = await store.chain(listed.agent_id, listed.chain_id);
        if (chain === undefined) return 0;
        const young = await db.value<number | null>('SELECT min(seq) FROM audit_events WHERE agent_id = ? AND chain_id = ? AND seq > ? AND at >= ?', [
          chain.agent_id,
          chain.chain_id,
          chain.pruned_through_seq,
          cutoff,
        ]);
        // Through the last old record before it: a seq missing just before a young one may be a young one deleted.
        const through = await db.value<number | null>(
          'SELECT max(seq) FROM audit_events WHERE agent_id = ? AND chain_id = ? AND seq > ? AND seq < ? AND at < ?',
          [chain.agent_id, chain.chain_id, chain.pruned_through_seq, young ?? Number.MAX_SAFE_INTEGER, cutoff],
        );
        if (through === null || through === undefined || through <= chain.pruned_through_seq) return 0;
        const gone = await db.run('DELETE FROM audit_events WHERE agent_id = ? AND chain_id = ? AND seq > ? AND seq <= ?', [
          chain.agent_id,
          chain.chain_id,
          chain.pruned_through_seq,
          through,
        ]);
        await store.settle({ ...chain, pruned_through_seq: through }, Math.max(chain.contiguous_seq, through));
        return gone.changes;
      });
    }
    if (deleted > 0) logger.info({ deleted, olderThan: new Date(cutoff).toISOString() }, 'audit retention: old events deleted');
    return deleted;
  }

  close(): void {
    this.closed = true;
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
  }
}
