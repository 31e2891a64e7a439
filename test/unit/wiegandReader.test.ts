import type { FormatChoice, WiegandNumbering } from '../../src/core/wiegandFormats.js';
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { edgesOf, encodeCard, encodeKey, type WiegandEdge } from '../../src/core/wiegand.js';
import type { EdgeInputs, GpioDriver, PinEdge } from '../../src/hardware/gpio.js';
import type { NoiseSummary } from '../../src/readers/noiseReporter.js';
import type { ReaderFrame } from '../../src/readers/readerFrames.js';
import { WiegandReader } from '../../src/readers/wiegand/wiegandReader.js';
import { ManualTime } from '../support/manualTime.js';

const D0 = 5;
const D1 = 6;

/** A driver whose edge inputs are driven by the test, on the manual clock (µs = ms * 1000). */
function setup(options: { format?: FormatChoice; numbering?: WiegandNumbering } = {}) {
  const time = new ManualTime({ mono: 10_000 });
  let deliver: ((edges: readonly PinEdge[]) => void) | null = null;
  const opened: Array<{ pins: readonly number[]; pull: string }> = [];
  const gpio: GpioDriver = {
    name: 'fake',
    openOutput: () => {
      throw new Error('unused');
    },
    openInput: () => {
      throw new Error('unused');
    },
    openEdgeInputs(pins, pull, onEdges): EdgeInputs {
      opened.push({ pins, pull });
      deliver = onEdges;
      return { nowUs: () => time.mono * 1000, levels: () => [1, 0], close: () => void (deliver = null) };
    },
    close: () => {},
  };
  const frames: ReaderFrame[] = [];
  const noise: NoiseSummary[] = [];
  const warnings: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) });
  const reader = new WiegandReader({
    d0: D0,
    d1: D1,
    pull: 'up',
    format: options.format ?? 'auto',
    numbering: options.numbering ?? 'data',
    gpio,
    onFrame: (f) => frames.push(f),
    onNoise: (s) => noise.push(s),
    logger,
    clock: time,
    timers: time,
  });
  reader.start();
  /** Puts `edges` (times relative to now, in µs) on the wires; the loop reads them once the last has happened. */
  const send = (edges: WiegandEdge[]) => {
    const base = time.mono * 1000;
    time.advance(Math.ceil(Math.max(...edges.map((e) => e.atUs)) / 1000));
    deliver!(edges.map((e) => ({ pin: e.line === 'd0' ? D0 : D1, rising: e.rising, atUs: base + e.atUs, afterLoss: e.afterLoss ?? false })));
  };
  const warned = () => warnings.filter((w) => w.msg === 'Wiegand frames dropped (noise, parity or wiring)');
  return { time, send, frames, noise, warned, reader, opened, deliver: (edges: PinEdge[]) => deliver!(edges) };
}

describe('WiegandReader', () => {
  it('claims D0 and D1 together with their pull, and reports itself listening', () => {
    const t = setup();
    expect(t.opened).toEqual([{ pins: [D0, D1], pull: 'up' }]);
    expect(t.reader.connected).toBe(true);
    expect(t.reader.lineLevels()).toEqual({ d0: 1, d1: 0 }); // for the self-test: D1 held low here
  });

  it('turns a 26-bit card into its card number once the frame gap has passed, not before', () => {
    const t = setup();
    // Facility 18, card 4660: data field 18 * 65536 + 4660.
    t.send(edgesOf(encodeCard(18n * 65536n + 4660n), 0));
    expect(t.frames).toEqual([]);
    t.time.advance(30);
    expect(t.frames).toMatchObject([{ kind: 'card', value: String(18 * 65536 + 4660) }]);
  });

  it('numbers by facility * 65536 + card when asked (a 34-bit card keeps its 16-bit facility)', () => {
    const t = setup({ numbering: 'facility_card' });
    t.send(edgesOf(encodeCard(0x1234n * 65536n + 0xbeefn, 'H10306'), 0));
    t.time.advance(30);
    expect(t.frames).toMatchObject([{ kind: 'card', value: String(0x1234 * 65536 + 0xbeef) }]);
  });

  it('feeds 4-bit and 8-bit keypad frames to the PIN logic: # submits, * clears', () => {
    const t = setup();
    for (const key of ['9', '1', '*', '1', '2', '3', '4']) {
      t.send(edgesOf(encodeKey(key, 4), 0));
      t.time.advance(300);
    }
    t.send(edgesOf(encodeKey('#', 8), 0));
    t.time.advance(30);
    expect(t.frames).toEqual([{ kind: 'keypad_cleared' }, { kind: 'pin', value: '1234' }]);
  });

  it('drops a frame with a parity error: never decided, one warning a second, one audit summary a minute', () => {
    const t = setup();
    for (let i = 0; i < 5; i++) {
      const bits = encodeCard(123_456n);
      bits[20] = 1 - bits[20]!; // one bit flipped on the wire
      t.send(edgesOf(bits, 0));
      t.time.advance(100);
    }
    expect(t.frames).toEqual([]);
    t.time.advance(1000);
    expect(t.warned()).toHaveLength(1);
    expect(t.warned()[0]).toMatchObject({ frames: 5, bits: 130, reasons: { parity: 5 } });
    expect(t.noise).toEqual([]);
    t.time.advance(60_000);
    expect(t.noise).toEqual([{ count: 5, units: 130, reasons: { parity: 5 } }]);
    // The next good card still goes through.
    t.send(edgesOf(encodeCard(123_456n), 0));
    t.time.advance(30);
    expect(t.frames).toMatchObject([{ kind: 'card', value: '123456' }]);
  });

  it('a frame read late in one burst (the loop was busy for 200 ms) decodes by the kernel times, not the read time', () => {
    const t = setup();
    const base = t.time.mono * 1000;
    const edges = edgesOf(encodeCard(777n), 0).map((e) => ({ pin: e.line === 'd0' ? D0 : D1, rising: e.rising, atUs: base + e.atUs, afterLoss: false }));
    t.time.advance(200);
    t.deliver(edges);
    t.time.advance(30);
    expect(t.frames).toMatchObject([{ kind: 'card', value: '777' }]);
  });

  it('two cards back to back, a gap apart, are two decisions', () => {
    const t = setup();
    t.send([...edgesOf(encodeCard(1n), 0), ...edgesOf(encodeCard(2n), 26 * 1000 + 30_000)]);
    t.time.advance(30);
    expect(t.frames).toMatchObject([
      { kind: 'card', value: '1' },
      { kind: 'card', value: '2' },
    ]);
  });

  it('a frame whose edges the kernel lost (queue overflow) is dropped, the next one decided', () => {
    const t = setup();
    const edges = edgesOf(encodeCard(4242n), 0);
    t.send([...edges.slice(0, 20), { ...edges[30]!, afterLoss: true }, ...edges.slice(31)]);
    t.time.advance(1100);
    expect(t.frames).toEqual([]);
    expect(t.warned()[0]).toMatchObject({ reasons: { lost_edges: 1 } });
    t.send(edgesOf(encodeCard(4242n), 0));
    t.time.advance(30);
    expect(t.frames).toMatchObject([{ kind: 'card', value: '4242' }]);
  });

  it('a 26-bit-only door refuses a 34-bit card instead of reading part of it', () => {
    const t = setup({ format: ['H10301'] });
    t.send(edgesOf(encodeCard(99n, 'H10306'), 0));
    t.time.advance(1100);
    expect(t.frames).toEqual([]);
    expect(t.warned()[0]).toMatchObject({ reasons: { bit_count: 1 } });
  });

  it('stop releases the lines and reports noise still pending', async () => {
    const t = setup();
    const bits = encodeCard(5n);
    bits[3] = 1 - bits[3]!;
    t.send(edgesOf(bits, 0));
    t.time.advance(30);
    await t.reader.stop();
    expect(t.reader.connected).toBe(false);
    expect(t.noise).toEqual([{ count: 1, units: 26, reasons: { parity: 1 } }]);
  });
});
