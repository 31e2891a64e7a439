import { loadServiceConfig } from '../config/load.js';
import { type AuditFinding, ChainVerifier, type ExplainedRange, type MissingRange, recordOfWire } from '../protocol/auditVerify.js';
import type { SqlDb } from '../service/sql/sqlDb.js';
import { UsageError } from '../util/errors.js';
import { configPath, stringOption, type Command, type CommandContext } from './context.js';
import { openServiceDb } from './service.js';

/** Rows read at a time: a chain of millions of records is walked in little memory. */
const PAGE = 2000;

interface ChainInfo {
  agent_id: string;
  chain_id: string;
  first_seq: number | null;
  started_at: number | null;
  contiguous_seq: number | null;
  last_seq: number | null;
  pruned_through_seq: number | null;
  first_at: number | null;
}

/**
 * Why seqs of a chain are missing at the service: deleted by retention (through pruned_through_seq), never
 * received (before the first seq the service got, or past the contiguous seq: a gap), else not explained (deleted).
 */
function explainerFor(chains: Map<string, ChainInfo>): (missing: MissingRange) => ExplainedRange[] {
  return (missing) => {
    const chain = chains.get(missing.chain ?? '');
    if (chain === undefined) return [];
    const parts: ExplainedRange[] = [];
    const pruned = chain.pruned_through_seq ?? 0;
    if (pruned > 0) parts.push({ from: 1, to: pruned, cause: 'pruned' });
    if (chain.first_seq !== null && chain.first_seq > pruned + 1) parts.push({ from: pruned + 1, to: chain.first_seq - 1, cause: 'gap' });
    if (chain.contiguous_seq !== null) parts.push({ from: chain.contiguous_seq + 1, to: Number.MAX_SAFE_INTEGER, cause: 'gap' });
    return parts;
  };
}

/** One agent's chains, in the order the walk takes them: the records from before any chain, then each chain as it started. */
async function chainsOf(db: SqlDb, agentId: string): Promise<ChainInfo[]> {
  const rows = await db.all<ChainInfo>(
    `SELECT e.agent_id, e.chain_id, c.first_seq, c.started_at, c.contiguous_seq, c.last_seq, c.pruned_through_seq, e.first_at
     FROM (SELECT agent_id, chain_id, min(at) AS first_at FROM audit_events WHERE agent_id = ? GROUP BY agent_id, chain_id) AS e
     LEFT JOIN audit_chains AS c ON c.agent_id = e.agent_id AND c.chain_id = e.chain_id`,
    [agentId],
  );
  return rows.sort(
    (a, b) =>
      Number(a.chain_id !== '') - Number(b.chain_id !== '') ||
      (a.started_at ?? a.first_at ?? 0) - (b.started_at ?? b.first_at ?? 0) ||
      a.chain_id.localeCompare(b.chain_id),
  );
}

/** Walks one agent's copy at the service with the verify walk of protocol/auditVerify.ts. */
async function verifyAgent(db: SqlDb, agentId: string): Promise<{ findings: AuditFinding[]; records: number; pruned: number; total: number }> {
  const chains = await chainsOf(db, agentId);
  const byId = new Map(chains.map((c) => [c.chain_id, c]));
  const verifier = new ChainVerifier({
    agent: agentId,
    explainMissing: explainerFor(byId),
    // Where a chain begins when its first record is gone: the first seq the service received of it, if that was the start.
    chainStart: (chain) => {
      const info = byId.get(chain);
      return info?.started_at !== null && info?.started_at !== undefined ? (info.first_seq ?? undefined) : undefined;
    },
  });
  for (const chain of chains) {
    for (let after = 0; ; ) {
      const rows = await db.all<{ seq: number; body: string }>(
        'SELECT seq, body FROM audit_events WHERE agent_id = ? AND chain_id = ? AND seq > ? ORDER BY seq LIMIT ?',
        [agentId, chain.chain_id, after, PAGE],
      );
      for (const row of rows) {
        let wire: Record<string, unknown>;
        try {
          wire = JSON.parse(row.body) as Record<string, unknown>;
        } catch {
          wire = {};
        }
        // The row's own place (chain, seq) is what is verified: a body moved to another row does not match there.
        verifier.add(recordOfWire(Object.assign(wire, { chain: chain.chain_id }), row.seq));
      }
      if (rows.length < PAGE) break;
      after = rows[rows.length - 1]!.seq;
    }
  }
  const last = chains[chains.length - 1];
  const result = verifier.finish(last?.chain_id !== '' && last?.last_seq !== null && last?.last_seq !== undefined ? { lastSeq: last.last_seq } : {});
  return { findings: result.findings, records: result.summary.records, pruned: result.summary.pruned, total: result.summary.findings };
}

/** `edited: seq 12 (2026-03-01T08:00:00.000Z), agent front, chain 3f2…: what is wrong`. */
function findingLine(f: AuditFinding): string {
  const seqs = f.toSeq === f.seq ? `seq ${f.seq}` : `seqs ${f.seq}-${f.toSeq}`;
  const at = f.at === null ? '' : ` (${f.at})`;
  const chain = f.chain === null ? 'before the chain' : `chain ${f.chain}`;
  return `${f.kind}: ${seqs}${at}, agent ${f.agent}, ${chain}: ${f.message}`;
}

/**
 * `door-agent service audit verify [--agent ID] [--json]`: walks every agent's chains as the service holds them
 * (docs/audit.md, "The chain"), in (agent, chain, seq) order, naming the first bad record of each. Seqs deleted by
 * retention are explained by the chain's pruned_through_seq; seqs never received are a gap. Exit 0: intact; 1: a
 * finding. Reads the service's configuration and database as `service key create` does, running or not.
 */
async function runServiceAuditVerify(args: { agent: string | undefined; json: boolean; config: string | undefined }, ctx: CommandContext): Promise<number> {
  if (args.agent !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(args.agent))
    throw new UsageError('--agent must be an agent id (1-64 letters, digits, "-" or "_")');
  const config = loadServiceConfig(configPath(args.config, ctx.env));
  const db = await openServiceDb(config, ctx);
  try {
    const agents =
      args.agent === undefined
        ? await db.column<string>('SELECT agent_id FROM audit_events UNION SELECT agent_id FROM audit_chains ORDER BY agent_id')
        : [args.agent];
    const findings: AuditFinding[] = [];
    let records = 0;
    let pruned = 0;
    let total = 0;
    for (const agent of agents) {
      const walked = await verifyAgent(db, agent);
      findings.push(...walked.findings);
      records += walked.records;
      pruned += walked.pruned;
      total += walked.total;
    }
    const summary = { agents: agents.length, records, pruned, findings: total };
    if (args.json) ctx.stdout.write(`${JSON.stringify({ intact: total === 0, summary, findings })}\n`);
    else {
      for (const finding of findings) ctx.stdout.write(`${findingLine(finding)}\n`);
      const verdict = total === 0 ? 'intact' : `${total} ${total === 1 ? 'finding' : 'findings'}`;
      const agentsText = args.agent === undefined ? `${agents.length} ${agents.length === 1 ? 'agent' : 'agents'}` : `agent ${args.agent}`;
      ctx.stdout.write(`${verdict}: ${records} records of ${agentsText} checked, ${pruned} deleted by retention\n`);
    }
    return total === 0 ? 0 : 1;
  } finally {
    await db.close();
  }
}

export const command: Command = (input) =>
  runServiceAuditVerify({ agent: stringOption(input, 'agent'), json: input.options.json === true, config: stringOption(input, 'config') }, input.ctx);
