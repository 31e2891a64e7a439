import * as z from 'zod';
import { deeperThan } from '../../protocol/jsonDepth.js';

/**
 * An agent's audit event as it comes on `P/doors/<door>/events` (docs/audit.md, "Where events are kept"): every
 * field is kept as received; the envelope (id, seq, at, type), the chain's fields and the ones the service indexes
 * (door, who, reason, holders, passages) are checked. A payload that fails is dropped whole: never stored half.
 */

/** The largest event taken (a grant with many passages is a few KiB). */
const MAX_EVENT_BYTES = 64 * 1024;

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits');
const text = (max: number) => z.string().max(max).nullable().optional();

const wireEventSchema = z.looseObject({
  /** `<agentId>-<seq>`: the agent's id is what comes before the last "-". */
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}-\d{1,15}$/, 'must be <agent id>-<seq>'),
  seq: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  at: z.iso.datetime({ offset: true }),
  type: z.string().regex(/^[a-z0-9_]{1,64}$/, 'must be an event type (a-z, 0-9, _)'),
  door: z.string().max(100).nullable().optional(),
  chain: z
    .string()
    .regex(/^[0-9a-f-]{1,64}$/, 'must be the chain id (a UUID)')
    .optional(),
  prev_hash: hex64.optional(),
  hash: hex64.optional(),
  who: text(300),
  reason: text(200),
  holders: z
    .array(z.looseObject({ email_id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional() }))
    .max(100)
    .nullable()
    .optional(),
  passages: z
    .array(z.looseObject({ area: z.string().max(200).optional() }))
    .max(100)
    .nullable()
    .optional(),
});

/** An event checked, with what the service's columns take of it (audit_events). */
export interface IngestedEvent {
  agentId: string;
  /** '' for an event from before the chain (no `chain` field). */
  chainId: string;
  seq: number;
  /** Its time, ms. */
  at: number;
  door: string | null;
  type: string;
  personId: number | null;
  person: string | null;
  reason: string | null;
  area: string | null;
  prevHash: string | null;
  hash: string | null;
  /** The JSON as received. */
  body: string;
}

/** Why a payload was not taken, in words naming the field. */
export class WireEventProblem extends Error {}

/** Parses and checks a payload of the events topic; throws WireEventProblem naming what is wrong. */
export function parseWireEvent(payload: Buffer): IngestedEvent {
  if (payload.length > MAX_EVENT_BYTES) throw new WireEventProblem(`the event is ${payload.length} bytes, more than ${MAX_EVENT_BYTES}`);
  let json: unknown;
  const body = payload.toString('utf8');
  try {
    json = JSON.parse(body);
  } catch (err) {
    throw new WireEventProblem(`not JSON: ${(err as Error).message}`);
  }
  if (deeperThan(json)) throw new WireEventProblem('nested too deep');
  const parsed = wireEventSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new WireEventProblem(`${issue.path.join('.') || 'the event'}: ${issue.message}`);
  }
  const event = parsed.data;
  const cut = event.id.lastIndexOf('-');
  if (event.id.slice(cut + 1) !== String(event.seq)) throw new WireEventProblem(`id: ${event.id} does not end in its seq ${event.seq}`);
  if ((event.chain === undefined) !== (event.hash === undefined) || (event.chain === undefined) !== (event.prev_hash === undefined)) {
    throw new WireEventProblem('chain, prev_hash and hash: all three or none');
  }
  const at = Date.parse(event.at);
  return {
    agentId: event.id.slice(0, cut),
    chainId: event.chain ?? '',
    seq: event.seq,
    at,
    door: event.door?.toLowerCase() ?? null,
    type: event.type,
    personId: event.holders?.[0]?.email_id ?? null,
    person: event.who ?? null,
    reason: event.reason ?? null,
    area: event.passages?.[0]?.area ?? null,
    prevHash: event.prev_hash ?? null,
    hash: event.hash ?? null,
    body,
  };
}
