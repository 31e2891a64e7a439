import { describe, expect, it } from 'vitest';
import { CoalescedReads } from '../../src/util/coalescedReads.js';

/** A database stand-in whose reads end when the test says: each read's keys, and the value each key then had. */
function heldStore() {
  const values = new Map<string, number>();
  const reads: Array<{ keys: string[]; end: () => void; fail: (err: Error) => void }> = [];
  const reader = new CoalescedReads<string, number | null>(
    (keys) =>
      new Promise((resolve, reject) => {
        // The values as they are when the read starts: what a database read would see.
        const seen = new Map(keys.filter((k) => values.has(k)).map((k) => [k, values.get(k)!]));
        reads.push({ keys, end: () => resolve(seen), fail: reject });
      }),
    null,
  );
  return { values, reads, reader };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('CoalescedReads: the reads asked for while one is in flight go together as one', () => {
  it('idle, a read goes at once, alone; those asked meanwhile wait and then go as one read of every key', async () => {
    const { values, reads, reader } = heldStore();
    values.set('a', 1).set('b', 2).set('c', 3);
    const first = reader.read('a');
    expect(reads.map((r) => r.keys)).toEqual([['a']]);
    const waiting = [reader.read('b'), reader.read('c'), reader.read('b'), reader.read('missing')];
    await tick();
    expect(reads).toHaveLength(1); // nothing more goes to the database while the first read is there
    reads[0]!.end();
    expect(await first).toBe(1);
    await tick();
    expect(reads.map((r) => r.keys)).toEqual([['a'], ['b', 'c', 'missing']]);
    reads[1]!.end();
    expect(await Promise.all(waiting)).toEqual([2, 3, 2, null]);
  });

  it('no caller is answered by a read that started before it asked: a change made meanwhile is in its answer', async () => {
    const { values, reads, reader } = heldStore();
    values.set('key', 1);
    const before = reader.read('key'); // its read starts now, seeing 1
    values.set('key', 2); // committed after that read started, before the next caller asks
    const after = reader.read('key');
    reads[0]!.end();
    expect(await before).toBe(1);
    await tick();
    reads[1]!.end();
    expect(await after).toBe(2);
  });

  it('a failed read fails every caller that shared it, and the next callers get a read of their own', async () => {
    const { values, reads, reader } = heldStore();
    values.set('a', 1);
    const first = reader.read('a');
    const shared = [reader.read('a'), reader.read('b')];
    reads[0]!.end();
    await first;
    await tick();
    reads[1]!.fail(new Error('the database went away'));
    for (const answer of shared) await expect(answer).rejects.toThrow('the database went away');
    const later = reader.read('a');
    await tick();
    reads[2]!.end();
    expect(await later).toBe(1);
  });

  it('a reader that throws before it returns a promise fails its callers, never the process', async () => {
    const reader = new CoalescedReads<string, number>(() => {
      throw new Error('bad statement');
    }, 0);
    await expect(reader.read('a')).rejects.toThrow('bad statement');
    await expect(reader.read('b')).rejects.toThrow('bad statement');
  });
});
