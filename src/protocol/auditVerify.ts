import { CHAIN_STARTED, chainHash, dataOfWire, GENESIS_HASH } from './auditChain.js';

/**
 * The verify walk of docs/audit.md ("The chain"), shared by `door-agent audit verify` (the board's state.db) and
 * `door-agent service audit verify` (the service's copy). Pure and streaming: records are fed one at a time, in
 * order, and only a few records of lookback are kept, so a chain of millions of records is walked in little memory.
 *
 * Usage: one ChainVerifier per agent; `add` each record (the unchained ones first, then each chain in the order
 * the chains started, each in seq order); `finish` returns the findings, the first bad record first.
 */

/** One record as the walk reads it: an agent's events row, or a wire event the service stored (recordOfWire). */
export interface AuditRecord {
  seq: number;
  /** The chain's id; null (or ''): a record from before the chain started, which carries no hash. */
  chain: string | null;
  /** As on the wire: ISO 8601 with milliseconds, UTC. */
  at: string;
  door: string | null;
  type: string;
  /** Every other field of the event (dataOfWire). */
  data: Record<string, unknown>;
  prevHash: string | null;
  hash: string | null;
}

/** What is wrong with a record (docs/audit.md's table). `differs` is the board's comparison with the service. */
export type FindingKind = 'edited' | 'deleted' | 'inserted' | 'reordered' | 'gap' | 'restarted' | 'differs';

export interface AuditFinding {
  kind: FindingKind;
  agent: string;
  /** null: the records from before the chain. */
  chain: string | null;
  /** The first bad record's seq (a missing range's first seq). */
  seq: number;
  /** A missing range's last seq (deleted, gap); else equal to seq. */
  toSeq: number;
  /** The record's time (ISO 8601) when there is a record; null for missing seqs. */
  at: string | null;
  /** What is wrong, in words an operator can act on. */
  message: string;
}

/** Why seqs are missing, when the caller knows: not a finding for `evicted` (board) and `pruned` (retention). */
export type MissingCause = 'evicted' | 'pruned' | 'gap';

export interface MissingRange {
  chain: string | null;
  from: number;
  to: number;
}

export interface ExplainedRange {
  from: number;
  to: number;
  cause: MissingCause;
}

export interface ChainVerifyOptions {
  agent: string;
  /**
   * Seqs from..to (inclusive) of a chain are not in the walk: which parts a known cause explains (called in seq
   * order; the board counts them against its eviction counter, the service against retention and its gaps). A
   * part no range covers is `deleted`; a `gap` is a finding of its own. Missing seqs among the unchained records
   * are not looked for (they are not verifiable).
   */
  explainMissing?: (missing: MissingRange) => readonly ExplainedRange[];
  /**
   * The seq of a chain's first record when the caller knows it (the board's meta), for a chain whose first record
   * is gone (evicted): the seqs missing before the first one there is are looked for from there.
   */
  chainStart?: (chain: string) => number | undefined;
  /** At most this many findings are kept (default 1000); the rest are counted in the summary. */
  maxFindings?: number;
}

export interface ChainVerifySummary {
  /** Every record fed. */
  records: number;
  /** Records of a chain, and records from before any chain. */
  chained: number;
  unchained: number;
  /** The chains seen (restarts included). */
  chains: number;
  /** Missing seqs the caller explained: the board's eviction, the service's retention. */
  evicted: number;
  pruned: number;
  /** Every finding, those past maxFindings included. */
  findings: number;
}

export interface ChainVerifyResult {
  /** The first bad record first. */
  findings: AuditFinding[];
  summary: ChainVerifySummary;
}

/** An AuditRecord of a wire event (what the service stored, what MQTT carried); `seq` overrides the event's own. */
export function recordOfWire(wire: Record<string, unknown>, seq?: number): AuditRecord {
  const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
  return {
    seq: seq ?? (typeof wire.seq === 'number' ? wire.seq : 0),
    chain: text(wire.chain),
    at: typeof wire.at === 'string' ? wire.at : '',
    door: text(wire.door),
    type: typeof wire.type === 'string' ? wire.type : '',
    data: dataOfWire(wire),
    prevHash: text(wire.prev_hash),
    hash: text(wire.hash),
  };
}

/** How many seqs away a moved record is looked for (a record that verifies at another seq is `reordered`). */
const MOVE_REACH = 4;
/** Past this many findings the walk stops looking for where a bad record came from (a rewritten log: each one fails). */
const SEARCH_FINDINGS = 100;
/** How many recent records' hashes are remembered, to tell a record chained to an earlier one (inserted). */
const LOOKBACK = 64;

interface Seen {
  seq: number;
  hash: string | null;
  at: string;
  /** Its own hash verified at its seq. */
  sound: boolean;
}

/** Walks one agent's records: see the module's comment. */
export class ChainVerifier {
  /** Each finding with its chain's place in the walk (0: the unchained records), to sort them. */
  private readonly findings: Array<{ chainIndex: number; finding: AuditFinding }> = [];
  private readonly summary: ChainVerifySummary = { records: 0, chained: 0, unchained: 0, chains: 0, evicted: 0, pruned: 0, findings: 0 };
  private readonly maxFindings: number;
  private chain: string | null = null;
  private previous: Seen | null = null;
  /** The recent records of the current chain by hash, and the hashes some record already names as its predecessor. */
  private readonly recent = new Map<string, number>();
  private readonly claimed = new Set<string>();
  private readonly recentOrder: string[] = [];
  /** The last unchained record's seq (a chain that follows begins after it). */
  private lastUnchained = 0;
  private unchainedHashed: { from: number; to: number; at: string } | null = null;
  private readonly chainsSeen = new Set<string>();

  constructor(private readonly options: ChainVerifyOptions) {
    this.maxFindings = options.maxFindings ?? 1000;
  }

  /** Feeds the next record, in the order the module's comment says. */
  add(record: AuditRecord): void {
    this.summary.records++;
    const chain = record.chain === '' ? null : record.chain;
    if (chain === null) {
      this.addUnchained(record);
      return;
    }
    this.summary.chained++;
    if (chain !== this.chain) this.startChain(chain, record);
    this.addChained(chain, record);
  }

  /**
   * Ends the walk. `lastSeq`: the last seq the current chain's log assigned (the board's sqlite_sequence): seqs
   * after the last record up to it are missing.
   */
  finish(options: { lastSeq?: number } = {}): ChainVerifyResult {
    this.flushUnchainedHashed();
    const { lastSeq } = options;
    if (this.chain !== null && this.previous && lastSeq !== undefined && lastSeq > this.previous.seq) {
      this.missing(this.chain, this.previous.seq + 1, lastSeq);
    }
    this.findings.sort((a, b) => a.chainIndex - b.chainIndex || a.finding.seq - b.finding.seq);
    return { findings: this.findings.map((f) => f.finding), summary: this.summary };
  }

  private addUnchained(record: AuditRecord): void {
    this.summary.unchained++;
    this.lastUnchained = Math.max(this.lastUnchained, record.seq);
    // A hashed record outside every known chain: a chain whose start was lost (its id forgotten, a new one begun).
    if (record.hash === null) return;
    if (this.unchainedHashed && this.unchainedHashed.to === record.seq - 1) this.unchainedHashed.to = record.seq;
    else {
      this.flushUnchainedHashed();
      this.unchainedHashed = { from: record.seq, to: record.seq, at: record.at };
    }
  }

  private flushUnchainedHashed(): void {
    const run = this.unchainedHashed;
    if (!run) return;
    this.unchainedHashed = null;
    this.report({
      kind: 'restarted',
      chain: null,
      seq: run.from,
      toSeq: run.to,
      at: run.at,
      message: `records ${range(run.from, run.to)} carry hashes but belong to no known chain: an earlier chain was forgotten and a new one started (compare with the service's copy)`,
    });
  }

  private startChain(chain: string, first: AuditRecord): void {
    this.flushUnchainedHashed();
    this.summary.chains++;
    if (this.chainsSeen.size > 0 && !this.chainsSeen.has(chain)) {
      this.report({
        kind: 'restarted',
        chain,
        seq: first.seq,
        toSeq: first.seq,
        at: first.at,
        message: `a new chain started at ${first.at} (after chain ${this.chain ?? '?'}): the log was replaced (a new state.db) or its chain reset`,
      });
    }
    this.chainsSeen.add(chain);
    this.chain = chain;
    this.previous = null;
    this.recent.clear();
    this.claimed.clear();
    this.recentOrder.length = 0;
    // Where the chain begins: right after the unchained records (an existing log), else at 1 (a new log).
    const unchainedThrough = first.type === CHAIN_STARTED ? first.data.unchained_through : undefined;
    const expected =
      first.type === CHAIN_STARTED
        ? typeof unchainedThrough === 'number'
          ? unchainedThrough + 1
          : 1
        : (this.options.chainStart?.(chain) ?? this.lastUnchained + 1);
    if (first.seq > expected) this.missing(chain, expected, first.seq - 1);
    if (first.type !== CHAIN_STARTED && first.seq <= expected) {
      this.report({
        kind: 'deleted',
        chain,
        seq: first.seq,
        toSeq: first.seq,
        at: first.at,
        message: `the chain's first record (${CHAIN_STARTED}) is missing: seq ${first.seq} is the first there is`,
      });
    }
  }

  private addChained(chain: string, record: AuditRecord): void {
    const previous = this.previous;
    if (previous && record.seq <= previous.seq) {
      this.report(this.at(record, 'reordered', `seq ${record.seq} comes after seq ${previous.seq} in the log`));
      return;
    }
    if (previous && record.seq > previous.seq + 1) this.missing(chain, previous.seq + 1, record.seq - 1);
    const sound = this.checkRecord(chain, record, previous);
    const seen: Seen = { seq: record.seq, hash: record.hash, at: record.at, sound };
    this.previous = seen;
    if (record.hash !== null) this.remember(record.hash, record.seq);
    if (record.prevHash !== null) this.claimed.add(record.prevHash);
  }

  /** Checks a record's own hash and its link to the record before: whether the record itself is sound. */
  private checkRecord(chain: string, record: AuditRecord, previous: Seen | null): boolean {
    if (record.hash === null || record.prevHash === null) {
      this.report(this.at(record, 'inserted', `seq ${record.seq} has no hash inside chain ${chain}: it was added to the log, not written by the agent`));
      return false;
    }
    if (this.hashAt(chain, record, record.seq) !== record.hash) {
      const moved = this.movedFrom(chain, record);
      if (moved !== null) this.report(this.at(record, 'reordered', `the record at seq ${record.seq} was written as seq ${moved}: records were moved`));
      else this.report(this.at(record, 'edited', `seq ${record.seq} (${record.type}) does not match its hash: its content was changed`));
      return false;
    }
    if (record.type === CHAIN_STARTED && record.prevHash === GENESIS_HASH) {
      if (previous !== null) {
        this.report(this.at(record, 'restarted', `a second chain start inside chain ${chain} at seq ${record.seq} (${record.at})`));
      }
      return true;
    }
    if (previous === null) return true; // the records before were explained as missing (evicted, pruned) or reported
    if (!previous.sound) return true; // the record before is already reported: a broken link after it adds nothing
    if (record.prevHash === previous.hash && record.seq === previous.seq + 1) return true;
    const namedSeq = this.recent.get(record.prevHash);
    if (record.prevHash === previous.hash) {
      this.report(
        this.at(record, 'inserted', `seq ${record.seq} is chained to seq ${previous.seq} although seqs between are missing: it was written in their place`),
      );
    } else if (namedSeq !== undefined) {
      const twice = this.claimed.has(record.prevHash) ? ', as another record is' : '';
      this.report(this.at(record, 'inserted', `seq ${record.seq} is chained to seq ${namedSeq}${twice}, not to seq ${previous.seq}: it was inserted`));
    } else if (record.seq !== previous.seq + 1) {
      return true; // seqs between are missing (reported or explained): the link cannot be checked
    } else {
      this.report({
        kind: 'edited',
        chain,
        seq: previous.seq,
        toSeq: previous.seq,
        at: previous.at,
        message: `seq ${previous.seq} is not the record seq ${record.seq} was chained to: it was changed and its hash recomputed, or replaced`,
      });
    }
    return true;
  }

  /** The seq near this one at which the record's hash verifies (it was moved from there), or null. */
  private movedFrom(chain: string, record: AuditRecord): number | null {
    if (this.summary.findings >= SEARCH_FINDINGS) return null;
    const linked = this.recent.get(record.prevHash ?? '');
    if (linked !== undefined && linked + 1 !== record.seq && this.hashAt(chain, record, linked + 1) === record.hash) return linked + 1;
    for (let step = 1; step <= MOVE_REACH; step++) {
      for (const seq of [record.seq - step, record.seq + step]) {
        if (seq >= 1 && this.hashAt(chain, record, seq) === record.hash) return seq;
      }
    }
    return null;
  }

  private hashAt(chain: string, record: AuditRecord, seq: number): string {
    return chainHash(record.prevHash ?? '', { chain, seq, at: record.at, door: record.door, type: record.type, data: record.data });
  }

  private remember(hash: string, seq: number): void {
    this.recent.set(hash, seq);
    this.recentOrder.push(hash);
    if (this.recentOrder.length > LOOKBACK) {
      const old = this.recentOrder.shift()!;
      this.recent.delete(old);
      this.claimed.delete(old);
    }
  }

  /** Seqs from..to of a chain are not there: explained by the caller, or deleted (gap: a finding of its own). */
  private missing(chain: string, from: number, to: number): void {
    const explained = [...(this.options.explainMissing?.({ chain, from, to }) ?? [])]
      .map((r) => ({ from: Math.max(r.from, from), to: Math.min(r.to, to), cause: r.cause }))
      .filter((r) => r.from <= r.to)
      .sort((a, b) => a.from - b.from);
    let next = from;
    const deleted = (upTo: number) => {
      if (upTo >= next) {
        this.report({
          kind: 'deleted',
          chain,
          seq: next,
          toSeq: upTo,
          at: null,
          message: `${upTo > next ? 'records' : 'record'} ${range(next, upTo)} missing, and no eviction or retention explains ${upTo > next ? 'them' : 'it'}: deleted`,
        });
      }
    };
    for (const part of explained) {
      if (part.to < next) continue;
      deleted(part.from - 1);
      const start = Math.max(part.from, next);
      const count = part.to - start + 1;
      if (part.cause === 'evicted') this.summary.evicted += count;
      else if (part.cause === 'pruned') this.summary.pruned += count;
      else {
        this.report({
          kind: 'gap',
          chain,
          seq: start,
          toSeq: part.to,
          at: null,
          message: `${count > 1 ? 'records' : 'record'} ${range(start, part.to)} not received from the agent (yet)`,
        });
      }
      next = part.to + 1;
    }
    deleted(to);
  }

  private at(record: AuditRecord, kind: FindingKind, message: string): Omit<AuditFinding, 'agent'> {
    return { kind, chain: record.chain === '' ? null : record.chain, seq: record.seq, toSeq: record.seq, at: record.at, message };
  }

  private report(finding: Omit<AuditFinding, 'agent'>): void {
    this.summary.findings++;
    const chainIndex = finding.chain === null ? 0 : this.summary.chains;
    if (this.findings.length < this.maxFindings) this.findings.push({ chainIndex, finding: Object.assign({ agent: this.options.agent }, finding) });
  }
}

/** Walks records already at hand (a test, a small chain): the same as feeding a ChainVerifier. @internal */
export function verifyRecords(records: Iterable<AuditRecord>, options: ChainVerifyOptions & { lastSeq?: number }): ChainVerifyResult {
  const verifier = new ChainVerifier(options);
  for (const record of records) verifier.add(record);
  return verifier.finish({ lastSeq: options.lastSeq });
}

/** Describes a seq range for a finding's words. */
function range(from: number, to: number): string {
  return from === to ? `seq ${from}` : `seqs ${from}-${to}`;
}
