/**
 * The kernel's edge records, `struct gpio_v2_line_event` (<linux/gpio.h>), 48 bytes each, little-endian on
 * every board we run on: u64 timestamp_ns, u32 id (1 rising, 2 falling), u32 offset, u32 seqno (per request),
 * u32 line_seqno, u32 padding[6]. The simulated driver's edge FIFO carries the same records, so one parser
 * serves both and the simulator exercises the real path.
 */

/** @internal */
export const LINE_EVENT_BYTES = 48;
const RISING = 1;
const FALLING = 2;

export interface LineEvent {
  offset: number;
  rising: boolean;
  /** CLOCK_MONOTONIC, microseconds (exact to the µs for 104 days of uptime, then within a µs). */
  timestampUs: number;
  /** Sequence number among all the lines of the request: a gap means the kernel's queue overflowed. */
  seqno: number;
  lineSeqno: number;
}

/** Splits a byte stream into line events, keeping a partial record for the next chunk. */
export class LineEventParser {
  private rest: Buffer = Buffer.alloc(0);
  // The kernel numbers a request's events from 1: a first record numbered higher means edges were lost before
  // the first read.
  private lastSeqno = 0;
  /** Events the kernel dropped (seqno gaps) since the parser started. */
  lost = 0;

  /**
   * The whole records in `chunk` (after what was left over), each with `afterLoss` when the sequence skipped
   * before it. Records with an id that is neither edge are skipped as corrupt.
   */
  push(chunk: Buffer): Array<LineEvent & { afterLoss: boolean }> {
    const data = this.rest.length > 0 ? Buffer.concat([this.rest, chunk]) : chunk;
    const whole = data.length - (data.length % LINE_EVENT_BYTES);
    const out: Array<LineEvent & { afterLoss: boolean }> = [];
    for (let at = 0; at < whole; at += LINE_EVENT_BYTES) {
      const id = data.readUInt32LE(at + 8);
      if (id !== RISING && id !== FALLING) continue;
      const seqno = data.readUInt32LE(at + 16);
      // seqno counts from 1 per request; it is 32-bit, so compare modulo 2^32.
      const skipped = (seqno - this.lastSeqno - 1) >>> 0;
      this.lastSeqno = seqno;
      if (skipped > 0 && skipped < 0x8000_0000) this.lost += skipped;
      out.push({
        timestampUs: (data.readUInt32LE(at + 4) * 0x1_0000_0000 + data.readUInt32LE(at)) / 1000,
        rising: id === RISING,
        offset: data.readUInt32LE(at + 12),
        seqno,
        lineSeqno: data.readUInt32LE(at + 20),
        afterLoss: skipped > 0 && skipped < 0x8000_0000,
      });
    }
    this.rest = Buffer.from(data.subarray(whole));
    return out;
  }
}

/** One record as the kernel writes it (the simulator, the tests and the bench write edges with this). @internal */
export function encodeLineEvent(event: { offset: number; rising: boolean; timestampNs: bigint; seqno: number; lineSeqno?: number }): Buffer {
  const buf = Buffer.alloc(LINE_EVENT_BYTES);
  buf.writeBigUInt64LE(event.timestampNs, 0);
  buf.writeUInt32LE(event.rising ? RISING : FALLING, 8);
  buf.writeUInt32LE(event.offset, 12);
  buf.writeUInt32LE(event.seqno >>> 0, 16);
  buf.writeUInt32LE((event.lineSeqno ?? event.seqno) >>> 0, 20);
  return buf;
}

/** CLOCK_MONOTONIC in µs, the clock of the kernel's edge timestamps (Node's hrtime reads the same clock). */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}
