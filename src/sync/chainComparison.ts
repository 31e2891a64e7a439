import type { Db } from '../store/database.js';
import type { AuditFinding } from '../protocol/auditVerify.js';
import type { ServiceClient } from './serviceClient.js';

export interface ServiceComparison {
  /** Records whose hash was compared with the service's copy. */
  compared: number;
  /** The first `maxFindings` differences, in seq order. */
  findings: AuditFinding[];
  /** Every finding (a run of seqs is one), those past maxFindings too. */
  differences: number;
}

const PAGE = 1000;

/**
 * Compares the board's chain with the service's copy (docs/audit.md, "The head is published"), a page of the
 * service's hashes at a time: a local record whose hash is not the service's for the same seq `differs` (the log
 * was rewritten, its hashes recomputed); so do seqs the service holds past the log's last one (the log was replaced
 * by an older copy). A record the service has not received yet, or one evicted here, is not compared.
 */
export async function compareWithService(
  db: Db,
  client: ServiceClient,
  options: { agentId: string; chain: string; lastSeq: number; maxFindings?: number },
): Promise<ServiceComparison> {
  const maxFindings = options.maxFindings ?? 1000;
  const result: ServiceComparison = { compared: 0, findings: [], differences: 0 };
  const local = db.prepare<[number, number], { seq: number; chain_hash: string | null }>('SELECT seq, chain_hash FROM events WHERE seq BETWEEN ? AND ?');
  const differ = (finding: Omit<AuditFinding, 'agent' | 'chain' | 'kind'>): AuditFinding | null => {
    result.differences++;
    if (result.findings.length >= maxFindings) return null;
    const full: AuditFinding = Object.assign({ kind: 'differs' as const, agent: options.agentId, chain: options.chain }, finding);
    result.findings.push(full);
    return full;
  };
  /** The run of differing seqs being reported, and the run of seqs past the log's end. */
  let run: AuditFinding | null = null;
  let pastEnd: AuditFinding | null = null;
  let after: number | null = 0;
  while (after !== null) {
    const page = await client.chainHashes(options.agentId, options.chain, after, PAGE);
    const records = page.records.filter((r) => r.hash !== null);
    if (records.length > 0) {
      const here = new Map(local.all(records[0]!.seq, records[records.length - 1]!.seq).map((row) => [row.seq, row] as const));
      for (const record of records) {
        const row = here.get(record.seq);
        if (row === undefined) {
          if (record.seq > options.lastSeq) {
            // A log replaced by an older copy: every seq past its end, one finding for the run.
            if (pastEnd !== null && pastEnd.toSeq === record.seq - 1) {
              pastEnd.toSeq = record.seq;
              pastEnd.message = pastTheEnd(pastEnd.seq, record.seq, options.lastSeq);
              continue;
            }
            pastEnd = differ({ seq: record.seq, toSeq: record.seq, at: null, message: pastTheEnd(record.seq, record.seq, options.lastSeq) });
          }
          continue;
        }
        result.compared++;
        if (row.chain_hash !== record.hash) {
          // A rewrite changes every hash from where it began: one finding for a run of seqs.
          if (run !== null && run.toSeq === record.seq - 1) {
            run.toSeq = record.seq;
            run.message = rewritten(run.seq, record.seq);
            continue;
          }
          run = differ({
            seq: record.seq,
            toSeq: record.seq,
            at: null,
            message: rewritten(record.seq, record.seq),
          });
        }
      }
    }
    // Guard against a service that answers the same page again: the walk only moves forward.
    after = page.next_after !== null && page.next_after > after ? page.next_after : null;
  }
  return result;
}

function pastTheEnd(from: number, to: number, lastSeq: number): string {
  const seqs = from === to ? `seq ${from}` : `seqs ${from}-${to}`;
  return `the service holds ${seqs} of this chain, past this log's last (${lastSeq}): the log was replaced by an older copy, or its last records deleted`;
}

function rewritten(from: number, to: number): string {
  return from === to
    ? `seq ${from} is not as the service received it: the log was rewritten there (its hash recomputed), or restored from an older copy that went on from before it`
    : `seqs ${from}-${to} are not as the service received them: the log was rewritten there (their hashes recomputed), or restored from an older copy that went on from before them`;
}
