import { CHAIN_STARTED } from '../../protocol/auditChain.js';
import type { SqlDb } from '../sql/sqlDb.js';
import type { IngestedEvent } from './wireEvent.js';

/** A chain's row in audit_chains. */
export interface ChainRow {
  agent_id: string;
  chain_id: string;
  first_seen_at: number;
  /** The lowest seq received: the seqs before it never came (they are not deleted ones). */
  first_seq: number;
  started_at: number | null;
  contiguous_seq: number;
  last_seq: number;
  last_at: number | null;
  gap_since: number | null;
  gap_reported_at: number | null;
  pruned_through_seq: number;
}

/** What storing one event did. */
export interface Stored {
  /** False: the service had it already (the outbox sent it again, or another process stored it). */
  stored: boolean;
  /** Its row's event_id (null: deleted by retention already). */
  eventId: number | null;
  /** A gap that had been reported closed with it. */
  gapClosed: { from: number; to: number } | null;
}

/** How many seqs one step of the contiguity walk reads. */
const WALK_PAGE = 1000;

/**
 * The service's copy of every agent's audit events (audit_events) and each chain's bookkeeping (audit_chains):
 * each event stored once per agent, chain and seq, in one transaction with its chain's row, so the contiguous
 * seq, the last seq and the gap's start always agree with the rows stored.
 */
export class AuditEventStore {
  constructor(private readonly db: SqlDb) {}

  /**
   * Stores `event` (received at `receivedAt`, ms) unless it is stored already, and brings its chain's row up to
   * date; one transaction (on PostgreSQL it may run again: it does nothing outside the database).
   */
  async store(event: IngestedEvent, receivedAt: number): Promise<Stored> {
    return this.db.transaction(async () => {
      const chain = await this.chain(event.agentId, event.chainId);
      // Deleted by retention already: an old event sent again is not kept again.
      if (chain !== undefined && event.seq <= chain.pruned_through_seq) return { stored: false, eventId: null, gapClosed: null };
      const eventId = await this.db.value<number>(
        `INSERT INTO audit_events (agent_id, chain_id, seq, at, door_uuid, type, person_id, person, reason, area, body, prev_hash, hash, received_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, chain_id, seq) DO NOTHING RETURNING event_id`,
        [
          event.agentId,
          event.chainId,
          event.seq,
          event.at,
          event.door,
          event.type,
          event.personId,
          event.person,
          event.reason,
          event.area,
          event.body,
          event.prevHash,
          event.hash,
          receivedAt,
        ],
      );
      if (eventId === undefined) {
        const kept = await this.db.value<number>('SELECT event_id FROM audit_events WHERE agent_id = ? AND chain_id = ? AND seq = ?', [
          event.agentId,
          event.chainId,
          event.seq,
        ]);
        return { stored: false, eventId: kept ?? null, gapClosed: null };
      }
      const startedAt = event.type === CHAIN_STARTED ? event.at : null;
      if (chain === undefined) {
        // The chain's first event here: the seqs before it were published before this service kept events.
        await this.db.run(
          `INSERT INTO audit_chains (agent_id, chain_id, first_seen_at, first_seq, started_at, contiguous_seq, last_seq, last_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
          [event.agentId, event.chainId, receivedAt, event.seq, startedAt, event.seq, event.seq, event.at],
        );
        return { stored: true, eventId, gapClosed: null };
      }
      const newer = event.seq > chain.last_seq;
      const updated: ChainRow = {
        ...chain,
        started_at: chain.started_at ?? startedAt,
        first_seq: Math.min(chain.first_seq, event.seq),
        last_seq: newer ? event.seq : chain.last_seq,
        last_at: newer ? event.at : chain.last_at,
      };
      const gapClosed = await this.settle(updated, chain.contiguous_seq);
      return { stored: true, eventId, gapClosed };
    });
  }

  /** One chain's row. */
  async chain(agentId: string, chainId: string): Promise<ChainRow | undefined> {
    return this.db.get<ChainRow>('SELECT * FROM audit_chains WHERE agent_id = ? AND chain_id = ?', [agentId, chainId]);
  }

  /**
   * Moves `chain`'s contiguous seq past every seq now stored (or pruned) after `from`, sets or clears its gap and
   * writes the row. Inside the caller's transaction. Returns the reported gap it closed, if any.
   */
  async settle(chain: ChainRow, from: number): Promise<{ from: number; to: number } | null> {
    const contiguous = await this.walk(chain.agent_id, chain.chain_id, Math.max(from, chain.pruned_through_seq));
    let gapSince: number | null = null;
    if (contiguous < chain.last_seq) {
      // The gap starts when the first seq past it came (a gap that shrinks keeps its start, and its report).
      gapSince =
        (await this.db.value<number>('SELECT received_at FROM audit_events WHERE agent_id = ? AND chain_id = ? AND seq > ? ORDER BY seq LIMIT 1', [
          chain.agent_id,
          chain.chain_id,
          contiguous,
        ])) ?? null;
    }
    const reportedAt = gapSince !== null && gapSince === chain.gap_since ? chain.gap_reported_at : null;
    await this.db.run(
      `UPDATE audit_chains SET started_at = ?, first_seq = ?, contiguous_seq = ?, last_seq = ?, last_at = ?, gap_since = ?, gap_reported_at = ?,
       pruned_through_seq = ? WHERE agent_id = ? AND chain_id = ?`,
      [
        chain.started_at,
        chain.first_seq,
        contiguous,
        chain.last_seq,
        chain.last_at,
        gapSince,
        reportedAt,
        chain.pruned_through_seq,
        chain.agent_id,
        chain.chain_id,
      ],
    );
    const closed = chain.gap_reported_at !== null && contiguous > chain.contiguous_seq && gapSince !== chain.gap_since;
    return closed ? { from: chain.contiguous_seq + 1, to: contiguous } : null;
  }

  /** The highest seq such that every seq after `from` up to it is stored. */
  private async walk(agentId: string, chainId: string, from: number): Promise<number> {
    let contiguous = from;
    for (;;) {
      const seqs = await this.db.column<number>('SELECT seq FROM audit_events WHERE agent_id = ? AND chain_id = ? AND seq > ? ORDER BY seq LIMIT ?', [
        agentId,
        chainId,
        contiguous,
        WALK_PAGE,
      ]);
      for (const seq of seqs) {
        if (seq !== contiguous + 1) return contiguous;
        contiguous = seq;
      }
      if (seqs.length < WALK_PAGE) return contiguous;
    }
  }
}
