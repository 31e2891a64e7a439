import { describe, expect, it } from 'vitest';
import { CHAIN_STARTED, chainHash, GENESIS_HASH } from '../../src/protocol/auditChain.js';
import { type AuditRecord, type ExplainedRange, recordOfWire, verifyRecords } from '../../src/protocol/auditVerify.js';

const CHAIN = '9d7c2f0e-1b1a-4c53-8e0f-5a4b3c2d1e0f';
const OTHER = '1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b';

/** A chain as the agent writes it: a start record then `count` events, seqs from `first`, each linked to the one before. */
function chain(count: number, options: { id?: string; first?: number; existing?: boolean } = {}): AuditRecord[] {
  const id = options.id ?? CHAIN;
  const first = options.first ?? 1;
  const records: AuditRecord[] = [];
  let prev = GENESIS_HASH;
  for (let i = 0; i <= count; i++) {
    const seq = first + i;
    const start = i === 0;
    const data: Record<string, unknown> = start
      ? options.existing
        ? { reason: 'existing_log', unchained_through: first - 1 }
        : { reason: 'new_log' }
      : { kind: 'card', hint: `…${i}`, user: `u${i}` };
    const record: AuditRecord = {
      seq,
      chain: id,
      at: new Date(Date.UTC(2026, 2, 1, 8, 0, i)).toISOString(),
      door: start ? null : 'd1',
      type: start ? CHAIN_STARTED : 'access_granted',
      data,
      prevHash: prev,
      hash: '',
    };
    record.hash = chainHash(prev, { chain: id, seq, at: record.at, door: record.door, type: record.type, data });
    prev = record.hash;
    records.push(record);
  }
  return records;
}

const verify = (records: AuditRecord[], explain?: (m: { from: number; to: number }) => ExplainedRange[], lastSeq?: number) =>
  verifyRecords(records, { agent: 'front', explainMissing: explain, lastSeq });

describe('the verify walk', () => {
  it('an intact chain has no finding; its records are counted', () => {
    const { findings, summary } = verify(chain(20));
    expect(findings).toEqual([]);
    expect(summary).toMatchObject({ records: 21, chained: 21, unchained: 0, chains: 1, evicted: 0, findings: 0 });
  });

  it('a record whose content was changed is edited, named by agent, chain and seq; the records after it are not blamed', () => {
    const records = chain(10);
    records[4]!.data = { kind: 'card', hint: '…4', user: 'someone-else' };
    const { findings } = verify(records);
    expect(findings).toEqual([expect.objectContaining({ kind: 'edited', agent: 'front', chain: CHAIN, seq: 5, at: records[4]!.at })]);
    expect(findings[0]!.message).toMatch(/does not match its hash/);
  });

  it('a record changed with its hash recomputed breaks the next link: the changed record is named', () => {
    const records = chain(10);
    const r = records[4]!;
    r.data = { kind: 'card', hint: '…4', user: 'someone-else' };
    r.hash = chainHash(r.prevHash!, { chain: CHAIN, seq: r.seq, at: r.at, door: r.door, type: r.type, data: r.data });
    const { findings } = verify(records);
    expect(findings).toEqual([expect.objectContaining({ kind: 'edited', seq: 5 })]);
    expect(findings[0]!.message).toMatch(/hash recomputed, or replaced/);
  });

  it('a missing seq nothing explains is deleted; one the caller explains (evicted, pruned) is counted, not a finding', () => {
    const records = chain(10).filter((r) => r.seq !== 6);
    expect(verify(records).findings).toEqual([expect.objectContaining({ kind: 'deleted', seq: 6, toSeq: 6, at: null })]);
    const evicted = verify(records, (m) => [{ from: m.from, to: m.to, cause: 'evicted' }]);
    expect(evicted.findings).toEqual([]);
    expect(evicted.summary.evicted).toBe(1);
    const pruned = verify(
      chain(10).filter((r) => r.seq > 4),
      (m) => [{ from: m.from, to: m.to, cause: 'pruned' }],
    );
    expect(pruned.findings).toEqual([]);
    expect(pruned.summary.pruned).toBe(4);
  });

  it('a missing range only partly explained: the rest is deleted; a gap (not received) is a finding of its own', () => {
    const records = chain(20).filter((r) => r.seq < 5 || r.seq > 12);
    const { findings, summary } = verify(records, () => [{ from: 5, to: 9, cause: 'evicted' }]);
    expect(findings).toEqual([expect.objectContaining({ kind: 'deleted', seq: 10, toSeq: 12 })]);
    expect(summary.evicted).toBe(5);
    const gap = verify(records, (m) => [{ from: m.from, to: m.to, cause: 'gap' }]);
    expect(gap.findings).toEqual([expect.objectContaining({ kind: 'gap', seq: 5, toSeq: 12 })]);
  });

  it('the last records deleted: seqs after the last record up to the last assigned are deleted', () => {
    const { findings } = verify(chain(10).slice(0, 8), undefined, 11);
    expect(findings).toEqual([expect.objectContaining({ kind: 'deleted', seq: 9, toSeq: 11 })]);
  });

  it('two records with their seqs swapped are reordered, each naming the seq it was written as', () => {
    const records = chain(10);
    const [a, b] = [records[3]!, records[4]!];
    [a.seq, b.seq] = [b.seq, a.seq];
    const { findings } = verify([...records].sort((x, y) => x.seq - y.seq));
    expect(findings.map((f) => [f.kind, f.seq])).toEqual([
      ['reordered', 4],
      ['reordered', 5],
    ]);
    expect(findings[0]!.message).toMatch(/at seq 4 was written as seq 5/);
  });

  it('a record moved further away is reordered too, found through its link', () => {
    const records = chain(40);
    const moved = records.splice(5, 1)[0]!; // seq 6
    moved.seq = 41 + 30; // put after the end, far away
    const { findings } = verify([...records, moved]);
    expect(findings[0]).toMatchObject({ kind: 'deleted', seq: 6 });
    expect(findings).toContainEqual(expect.objectContaining({ kind: 'reordered', seq: 71 }));
  });

  it('a record without a hash inside the chain is inserted; so is one chained to an earlier record', () => {
    const records = chain(10);
    records.push({ seq: 12, chain: CHAIN, at: records[10]!.at, door: 'd1', type: 'access_granted', data: {}, prevHash: null, hash: null });
    expect(verify(records).findings).toEqual([expect.objectContaining({ kind: 'inserted', seq: 12 })]);

    const forged = chain(10);
    const to = forged[3]!; // chained to seq 4, written as seq 7, replacing the real 7
    const fake: AuditRecord = { seq: 7, chain: CHAIN, at: to.at, door: 'd1', type: 'access_granted', data: { forged: true }, prevHash: to.hash, hash: '' };
    fake.hash = chainHash(to.hash!, { chain: CHAIN, seq: 7, at: fake.at, door: fake.door, type: fake.type, data: fake.data });
    forged[6] = fake;
    const found = verify(forged).findings;
    expect(found[0]).toMatchObject({ kind: 'inserted', seq: 7 });
    expect(found[0]!.message).toMatch(/chained to seq 4, as another record is, not to seq 6/);
  });

  it('a second chain is restarted, named with its time; each chain is verified on its own', () => {
    const second = chain(5, { id: OTHER });
    second[3]!.data = { edited: true };
    const { findings, summary } = verify([...chain(5), ...second]);
    expect(findings).toEqual([
      expect.objectContaining({ kind: 'restarted', chain: OTHER, seq: 1, at: second[0]!.at }),
      expect.objectContaining({ kind: 'edited', chain: OTHER, seq: 4 }),
    ]);
    expect(summary.chains).toBe(2);
  });

  it('records before the chain are counted unchained; the chain of an existing log starts after them', () => {
    const before: AuditRecord[] = [1, 2, 3].map((seq) => ({
      seq,
      chain: null,
      at: '2026-01-01T00:00:00.000Z',
      door: 'd1',
      type: 'door_opened',
      data: {},
      prevHash: null,
      hash: null,
    }));
    const { findings, summary } = verify([...before, ...chain(5, { first: 4, existing: true })]);
    expect(findings).toEqual([]);
    expect(summary).toMatchObject({ unchained: 3, chained: 6 });
  });

  it('hashed records outside any known chain: an earlier chain was forgotten (restarted)', () => {
    const old = chain(4).map((r) => Object.assign(r, { chain: null }));
    const { findings } = verify([...old, ...chain(3, { first: 6, existing: true })]);
    expect(findings).toEqual([expect.objectContaining({ kind: 'restarted', chain: null, seq: 1, toSeq: 5 })]);
  });

  it('a chain whose start record is missing, unexplained: deleted', () => {
    expect(verify(chain(5).slice(1)).findings).toEqual([expect.objectContaining({ kind: 'deleted', seq: 1 })]);
  });

  it('findings are capped: a log edited throughout keeps maxFindings and counts the rest', () => {
    const records = chain(3000);
    for (const r of records) if (r.seq > 1) r.data = { changed: r.seq };
    const { findings, summary } = verifyRecords(records, { agent: 'front', maxFindings: 10 });
    expect(findings).toHaveLength(10);
    expect(summary.findings).toBe(3000);
    expect(findings[0]).toMatchObject({ kind: 'edited', seq: 2 });
  });

  it('recordOfWire reads a wire event as the service stored it: its hash verifies', () => {
    const [start, event] = chain(1);
    const wire = Object.assign(
      { id: 'front-2', seq: 2, at: event!.at, door: 'd1', type: 'access_granted', chain: CHAIN, prev_hash: start!.hash, hash: event!.hash },
      event!.data,
    );
    expect(verifyRecords([start!, recordOfWire(wire)], { agent: 'front' }).findings).toEqual([]);
    expect(recordOfWire(wire, 9).seq).toBe(9);
    expect(recordOfWire({ seq: 1, at: 'x', door: null, type: 'unlocked', chain: '' })).toMatchObject({ chain: null, hash: null, prevHash: null });
  });
});
