import { describe, expect, it } from 'vitest';
import { LINE_EVENT_BYTES, LineEventParser, encodeLineEvent } from '../../src/hardware/chardev/lineEvents.js';

const record = (offset: number, rising: boolean, timestampNs: bigint, seqno: number) => encodeLineEvent({ offset, rising, timestampNs, seqno });

describe('LineEventParser (struct gpio_v2_line_event, 48 bytes)', () => {
  it('decodes the kernel layout: timestamp in µs, edge, offset, sequence numbers', () => {
    const raw = Buffer.alloc(LINE_EVENT_BYTES);
    raw.writeBigUInt64LE(123_456_789_000n, 0); // 123.456789 s after boot
    raw.writeUInt32LE(2, 8); // GPIO_V2_LINE_EVENT_FALLING_EDGE
    raw.writeUInt32LE(17, 12);
    raw.writeUInt32LE(1, 16);
    raw.writeUInt32LE(1, 20);
    expect(new LineEventParser().push(raw)).toEqual([{ timestampUs: 123_456_789, rising: false, offset: 17, seqno: 1, lineSeqno: 1, afterLoss: false }]);
  });

  it('keeps a record split across reads for the next chunk', () => {
    const parser = new LineEventParser();
    const both = Buffer.concat([record(5, false, 1_000_000n, 1), record(5, true, 1_050_000n, 2)]);
    expect(parser.push(both.subarray(0, 30))).toEqual([]);
    expect(parser.push(both.subarray(30, 70)).map((e) => e.timestampUs)).toEqual([1000]);
    expect(parser.push(both.subarray(70)).map((e) => [e.timestampUs, e.rising])).toEqual([[1050, true]]);
  });

  it('marks the first event after a gap in the sequence (the kernel queue overflowed) and counts what was lost', () => {
    const parser = new LineEventParser();
    const events = parser.push(Buffer.concat([record(5, false, 1000n, 1), record(5, true, 2000n, 2), record(6, false, 9000n, 7)]));
    expect(events.map((e) => e.afterLoss)).toEqual([false, false, true]);
    expect(parser.lost).toBe(4);
  });

  it('follows the sequence number through its 32-bit wrap without reporting a loss', () => {
    const parser = new LineEventParser();
    const events = parser.push(Buffer.concat([record(5, false, 1000n, 0xffff_ffff), record(5, true, 2000n, 0)]));
    expect(events.map((e) => e.afterLoss)).toEqual([false, false]);
    expect(parser.lost).toBe(0);
  });

  it('skips a record whose id is neither edge (corrupt) and goes on', () => {
    const bad = record(5, false, 1000n, 1);
    bad.writeUInt32LE(7, 8);
    const events = new LineEventParser().push(Buffer.concat([bad, record(5, true, 2000n, 2)]));
    expect(events.map((e) => e.timestampUs)).toEqual([2]);
  });

  it('keeps µs exact for timestamps beyond 32 bits of nanoseconds (weeks of uptime)', () => {
    const ns = 30n * 86_400n * 1_000_000_000n + 123_456_000n; // 30 days
    expect(new LineEventParser().push(record(1, true, ns, 1))[0]!.timestampUs).toBe(Number(ns / 1000n));
  });

  it("edges lost before the first read count too (the kernel numbers a request's events from 1)", () => {
    const parser = new LineEventParser();
    expect(parser.push(record(5, true, 1000n, 9)).map((e) => e.afterLoss)).toEqual([true]);
    expect(parser.lost).toBe(8);
  });
});
