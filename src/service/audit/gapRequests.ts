import type { Logger } from 'pino';
import { resendRequests, type ResendRequest } from '../../protocol/auditResend.js';
import type { Clock } from '../../util/clock.js';
import type { Leadership } from '../sql/leadership.js';
import type { SqlDb } from '../sql/sqlDb.js';
import { gapsOf } from './chainGaps.js';
import type { ChainRow } from './eventStore.js';

/** A chain's key in this process's memory of its asks. */
const keyOf = (chain: ChainRow) => `${chain.agent_id}\n${chain.chain_id}`;

/** Sends one request to an agent: false when it could not go out now (not connected); rejects when the broker refused it. */
export type SendResendRequest = (agentId: string, request: ResendRequest) => Promise<boolean>;

/**
 * Asks the agents to send again the events of their gaps (docs/audit.md, "How a gap closes"): for each gap older
 * than gapSeconds, `P/agents/<id>/audit/resend` with its seqs (protocol/auditResend.ts: one request per gap, in
 * pieces of at most 10,000 seqs), when it is first seen and again every gapSeconds while the chain has a gap. Only
 * the process holding the publisher lock asks, so each request goes out once however many processes run.
 */
export class GapRequests {
  /** Per chain (agent and chain id), when this process last asked (wall ms). */
  private readonly askedAt = new Map<string, number>();

  constructor(private readonly deps: { db: SqlDb; gapSeconds: number; leadership: Leadership; send: SendResendRequest; clock: Clock; logger: Logger }) {}

  /** Asks for each gap due now; returns how many requests went out. */
  async ask(): Promise<number> {
    const { db, leadership, clock } = this.deps;
    if (!leadership.leading) return 0;
    const now = clock.wallNow();
    const ageMs = this.deps.gapSeconds * 1000;
    // A chain of events from before the chain ('') cannot be asked for: the agent's log resends by chain.
    const open = await db.all<ChainRow>("SELECT * FROM audit_chains WHERE gap_since IS NOT NULL AND gap_since <= ? AND chain_id <> ''", [now - ageMs]);
    const stillOpen = new Set(open.map(keyOf));
    for (const key of this.askedAt.keys()) if (!stillOpen.has(key)) this.askedAt.delete(key);
    let sent = 0;
    for (const chain of open) {
      const asked = this.askedAt.get(keyOf(chain));
      if (asked !== undefined && now - asked < ageMs) continue;
      const gaps = await gapsOf(db, chain, now, ageMs);
      if (gaps.length === 0) continue;
      const requests = gaps.flatMap((gap) => resendRequests(chain.chain_id, gap.from, gap.to));
      const went = await this.sendAll(chain.agent_id, requests, asked === undefined);
      if (went === null) continue; // not connected: asked at the next check
      this.askedAt.set(keyOf(chain), now);
      sent += went;
    }
    return sent;
  }

  /**
   * Sends `requests` in order; how many went out, or null when none could (not connected). The first ask for a
   * chain is logged at info, the ones again at debug; a request the broker refused is a warning, asked again later.
   */
  private async sendAll(agentId: string, requests: ResendRequest[], first: boolean): Promise<number | null> {
    const { logger } = this.deps;
    let went = 0;
    for (const request of requests) {
      const fields = { agent: agentId, chain: request.chain, from: request.from, to: request.to };
      try {
        if (!(await this.deps.send(agentId, request))) return went === 0 ? null : went;
      } catch (err) {
        logger.warn(
          Object.assign({ err }, fields),
          `cannot ask the agent to send its missing audit events again (the service's broker user needs write on P/agents/+/audit/resend); asked again in ${this.deps.gapSeconds} s`,
        );
        return went;
      }
      if (first) logger.info(fields, 'audit gap: the agent is asked to send the missing events again');
      else logger.debug(fields, 'audit gap: the agent is asked again to send the missing events');
      went++;
    }
    return went;
  }
}
