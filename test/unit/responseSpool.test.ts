import { readdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ResponseSpool, SpoolLimitError } from '../../src/sync/responseSpool.js';
import { tempDir } from '../support/cli.js';

const tmp = tempDir('door-agent-spool-');
afterAll(tmp.cleanup);

function readAll(spool: ResponseSpool, chunk: number): Buffer {
  const read = spool.source();
  const parts: Buffer[] = [];
  for (;;) {
    const buf = Buffer.alloc(chunk);
    const n = read(buf);
    if (n === 0) return Buffer.concat(parts);
    parts.push(buf.subarray(0, n));
  }
}

describe('ResponseSpool (an HTTP answer kept out of the heap)', () => {
  const body = Buffer.from(Array.from({ length: 5000 }, (_, i) => `{"email_id":${i}},`).join(''));
  const pieces = Array.from({ length: Math.ceil(body.length / 777) }, (_, i) => body.subarray(i * 777, (i + 1) * 777));

  it('gives back exactly what it was given, held in memory while small', () => {
    const spool = new ResponseSpool(tmp.path, { memoryBytes: 1 << 20, maxBytes: 1 << 30 });
    for (const p of pieces) spool.append(p);
    expect(spool.size).toBe(body.length);
    expect(readAll(spool, 4096).equals(body)).toBe(true);
    expect(readAll(spool, 3).equals(body)).toBe(true); // every source reads from the start
    expect(spool.head(12)).toBe('{"email_id":');
    spool.dispose();
  });

  it('spills to a file that is already unlinked: nothing is left in the directory, even before dispose', () => {
    const spool = new ResponseSpool(tmp.path, { memoryBytes: 1000, maxBytes: 1 << 30 });
    for (const p of pieces) spool.append(p);
    expect(readdirSync(tmp.path)).toEqual([]);
    expect(readAll(spool, 1 << 16).equals(body)).toBe(true);
    expect(spool.text()).toBe(body.toString());
    spool.dispose();
  });

  it('refuses an answer larger than its limit (a broken service must not fill the disk)', () => {
    const spool = new ResponseSpool(tmp.path, { memoryBytes: 1000, maxBytes: 10_000 });
    expect(() => {
      for (const p of pieces) spool.append(p);
    }).toThrow(SpoolLimitError);
    expect(spool.size).toBeLessThanOrEqual(10_000);
    spool.dispose();
  });
});
