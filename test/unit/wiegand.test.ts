import { describe, expect, it } from 'vitest';
import { decodeBits, edgesOf, encodeCard, encodeKey, FormatSet, WiegandDecoder, type WiegandEdge, type WiegandFrame } from '../../src/core/wiegand.js';
import { BUILTIN_FORMATS, cardNumber } from '../../src/core/wiegandFormats.js';

/** A decoder that takes only the named built-in formats. */
const only = (...names: string[]) => new WiegandDecoder(new FormatSet(BUILTIN_FORMATS.filter((f) => names.includes(f.name))));

/** The bits of a card frame with its parity, as a reader sends them (most significant first). */
function cardBits(length: 26 | 34 | 37, data: bigint): number[] {
  const dataBits = Array.from({ length: length - 2 }, (_, i) => Number((data >> BigInt(length - 3 - i)) & 1n));
  const evenEnd = { 26: 12, 34: 16, 37: 18 }[length];
  const oddStart = { 26: 13, 34: 17, 37: 18 }[length];
  const bits = [0, ...dataBits, 0];
  bits[0] = bits.slice(1, evenEnd + 1).reduce((a, b) => a + b, 0) % 2; // even over [0, evenEnd]
  bits[length - 1] = 1 - (bits.slice(oddStart, length - 1).reduce((a, b) => a + b, 0) % 2); // odd over [oddStart, end]
  return bits;
}

const keyBits = (value: number, eight = false) => {
  const low = [3, 2, 1, 0].map((s) => (value >> s) & 1);
  return eight ? [...low.map((b) => 1 - b), ...low] : low;
};

/** The edges of `bits` on the wire: each bit a low pulse on D0 or D1. */
function wire(bits: number[], options: { startUs?: number; pulseUs?: (i: number) => number; intervalUs?: (i: number) => number } = {}): WiegandEdge[] {
  const edges: WiegandEdge[] = [];
  let t = options.startUs ?? 1_000_000;
  bits.forEach((bit, i) => {
    const line = bit === 1 ? 'd1' : 'd0';
    edges.push({ line, rising: false, atUs: t }, { line, rising: true, atUs: t + (options.pulseUs?.(i) ?? 50) });
    t += options.intervalUs?.(i) ?? 1500;
  });
  return edges;
}

function decode(edges: WiegandEdge[], decoder = new WiegandDecoder()): WiegandFrame[] {
  const sorted = [...edges].sort((a, b) => a.atUs - b.atUs);
  const frames = sorted.flatMap((e) => decoder.push(e));
  return [...frames, ...decoder.flush(sorted[sorted.length - 1]!.atUs + 1_000_000)];
}

const H10301 = 123n * 65536n + 45678n;

describe('Wiegand frames from synthetic edge streams', () => {
  it('a 26-bit card at exact timings: facility, card, and the number the service stores', () => {
    const [frame] = decode(wire(cardBits(26, H10301)));
    expect(frame).toEqual({
      kind: 'card',
      format: 'H10301',
      bits: 26,
      data: H10301,
      facility: 123n,
      card: 45678n,
      raw: BigInt(`0b${cardBits(26, H10301).join('')}`),
    });
    expect(cardNumber(frame as Extract<WiegandFrame, { kind: 'card' }>, 'data')).toBe('8106606');
    expect(cardNumber(frame as Extract<WiegandFrame, { kind: 'card' }>, 'facility_card')).toBe('8106606');
  });

  it('34- and 37-bit (H10304) cards; for 37 bits the two numberings differ', () => {
    expect(decode(wire(cardBits(34, 0xbeefn * 65536n + 0x1234n)))).toMatchObject([
      { kind: 'card', format: 'H10306', bits: 34, data: 0xbeefn * 65536n + 0x1234n, facility: 0xbeefn, card: 0x1234n },
    ]);
    const data = 1234n * 524288n + 300000n;
    const [frame] = decode(wire(cardBits(37, data)), only('H10304')) as Array<Extract<WiegandFrame, { kind: 'card' }>>;
    expect(frame).toMatchObject({ kind: 'card', bits: 37, facility: 1234n, card: 300000n });
    expect(cardNumber(frame!, 'data')).toBe(String(data));
    expect(cardNumber(frame!, 'facility_card')).toBe(String(1234 * 65536 + 300000));
  });

  it('decodes through jitter: pulses of 20-200 µs, bits 0.5-3 ms apart', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let round = 0; round < 200; round++) {
      const edges = wire(cardBits(26, H10301), { pulseUs: () => 20 + random() * 180, intervalUs: () => 500 + random() * 2500 });
      expect(decode(edges), `round ${round}`).toEqual([
        { kind: 'card', format: 'H10301', bits: 26, data: H10301, facility: 123n, card: 45678n, raw: BigInt(`0b${cardBits(26, H10301).join('')}`) },
      ]);
    }
  });

  it('a missing bit, a flipped bit, a format not allowed: dropped with the reason, never a card', () => {
    const bits = cardBits(26, H10301);
    expect(decode(wire(bits.filter((_, i) => i !== 7)))).toEqual([{ kind: 'dropped', bits: 25, reason: 'bit_count' }]);
    expect(decode(wire(bits.map((b, i) => (i === 5 ? 1 - b : b))))).toEqual([{ kind: 'dropped', bits: 26, reason: 'parity' }]);
    expect(decode(wire(bits.map((b, i) => (i === 20 ? 1 - b : b))))).toEqual([{ kind: 'dropped', bits: 26, reason: 'parity' }]);
    expect(decode(wire(cardBits(34, 99n)), only('H10301'))).toEqual([{ kind: 'dropped', bits: 34, reason: 'bit_count' }]);
  });

  it('a glitch (a 3 µs pulse) is not a bit; a glitch alone is reported as such', () => {
    const edges = wire(cardBits(26, H10301));
    edges.push({ line: 'd1', rising: false, atUs: 1_000_000 + 10 * 1500 + 700 }, { line: 'd1', rising: true, atUs: 1_000_000 + 10 * 1500 + 703 });
    expect(decode(edges)).toEqual([
      { kind: 'card', format: 'H10301', bits: 26, data: H10301, facility: 123n, card: 45678n, raw: BigInt(`0b${cardBits(26, H10301).join('')}`) },
    ]);
    expect(
      decode([
        { line: 'd0', rising: false, atUs: 5 },
        { line: 'd0', rising: true, atUs: 7 },
      ]),
    ).toEqual([{ kind: 'dropped', bits: 0, reason: 'glitch_only' }]);
  });

  it('a bounce (a second pulse 80 µs after the first), both lines low at once, a line stuck low: the frame is dropped', () => {
    const bounce = wire(cardBits(26, H10301));
    bounce.push({ line: 'd0', rising: false, atUs: 1_000_000 + 3 * 1500 + 80 }, { line: 'd0', rising: true, atUs: 1_000_000 + 3 * 1500 + 130 });
    expect(decode(bounce)).toMatchObject([{ kind: 'dropped', reason: 'bounce' }]);
    const overlap = wire(cardBits(26, H10301));
    const otherLine = cardBits(26, H10301)[4] === 1 ? 'd0' : 'd1'; // low while bit 4's own line is low
    overlap.push({ line: otherLine, rising: false, atUs: 1_000_000 + 4 * 1500 + 10 }, { line: otherLine, rising: true, atUs: 1_000_000 + 4 * 1500 + 40 });
    expect(decode(overlap)).toMatchObject([{ kind: 'dropped', reason: 'overlap' }]);
    const stuck = wire(cardBits(26, H10301)).slice(0, -1); // the last pulse never ends
    expect(decode(stuck)).toMatchObject([{ kind: 'dropped', reason: 'stuck_low' }]);
    expect(decode(wire(cardBits(26, H10301), { pulseUs: (i) => (i === 9 ? 1200 : 50) }))).toMatchObject([{ kind: 'dropped', reason: 'stuck_low' }]);
  });

  it('two frames back to back (30 ms apart) are two cards; 10 ms apart they run together and are dropped', () => {
    const first = wire(cardBits(26, H10301));
    const second = wire(cardBits(26, 7n), { startUs: 1_000_000 + 25 * 1500 + 30_000 });
    expect(decode([...first, ...second]).map((f) => (f.kind === 'card' ? f.card : f.kind))).toEqual([45678n, 7n]);
    const tooClose = wire(cardBits(26, 7n), { startUs: 1_000_000 + 25 * 1500 + 10_000 });
    expect(decode([...first, ...tooClose])).toEqual([{ kind: 'dropped', bits: 52, reason: 'bit_count' }]);
  });

  it('a slow event loop: a burst read late decodes the same; a flush before the gap has passed waits', () => {
    const decoder = new WiegandDecoder();
    const edges = [...wire(cardBits(26, H10301)), ...wire(keyBits(5), { startUs: 1_200_000 }), ...wire(keyBits(11), { startUs: 1_300_000 })];
    // Read 2 s late, all at once: the kernel's timestamps, not the reading time, separate the frames.
    const frames = edges.flatMap((e) => decoder.push(e));
    expect(frames.map((f) => f.kind)).toEqual(['card', 'key']);
    const last = edges[edges.length - 1]!.atUs;
    expect(decoder.flush(last + 10_000)).toEqual([]); // the gap has not passed: the '#' frame may still grow
    expect(decoder.pending).toBe(true);
    expect(decoder.flush(last + 3_000_000)).toEqual([{ kind: 'key', key: '#' }]);
    expect(decoder.pending).toBe(false);
  });

  it('keypad frames: 4-bit keys 0-9, * and #; 8-bit keys checked against their complement', () => {
    expect([0, 9, 10, 11].map((k) => decodeBits(keyBits(k)))).toEqual([
      { kind: 'key', key: '0' },
      { kind: 'key', key: '9' },
      { kind: 'key', key: '*' },
      { kind: 'key', key: '#' },
    ]);
    expect(decodeBits(keyBits(7, true))).toEqual({ kind: 'key', key: '7' });
    expect(decodeBits([1, 1, 1, 1, 0, 1, 1, 1])).toEqual({ kind: 'dropped', bits: 8, reason: 'parity' });
    expect(decodeBits(keyBits(13))).toEqual({ kind: 'dropped', bits: 4, reason: 'bad_key' });
  });

  it('edges lost before an edge (kernel queue overflow) drop the frame under way and the one it starts', () => {
    const decoder = new WiegandDecoder();
    const first = wire(cardBits(26, 1234n));
    const second = wire(cardBits(26, 1234n), { startUs: 2_000_000 });
    const frames = [
      ...first.slice(0, 30).flatMap((e) => decoder.push(e)),
      ...decoder.push({ ...first[40]!, afterLoss: true }),
      ...first.slice(41).flatMap((e) => decoder.push(e)),
      ...second.flatMap((e) => decoder.push(e)),
      ...decoder.flush(3_000_000),
    ];
    expect(frames).toMatchObject([
      { kind: 'dropped', bits: 21, reason: 'lost_edges' },
      { kind: 'card', bits: 26, data: 1234n, facility: 0n, card: 1234n },
    ]);
  });
});

describe('the encoder (simulators, bench)', () => {
  it('writes the same bits as the layout in the specification, and they decode back', () => {
    for (const [format, bits, data] of [
      ['H10301', 26, 0xabcdefn],
      ['H10306', 34, 0xfedc_ba98n],
      ['H10304', 37, 0x7_1234_5678n],
    ] as const) {
      expect(encodeCard(data, format)).toEqual(cardBits(bits, data));
      const decoder = only(format);
      const frames = [...edgesOf(encodeCard(data, format), 0).flatMap((e) => decoder.push(e)), ...decoder.flush(1_000_000)];
      expect(frames).toMatchObject([{ kind: 'card', bits, data }]);
    }
    expect(() => encodeCard(1n << 24n)).toThrow(RangeError);
  });

  it('writes keys as 4-bit values and 8-bit with the complement nibble', () => {
    expect(encodeKey('5', 4)).toEqual(keyBits(5));
    expect(encodeKey('#', 8)).toEqual(keyBits(11, true));
    expect(() => encodeKey('A', 4)).toThrow(RangeError);
  });

  it('noise that never pauses (hum every 2 ms) is dropped every 250 ms as too_long, never kept growing', () => {
    const decoder = new WiegandDecoder();
    const frames: WiegandFrame[] = [];
    for (let i = 0; i < 1000; i++) {
      frames.push(...decoder.push({ line: 'd0', rising: false, atUs: i * 2000 }), ...decoder.push({ line: 'd0', rising: true, atUs: i * 2000 + 60 }));
    }
    expect(frames.length).toBeGreaterThanOrEqual(7);
    expect(frames.every((f) => f.kind === 'dropped' && f.reason === 'too_long' && f.bits <= 126)).toBe(true);
  });

  it('more bits than any format (a frame of 60) is dropped as bit_count with its true length', () => {
    const decoder = new WiegandDecoder();
    const frames = [...wire(Array.from({ length: 60 }, (_, i) => i % 2)).flatMap((e) => decoder.push(e)), ...decoder.flush(10_000_000)];
    expect(frames).toEqual([{ kind: 'dropped', bits: 60, reason: 'bit_count' }]);
  });
});
