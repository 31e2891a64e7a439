import { existsSync } from 'node:fs';
import type { AuditFinding } from '../protocol/auditVerify.js';
import { walkLocalChain } from '../store/chainWalk.js';
import { openStateDatabase, statePath } from '../store/database.js';
import { compareWithService, type ServiceComparison } from '../sync/chainComparison.js';
import { createServiceClient } from '../sync/serviceClient.js';
import { DoorAgentError, EXIT_INVALID_CONFIG } from '../util/errors.js';
import { loadConfigFor, stringOption, type Command, type CommandContext } from './context.js';

/**
 * `door-agent audit verify [--offline] [--json]`: walks the board's audit log and its hash chain (docs/audit.md,
 * "The chain"), then compares it with the service's copy when a service is configured. Exit 0: intact; 1: a
 * finding; 78: no log.
 */
async function runAuditVerify(args: { config: string | undefined; offline: boolean; json: boolean }, ctx: CommandContext): Promise<number> {
  const config = loadConfigFor(args.config, ctx);
  const file = statePath(config.agent.dataDir);
  if (!existsSync(file)) {
    ctx.stderr.write(`no audit log at ${file}: the agent has not written one (door-agent run creates it)\n`);
    return EXIT_INVALID_CONFIG;
  }
  const db = openStateDatabase(file, { readonly: true });
  try {
    const walk = walkLocalChain(db, { agentId: config.agent.id, maxEvents: config.agent.maxEvents });
    const warnings: string[] = [];
    let comparison: ServiceComparison | null = null;
    if (!args.offline && config.service && walk.chain) {
      try {
        const client = createServiceClient(config.service, ctx.env, config.agent.dataDir);
        comparison = await compareWithService(db, client, { agentId: config.agent.id, chain: walk.chain.id, lastSeq: walk.lastSeq });
      } catch (err) {
        if (!(err instanceof DoorAgentError)) throw err;
        warnings.push(`not compared with the service: ${err.message}`);
      }
    }
    const findings = [...walk.findings, ...(comparison?.findings ?? [])].sort((a, b) => Number(a.chain !== null) - Number(b.chain !== null) || a.seq - b.seq);
    const total = walk.summary.findings + (comparison?.differences ?? 0);
    const summary = {
      agent: config.agent.id,
      chain: walk.chain?.id ?? null,
      records: walk.summary.records,
      chained: walk.summary.chained,
      unchained: walk.summary.unchained,
      evicted: walk.summary.evicted,
      evictedCounted: walk.evictedCounted,
      lastSeq: walk.lastSeq,
      compared: comparison?.compared ?? null,
      findings: total,
    };
    if (args.json) {
      ctx.stdout.write(`${JSON.stringify({ intact: total === 0, summary, findings, warnings })}\n`);
    } else {
      for (const warning of warnings) ctx.stderr.write(`warning: ${warning}\n`);
      for (const finding of findings) ctx.stdout.write(`${findingLine(finding)}\n`);
      const notCompared = args.offline ? '--offline' : !config.service ? 'no service configured' : !walk.chain ? 'no chain yet' : 'see the warning';
      ctx.stdout.write(`${summaryLine(summary, notCompared)}\n`);
    }
    return total === 0 ? 0 : 1;
  } finally {
    db.close();
  }
}

/** `edited seq 12 (2026-03-01T08:00:00.000Z) chain 3f2…: what is wrong`. */
function findingLine(f: AuditFinding): string {
  const seqs = f.toSeq === f.seq ? `seq ${f.seq}` : `seqs ${f.seq}-${f.toSeq}`;
  const at = f.at === null ? '' : ` (${f.at})`;
  const chain = f.chain === null ? 'before the chain' : `chain ${f.chain}`;
  return `${f.kind}: ${seqs}${at}, ${chain}: ${f.message}`;
}

function summaryLine(
  s: { chain: string | null; records: number; chained: number; unchained: number; evicted: number; compared: number | null; findings: number },
  notCompared: string,
): string {
  const compared = s.compared === null ? `not compared with the service (${notCompared})` : `${s.compared} compared with the service`;
  const verdict = s.findings === 0 ? 'intact' : `${s.findings} ${s.findings === 1 ? 'finding' : 'findings'}`;
  const noChain = s.chain === null ? ' (no chain yet: the next event starts it)' : '';
  return `${verdict}: ${s.records} records checked (${s.chained} chained, ${s.unchained} unchained${noChain}), ${s.evicted} evicted, ${compared}`;
}

export const command: Command = (input) =>
  runAuditVerify({ config: stringOption(input, 'config'), offline: input.options.offline === true, json: input.options.json === true }, input.ctx);
