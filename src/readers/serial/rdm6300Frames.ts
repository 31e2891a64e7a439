import { NoiseBurst, type FrameParser, type ReaderFrame } from '../readerFrames.js';

/**
 * 125 kHz UART reader modules (RDM6300 and its clones), 9600 8N1, framed in binary with no line ending:
 *   0x02 (STX), ten ASCII hex digits (the 40-bit ID: one version/customer byte, then the 32-bit card),
 *   two ASCII hex digits (the XOR of the five ID bytes), 0x03 (ETX)
 * sent over and over while a card is in the field. Pure: time comes in with each call.
 */

const STX = 0x02;
const ETX = 0x03;
const FRAME_BYTES = 14;

/** How an ID becomes the number the service stores (`doors[].reader.numbering`). */
export type Rdm6300Numbering = 'last32' | 'whole';

export interface Rdm6300Options {
  numbering: Rdm6300Numbering;
  /**
   * The same card counts as presented again only after this much quiet (the module repeats its frame every
   * ~50-100 ms while the card is held): one decision per presentation.
   */
  releaseMs?: number;
}

const isHex = (b: number) => (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);

/** The card number for a 40-bit ID: its last 32 bits as decimal (what most badges print), or all 40 bits. @internal */
export function rdm6300CardNumber(id: bigint, numbering: Rdm6300Numbering): string {
  return (numbering === 'last32' ? id & 0xffff_ffffn : id).toString(10);
}

/** Frames the byte stream of an RDM6300-style reader; bytes outside a good frame are noise. */
export class Rdm6300FrameParser implements FrameParser {
  private frame: number[] = [];
  private readonly noise = new NoiseBurst();
  private held: { id: bigint; lastAt: number } | null = null;
  private readonly releaseMs: number;

  constructor(private readonly options: Rdm6300Options) {
    this.releaseMs = options.releaseMs ?? 500;
  }

  /** Frames the bytes received at `now` (ms, any monotonic clock). */
  feed(chunk: Uint8Array, now: number): ReaderFrame[] {
    const out: ReaderFrame[] = [];
    for (const b of chunk) this.byte(b, now, out);
    return out;
  }

  /** The reader has been quiet: a partial frame is noise, and the pending noise is reported. */
  idle(now: number): ReaderFrame[] {
    const out: ReaderFrame[] = [];
    if (this.frame.length > 0) {
      this.noise.add(this.frame.length, 'unrecognized');
      this.frame = [];
    }
    if (this.held && now - this.held.lastAt > this.releaseMs) this.held = null;
    this.noise.flush(out);
    return out;
  }

  private byte(b: number, now: number, out: ReaderFrame[]): void {
    if (this.frame.length === 0) {
      if (b === STX) this.frame.push(b);
      else this.noise.add(1, b >= 0x20 && b <= 0x7e ? 'unrecognized' : 'binary');
      return;
    }
    if (b === STX) {
      // A frame cut short by the next one: what came before was noise.
      this.noise.add(this.frame.length, 'unrecognized');
      this.frame = [b];
      return;
    }
    this.frame.push(b);
    if (this.frame.length < FRAME_BYTES) return;
    const frame = this.frame;
    this.frame = [];
    this.endFrame(frame, now, out);
  }

  private endFrame(frame: number[], now: number, out: ReaderFrame[]): void {
    const digits = frame.slice(1, 13);
    if (frame[13] !== ETX || !digits.every(isHex)) return this.noise.add(frame.length, 'unrecognized');
    const text = String.fromCharCode(...digits);
    const bytes = Buffer.from(text, 'hex');
    const checksum = bytes[0]! ^ bytes[1]! ^ bytes[2]! ^ bytes[3]! ^ bytes[4]!;
    if (checksum !== bytes[5]) return this.noise.add(frame.length, 'checksum');
    const id = BigInt(`0x${text.slice(0, 10)}`);
    // The module repeats the frame while the card stays in the field: one decision per presentation.
    const repeat = this.held !== null && this.held.id === id && now - this.held.lastAt <= this.releaseMs;
    this.held = { id, lastAt: now };
    if (repeat) return;
    this.noise.flush(out);
    out.push({ kind: 'card', value: rdm6300CardNumber(id, this.options.numbering) });
  }
}
