/**
 * Wiegand decoding (issue 12), pure: edges in, frames out, time carried by the edges themselves (the kernel's
 * timestamps), so a burst of events read late by a busy event loop decodes exactly as if read on time.
 *
 * The wire: two lines, D0 and D1, idle high; each bit is a low pulse of ~50 µs on D0 (a 0) or D1 (a 1), pulses
 * 1-2 ms apart, most significant bit first; a frame ends after a gap (~25 ms). Card frames are decoded by the
 * formats the reader takes (core/wiegandFormats.ts: their parity bits and fields are data). Keypads send a 4-bit
 * frame per key (0-9, 10 = '*', 11 = '#') or an 8-bit frame whose high nibble is the complement of the low one.
 */

import { BUILTIN_FORMATS, decodeWith, encodeWith, type DecodedCard, type WiegandFormatSpec } from './wiegandFormats.js';
import { withProps } from './objects.js';

export type WiegandLine = 'd0' | 'd1';

export interface WiegandEdge {
  line: WiegandLine;
  /** true: the line went high again (the pulse ended); false: it went low (a pulse began). */
  rising: boolean;
  /** Microseconds on a monotonic clock (the kernel's event timestamp). */
  atUs: number;
  /** Edges were lost just before this one (the kernel's queue overflowed while nobody read it). */
  afterLoss?: boolean;
}

export interface WiegandTiming {
  /** A frame ends after this much quiet (readers: 20-50 ms between frames, 1-2 ms between bits). */
  frameGapUs: number;
  /** A pulse shorter than this is a glitch, not a bit. */
  minPulseUs: number;
  /** A pulse longer than this is a line held low (a fault, or a wiring problem), not a bit. */
  maxPulseUs: number;
  /** Two pulses starting closer than this are a bounce: the frame cannot be trusted. */
  minBitIntervalUs: number;
  /**
   * A frame still going after this long is noise that never pauses (mains hum on a floating line, someone
   * pulsing the wires): it is dropped then and there, so it can neither grow without bound nor stay unreported.
   * The longest built-in frame, 56 bits 3 ms apart, takes 168 ms.
   */
  maxFrameUs: number;
}

export const DEFAULT_WIEGAND_TIMING: WiegandTiming = { frameGapUs: 25_000, minPulseUs: 10, maxPulseUs: 1_000, minBitIntervalUs: 200, maxFrameUs: 250_000 };

export type WiegandDropReason =
  | 'glitch_only'
  | 'bounce'
  | 'overlap'
  | 'stuck_low'
  | 'bit_count'
  | 'parity'
  | 'ambiguous_format'
  | 'bad_key'
  | 'lost_edges'
  | 'too_long';

/** A card frame: its format's fields, and the whole frame as one integer (`raw`, for `reader learn`). */
export type WiegandCardFrame = { kind: 'card'; raw: bigint } & DecodedCard;

export type WiegandFrame =
  | WiegandCardFrame
  | { kind: 'key'; key: string }
  | {
      kind: 'dropped';
      bits: number;
      reason: WiegandDropReason;
      /** ambiguous_format: the formats of that length, and the frame (`reader learn` shows it in each). */
      candidates?: string[];
      raw?: bigint;
    };

/**
 * The formats a reader takes, by length. A length more than one of them has is ambiguous: its frames are refused,
 * never guessed (docs/hardware.md, "Card formats").
 */
export class FormatSet {
  private readonly byLength = new Map<number, WiegandFormatSpec[]>();
  /** The most bits a frame keeps: one past the longest format, enough to know the count is wrong. */
  readonly maxBits: number;

  constructor(readonly formats: readonly WiegandFormatSpec[] = BUILTIN_FORMATS) {
    for (const f of formats) this.byLength.set(f.bits, [...(this.byLength.get(f.bits) ?? []), f]);
    this.maxBits = Math.max(8, ...formats.map((f) => f.bits)) + 1;
  }

  ofLength(bits: number): readonly WiegandFormatSpec[] {
    return this.byLength.get(bits) ?? [];
  }
}

const EVERY_BUILTIN = new FormatSet();

const KEYS = '0123456789*#';

function toInt(bits: readonly number[], from: number, to: number): bigint {
  let v = 0n;
  for (let i = from; i <= to; i++) v = (v << 1n) | BigInt(bits[i]!);
  return v;
}

/**
 * The frame a complete, clean sequence of bits stands for: a keypad key (4 or 8 bits), or a card of the one format
 * of its length in `formats`. Two or more formats of its length: refused as ambiguous (when any of them would
 * take it; a frame none takes is a parity error).
 */
export function decodeBits(bits: readonly number[], formats: FormatSet = EVERY_BUILTIN): WiegandFrame {
  const n = bits.length;
  if (n === 4 || n === 8) {
    const low = Number(toInt(bits, n - 4, n - 1));
    if (n === 8 && Number(toInt(bits, 0, 3)) !== (~low & 0xf)) return { kind: 'dropped', bits: n, reason: 'parity' };
    return low < KEYS.length ? { kind: 'key', key: KEYS[low]! } : { kind: 'dropped', bits: n, reason: 'bad_key' };
  }
  const candidates = formats.ofLength(n);
  if (candidates.length === 0) return { kind: 'dropped', bits: n, reason: 'bit_count' };
  const decoded = candidates.map((f) => decodeWith(f, bits)).filter((d): d is DecodedCard => d !== null);
  if (decoded.length === 0) return { kind: 'dropped', bits: n, reason: 'parity' };
  if (candidates.length > 1)
    return { kind: 'dropped', bits: n, reason: 'ambiguous_format', candidates: candidates.map((f) => f.name), raw: toInt(bits, 0, n - 1) };
  return { kind: 'card', raw: toInt(bits, 0, n - 1), ...decoded[0]! };
}

/**
 * Turns the edges of D0 and D1 into frames. `push` each edge in order of time (both lines merged, as the kernel
 * delivers them from one line request); `flush(nowUs)` when nothing more has arrived, to end a frame whose gap
 * has passed. A frame with any fault (a bounce, both lines low at once, a line stuck low, a wrong bit count or
 * parity) is dropped whole, with its reason: never decided.
 */
export class WiegandDecoder {
  private bits: number[] = [];
  private fault: WiegandDropReason | null = null;
  private glitches = 0;
  private lastEdgeUs = Number.NEGATIVE_INFINITY;
  private frameStartUs = 0;
  private bitCount = 0;
  private lastPulseStartUs = Number.NEGATIVE_INFINITY;
  private readonly lowSince: Record<WiegandLine, number | null> = { d0: null, d1: null };

  constructor(
    private readonly formats: FormatSet = EVERY_BUILTIN,
    private readonly timing: WiegandTiming = DEFAULT_WIEGAND_TIMING,
  ) {}

  push(edge: WiegandEdge): WiegandFrame[] {
    const out: WiegandFrame[] = [];
    // Lost edges came just before this one: the frame under way and the one this edge belongs to both miss
    // bits, whichever the loss fell in.
    if (edge.afterLoss && this.pending) this.fault ??= 'lost_edges';
    if (edge.atUs - this.lastEdgeUs >= this.timing.frameGapUs) this.endFrame(out);
    else if (this.pending && edge.atUs - this.frameStartUs > this.timing.maxFrameUs) {
      this.fault ??= 'too_long';
      this.endFrame(out);
    }
    if (!this.pending) this.frameStartUs = edge.atUs;
    if (edge.afterLoss) this.fault ??= 'lost_edges';
    this.lastEdgeUs = Math.max(this.lastEdgeUs, edge.atUs);
    const other: WiegandLine = edge.line === 'd0' ? 'd1' : 'd0';
    if (!edge.rising) {
      if (this.lowSince[edge.line] !== null) return out; // a repeated falling edge: the line is already low
      if (this.lowSince[other] !== null) this.fault ??= 'overlap';
      this.lowSince[edge.line] = edge.atUs;
      return out;
    }
    const since = this.lowSince[edge.line];
    this.lowSince[edge.line] = null;
    if (since === null) return out; // a rising edge without its falling one (the frame began before we listened)
    const width = edge.atUs - since;
    if (width < this.timing.minPulseUs) {
      this.glitches++;
      return out;
    }
    if (width > this.timing.maxPulseUs) this.fault ??= 'stuck_low';
    if (since - this.lastPulseStartUs < this.timing.minBitIntervalUs) this.fault ??= 'bounce';
    this.lastPulseStartUs = since;
    this.bitCount++;
    if (this.bits.length < this.formats.maxBits) this.bits.push(edge.line === 'd1' ? 1 : 0);
    return out;
  }

  /** Ends the frame under way if the gap has passed by `nowUs` (same clock as the edges). */
  flush(nowUs: number): WiegandFrame[] {
    const out: WiegandFrame[] = [];
    if (nowUs - this.lastEdgeUs >= this.timing.frameGapUs) {
      this.endFrame(out);
    }
    return out;
  }

  /** Whether a frame is under way (the driver keeps a timer for flush only then). */
  get pending(): boolean {
    return this.bits.length > 0 || this.glitches > 0 || this.fault !== null || this.lowSince.d0 !== null || this.lowSince.d1 !== null;
  }

  private endFrame(out: WiegandFrame[]): void {
    // A line still low when the frame's gap has passed was never released: nothing in this frame can be trusted.
    if (this.lowSince.d0 !== null || this.lowSince.d1 !== null) this.fault ??= 'stuck_low';
    if (this.bitCount > this.formats.maxBits) this.fault ??= 'bit_count';
    if (this.bitCount > 0 || this.fault !== null) {
      out.push(this.fault !== null ? { kind: 'dropped', bits: this.bitCount, reason: this.fault } : decodeBits(this.bits, this.formats));
    } else if (this.glitches > 0) {
      out.push({ kind: 'dropped', bits: 0, reason: 'glitch_only' });
    }
    this.bits = [];
    this.bitCount = 0;
    this.fault = null;
    this.glitches = 0;
    this.lastPulseStartUs = Number.NEGATIVE_INFINITY;
    this.lowSince.d0 = null;
    this.lowSince.d1 = null;
  }
}

/**
 * The bits of a card frame whose data bits (`numbering: data`) are `data`, in a built-in format of one facility
 * and one card field (H10301 by default): for simulators, tests and the bench. encodeWith takes any format. @internal
 */
export function encodeCard(data: bigint, format = 'H10301'): number[] {
  const spec = BUILTIN_FORMATS.find((f) => f.name === format);
  if (!spec) throw new RangeError(`no built-in format ${format}`);
  const cardBits = BigInt(spec.fields.card[1] - spec.fields.card[0] + 1);
  const facility = data >> cardBits;
  return encodeWith(spec, withProps(spec.fields.facility ? { facility } : {}, { card: spec.fields.facility ? data & ((1n << cardBits) - 1n) : data }));
}

/** The bits a keypad sends for `key` ('0'-'9', '*', '#'): 4-bit, or 8-bit with the complement nibble. @internal */
export function encodeKey(key: string, width: 4 | 8): number[] {
  const value = KEYS.indexOf(key);
  if (key.length !== 1 || value < 0) throw new RangeError(`not a keypad key: ${JSON.stringify(key)}`);
  const nibble = (v: number) => [3, 2, 1, 0].map((i) => (v >> i) & 1);
  return width === 4 ? nibble(value) : [...nibble(~value & 0xf), ...nibble(value)];
}

/** The edges a reader puts on D0/D1 for `bits`, starting at `startUs`: a low pulse per bit, `intervalUs` apart. @internal */
export function edgesOf(
  bits: readonly number[],
  startUs: number,
  wire: { pulseUs: number; intervalUs: number } = { pulseUs: 50, intervalUs: 1000 },
): WiegandEdge[] {
  return bits.flatMap((bit, i): WiegandEdge[] => {
    const line: WiegandLine = bit === 1 ? 'd1' : 'd0';
    const at = startUs + i * wire.intervalUs;
    return [
      { line, rising: false, atUs: at },
      { line, rising: true, atUs: at + wire.pulseUs },
    ];
  });
}
