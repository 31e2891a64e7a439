import { createHash } from 'node:crypto';
import { canonicalJson } from './signing.js';

/**
 * The audit log's hash chain, as the agent writes it and the service and `audit verify` check it (docs/audit.md,
 * "The chain"). Shared by both: the hash of a record must come out the same from the agent's row and from the wire
 * event the service received.
 */

/** The `prev_hash` of a chain's first record. */
export const GENESIS_HASH = '0'.repeat(64);

/** The type of a chain's first record. */
export const CHAIN_STARTED = 'audit_chain_started';

/** The fields of a wire event that are not its `data`: the envelope and the chain's own. */
export const ENVELOPE_FIELDS: readonly string[] = ['id', 'seq', 'at', 'door', 'type', 'chain', 'prev_hash', 'hash'];

/** What a record's hash covers. */
export interface ChainedContent {
  chain: string;
  seq: number;
  /** As on the wire: ISO 8601 with milliseconds, UTC (`new Date(ms).toISOString()`). */
  at: string;
  door: string | null;
  type: string;
  data: Record<string, unknown>;
}

/** A record's hash: hex SHA-256 over the previous record's hash, a newline and the record's canonical JSON. */
export function chainHash(prevHash: string, content: ChainedContent): string {
  const { chain, seq, at, door, type, data } = content;
  return createHash('sha256').update(`${prevHash}\n`).update(canonicalJson({ chain, seq, at, door, type, data })).digest('hex');
}

/** A wire event's `data`: every field but the envelope's (ENVELOPE_FIELDS). */
export function dataOfWire(wire: Record<string, unknown>): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(wire)) if (!ENVELOPE_FIELDS.includes(key)) data[key] = value;
  return data;
}
