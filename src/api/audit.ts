import * as z from 'zod';

/**
 * The service's answers about the audit trail it keeps (docs/audit.md): what `door-agent audit verify` on a board
 * reads back of its own chain, the events, the chains and their gaps. Validated by whoever reads them.
 */

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

/** GET /audit/agents/{agentId}/hashes?chain=&after=&limit=: the hashes the service holds of one chain, in seq order. */
export const chainHashesSchema = z.object({
  agent: z.string(),
  chain: z.string(),
  records: z.array(z.object({ seq: z.number().int().min(1), hash: hex64.nullable() })).max(10_000),
  /** Ask again with after=next_after for more; null: this was the last page. */
  next_after: z.number().int().nullable(),
});
export type ChainHashes = z.output<typeof chainHashesSchema>;

/** One gap of a chain at the service: seqs from..to (inclusive) not received while later ones were. */
const chainGapSchema = z.object({ from: z.number().int(), to: z.number().int(), since: z.string() });

/** GET /audit/chains?agent=: each agent's chains as the service holds them. */
export const auditChainsSchema = z.object({
  chains: z.array(
    z.object({
      agent: z.string(),
      /** '' for the events from before the chain (no hash). */
      chain: z.string(),
      started_at: z.string().nullable(),
      first_seen_at: z.string(),
      last_seq: z.number().int(),
      last_at: z.string().nullable(),
      /** Every seq up to this one received (or deleted by retention). */
      contiguous_seq: z.number().int(),
      pruned_through_seq: z.number().int(),
      gaps: z.array(chainGapSchema),
    }),
  ),
});

/** GET /events?door=&person=&type=&reason=&agent=&from=&to=&limit=&before=: newest first, a page at a time. */
export const eventPageSchema = z.object({
  /** The wire events as received, each with `agent` and the service's `event_id`. */
  events: z.array(z.looseObject({ event_id: z.number().int(), agent: z.string(), type: z.string(), at: z.string() })),
  /** Ask again with before=next_before for the next (older) page; null: no more. */
  next_before: z.number().int().nullable(),
});
