import type { Db } from './database.js';
import { evictedCount } from './eviction.js';
import { lastAssignedSeq, readChainMeta, type ChainMeta } from './eventChain.js';
import { ChainVerifier, type ChainVerifyResult, type ExplainedRange, type MissingRange } from '../protocol/auditVerify.js';

interface ChainRow {
  seq: number;
  at: number;
  door_uuid: string | null;
  type: string;
  payload: string;
  chain_prev: string | null;
  chain_hash: string | null;
}

export interface LocalChainWalk extends ChainVerifyResult {
  chain: ChainMeta | null;
  /** The last seq the log assigned (its evicted and deleted records too). */
  lastSeq: number;
  /** The log's eviction counter (events_evicted). */
  evictedCounted: number;
}

/**
 * Walks the board's audit log (state.db) with the verify walk (protocol/auditVerify.ts), a row at a time. A seq
 * missing behind the eviction window (the last `maxEvents` seqs) is evicted as long as the log's eviction counter
 * covers it, once the records missing before the chain took their share; one more, or one missing inside the
 * window, is deleted.
 */
export function walkLocalChain(db: Db, options: { agentId: string; maxEvents: number }): LocalChainWalk {
  const chain = readChainMeta(db);
  const lastSeq = lastAssignedSeq(db);
  const evictedCounted = evictedCount(db);
  const windowEnd = lastSeq - options.maxEvents;
  const firstChained = chain?.first_seq ?? lastSeq + 1;
  const unchainedKept = db.prepare<[number], number>('SELECT count(*) FROM events WHERE seq < ?').pluck().get(firstChained) ?? 0;
  let budget = evictedCounted - (firstChained - 1 - unchainedKept);
  const explainMissing = (missing: MissingRange): ExplainedRange[] => {
    const behindWindow = Math.min(missing.to, windowEnd) - missing.from + 1;
    const evicted = Math.max(0, Math.min(behindWindow, budget));
    budget -= evicted;
    return evicted > 0 ? [{ from: missing.from, to: missing.from + evicted - 1, cause: 'evicted' }] : [];
  };
  const chainStart = () => chain?.first_seq;
  const verifier = new ChainVerifier({ agent: options.agentId, explainMissing, chainStart });
  const rows = db.prepare<[], ChainRow>('SELECT seq, at, door_uuid, type, payload, chain_prev, chain_hash FROM events ORDER BY seq').iterate();
  for (const row of rows) {
    verifier.add({
      seq: row.seq,
      chain: chain !== null && row.seq >= chain.first_seq ? chain.id : null,
      at: new Date(row.at).toISOString(),
      door: row.door_uuid,
      type: row.type,
      data: parsePayload(row.payload),
      prevHash: row.chain_prev,
      hash: row.chain_hash,
    });
  }
  return Object.assign(verifier.finish({ lastSeq }), { chain, lastSeq, evictedCounted });
}

/** A row's data; a payload that is not a JSON object (edited by hand) is kept as text, so its hash fails. */
function parsePayload(payload: string): Record<string, unknown> {
  try {
    const data = JSON.parse(payload) as unknown;
    if (data !== null && typeof data === 'object' && !Array.isArray(data)) return data as Record<string, unknown>;
  } catch {
    // not JSON: below
  }
  return { payload };
}
