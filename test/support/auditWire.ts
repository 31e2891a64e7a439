import { randomUUID } from 'node:crypto';
import { CHAIN_STARTED, chainHash, dataOfWire, GENESIS_HASH } from '../../src/protocol/auditChain.js';

/**
 * An agent's chained audit events as it puts them on the wire (docs/audit.md, "The chain"), made by a test that
 * plays the agent: each event's id, seq, at, chain, prev_hash and hash as the agent's log writes them.
 */
export class WireChain {
  readonly chain = randomUUID();
  private seq: number;
  private prev = GENESIS_HASH;
  readonly events: Array<Record<string, unknown>> = [];

  constructor(
    readonly agentId: string,
    /** The seq of the chain's first record (after `unchained_through` records from before the chain). */
    firstSeq = 1,
  ) {
    this.seq = firstSeq - 1;
  }

  /** The chain's first record. */
  start(at: number): Record<string, unknown> {
    return this.add({ type: CHAIN_STARTED, door: null, reason: 'new_log' }, at);
  }

  /** The next event: `fields` has at least type and door. */
  add(fields: Record<string, unknown> & { type: string; door: string | null }, at: number): Record<string, unknown> {
    const seq = ++this.seq;
    const wire: Record<string, unknown> = Object.assign({}, fields, { id: `${this.agentId}-${seq}`, seq, at: new Date(at).toISOString() });
    const content = { chain: this.chain, seq, at: wire.at as string, door: fields.door, type: fields.type, data: dataOfWire(wire) };
    const hash = chainHash(this.prev, content);
    Object.assign(wire, { chain: this.chain, prev_hash: this.prev, hash });
    this.prev = hash;
    this.events.push(wire);
    return wire;
  }
}
