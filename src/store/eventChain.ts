import { randomUUID } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import type { Db } from './database.js';
import { readMeta, writeMeta } from './meta.js';
import { CHAIN_STARTED, chainHash, dataOfWire, ENVELOPE_FIELDS, GENESIS_HASH } from '../protocol/auditChain.js';

/** The meta key of the log's chain: its id and the seq of its first record (docs/audit.md, "The chain"). */
const CHAIN_META_KEY = 'audit_chain';

export interface ChainMeta {
  id: string;
  first_seq: number;
}

/** The log's chain, null before its first append since the chain began. */
export function readChainMeta(db: Db): ChainMeta | null {
  return readMeta<ChainMeta>(db, CHAIN_META_KEY) ?? null;
}

/** The last seq the log ever assigned, the evicted and deleted ones too (AUTOINCREMENT keeps it): 0 for a new log. */
export function lastAssignedSeq(db: Db): number {
  return (db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'").pluck().get() as number | undefined) ?? 0;
}

/** A row's link in the chain, as toWire shows it. */
export interface ChainLink {
  chain: string;
  prevHash: string;
  hash: string;
}

/**
 * Chains the audit log's records as they are written: called inside the insert's transaction (an IMMEDIATE one,
 * so what it reads is the latest), it reads the previous record's hash from the table, never from memory, since
 * another process (`door-agent sync`) may write to the same log.
 */
export class EventChain {
  /** The chain's id once known: it never changes once the chain started. */
  private meta: ChainMeta | null = null;
  private readonly previousHash: Statement<[number], string | null>;
  private readonly setLink: Statement<[string, string, number]>;

  constructor(
    private readonly db: Db,
    private readonly newChainId: () => string = randomUUID,
  ) {
    this.previousHash = db.prepare<[number], string | null>('SELECT chain_hash FROM events WHERE seq < ? ORDER BY seq DESC LIMIT 1').pluck();
    this.setLink = db.prepare('UPDATE events SET chain_prev = ?, chain_hash = ? WHERE seq = ?');
  }

  /** The chain's id and first seq, read once from meta (null: not started yet). */
  current(): ChainMeta | null {
    this.meta ??= readChainMeta(this.db);
    return this.meta;
  }

  /**
   * Before an event's insert (in its transaction): when the log has no chain yet, starts it with an
   * `audit_chain_started` record, inserted by `insert` (which returns its seq) and linked at once.
   */
  startIfNone(at: number, insert: (type: string, payload: string) => number): void {
    if (this.current()) return;
    const unchainedThrough = lastAssignedSeq(this.db);
    const data: Record<string, unknown> = unchainedThrough === 0 ? { reason: 'new_log' } : { reason: 'existing_log', unchained_through: unchainedThrough };
    const id = this.newChainId();
    const seq = insert(CHAIN_STARTED, JSON.stringify(data));
    const hash = chainHash(GENESIS_HASH, { chain: id, seq, at: new Date(at).toISOString(), door: null, type: CHAIN_STARTED, data });
    this.setLink.run(GENESIS_HASH, hash, seq);
    this.meta = { id, first_seq: seq };
    writeMeta(this.db, CHAIN_META_KEY, this.meta);
  }

  /** After an event's insert (in its transaction): chains it to the record before it. */
  link(seq: number, at: number, door: string | null, type: string, data: Record<string, unknown>): ChainLink {
    const chain = this.current()!.id;
    const prevHash = this.previousHash.get(seq) ?? GENESIS_HASH;
    // The wire event's data never holds an envelope field (toWire overwrites them): the hash covers what goes out.
    const content = hasEnvelopeField(data) ? dataOfWire(data) : data;
    const hash = chainHash(prevHash, { chain, seq, at: new Date(at).toISOString(), door, type, data: content });
    this.setLink.run(prevHash, hash, seq);
    return { chain, prevHash, hash };
  }
}

function hasEnvelopeField(data: Record<string, unknown>): boolean {
  for (const field of ENVELOPE_FIELDS) if (Object.hasOwn(data, field)) return true;
  return false;
}
