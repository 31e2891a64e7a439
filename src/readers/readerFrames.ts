import type { CardFormat } from '../core/credentials.js';
import { KeypadEntry, MAX_PIN_DIGITS } from './keypadEntry.js';

/** What a reader is shown of a decision: its LED and buzzer lines, a reply line, OSDP's LED and beeper. */
/** What a reader shows: a decision, or `awaiting` (a two-person door's first tap: a second person is needed). */
export type ReaderFeedback = 'grant' | 'deny' | 'lockedOut' | 'lockdown' | 'awaiting';

import type { NoiseReason, ReaderFrame } from './frame.js';
export type { NoiseReason, ReaderFrame } from './frame.js';

/**
 * Noise bytes gathered until the next good frame (or a quiet line) and reported as one noise frame, never per
 * byte: every byte framing shares it.
 */
export class NoiseBurst {
  private pending: { bytes: number; reasons: Set<NoiseReason> } | null = null;

  add(bytes: number, reason: NoiseReason): void {
    this.pending ??= { bytes: 0, reasons: new Set() };
    this.pending.bytes += bytes;
    this.pending.reasons.add(reason);
  }

  /** Appends the noise gathered so far, if any, as one frame. */
  flush(out: ReaderFrame[]): void {
    if (!this.pending) return;
    out.push({ kind: 'noise', bytes: this.pending.bytes, reasons: [...this.pending.reasons] });
    this.pending = null;
  }
}

/** What a serial reader's bytes go through: framed at `feed`, settled when the line goes quiet (`idle`). */
export interface FrameParser {
  feed(chunk: Uint8Array, now: number): ReaderFrame[];
  idle(now: number): ReaderFrame[];
}

export interface FrameParserOptions {
  cardFormat: CardFormat;
  /** Keypad entry is abandoned when the next key comes later than this (10 s, docs/hardware.md). */
  keyTimeoutMs?: number;
  /** A partial line idle this long is over: digits are taken as key presses, anything else is noise. */
  lineGapMs?: number;
  /** A line longer than this without a newline is noise (256 bytes, docs/hardware.md). */
  maxLineBytes?: number;
}

const CR = 0x0d;
const LF = 0x0a;
const HASH = 0x23;
const STAR = 0x2a;

const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
const isHexDigit = (b: number) => isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);
const isPrintable = (b: number) => b >= 0x20 && b <= 0x7e;

/**
 * Frames the byte stream of a serial reader (docs/hardware.md, "The serial reader"):
 * - a CR/LF-terminated line of digits (hex digits for cardFormat hex) is a card;
 * - keypad keys come either one per line or raw; `#` submits the digits typed so far as a PIN, `*` clears
 *   them, and more than keyTimeoutMs between keys starts over;
 * - another printable line of 16-128 characters is a QR token;
 * - binary bytes, unrecognized lines and lines over maxLineBytes are dropped, reported as one noise frame per
 *   burst (emitted with the next good frame, or by idle() once the line has gone quiet).
 */
export class ReaderFrameParser implements FrameParser {
  private line: number[] = [];
  private lineBinary = false;
  private discarding = false; // inside an over-long line, until its newline
  private lastByteAt = Number.NEGATIVE_INFINITY;
  private readonly keypad: KeypadEntry;
  private readonly noise = new NoiseBurst();
  private readonly lineGapMs: number;
  private readonly maxLineBytes: number;

  constructor(private readonly options: FrameParserOptions) {
    this.keypad = new KeypadEntry(options.keyTimeoutMs ?? 10_000);
    this.lineGapMs = options.lineGapMs ?? 200;
    this.maxLineBytes = options.maxLineBytes ?? 256;
  }

  /** Frames the bytes received at `now` (ms, any monotonic clock). */
  feed(chunk: Uint8Array, now: number): ReaderFrame[] {
    const out: ReaderFrame[] = [];
    if (now - this.lastByteAt > this.lineGapMs) this.endPartialLine(out);
    this.lastByteAt = now;
    for (const b of chunk) this.byte(b, now, out);
    return out;
  }

  /** Called when the reader has been quiet for a while: settles a partial line and reports pending noise. */
  idle(now: number): ReaderFrame[] {
    const out: ReaderFrame[] = [];
    if (now - this.lastByteAt > this.lineGapMs) this.endPartialLine(out);
    this.noise.flush(out);
    return out;
  }

  private byte(b: number, now: number, out: ReaderFrame[]): void {
    if (b === CR || b === LF) {
      if (this.discarding) this.discarding = false;
      else this.endLine(now, out);
      return;
    }
    if (this.discarding) {
      this.noise.add(1, 'too_long');
      return;
    }
    if ((b === HASH || b === STAR) && !this.lineBinary && this.line.every(isDigit)) {
      this.keypadTerminator(b, now, out);
      return;
    }
    if (!isPrintable(b)) this.lineBinary = true;
    this.line.push(b);
    if (this.line.length > this.maxLineBytes) {
      this.noise.add(this.line.length, 'too_long');
      this.resetLine();
      this.discarding = true;
    }
  }

  private keypadTerminator(b: number, now: number, out: ReaderFrame[]): void {
    for (const digit of this.line) this.key(String.fromCharCode(digit), now);
    this.resetLine();
    this.terminate(b === STAR ? '*' : '#', now, out);
  }

  private terminate(key: '*' | '#', now: number, out: ReaderFrame[]): void {
    for (const frame of this.keypad.press(key, now)) this.emit(out, frame);
  }

  private key(digit: string, now: number): void {
    this.keypad.digit(digit, now);
  }

  private endLine(now: number, out: ReaderFrame[]): void {
    const bytes = this.line;
    const binary = this.lineBinary;
    this.resetLine();
    if (bytes.length === 0) return;
    if (binary) return this.noise.add(bytes.length, 'binary');
    const text = String.fromCharCode(...bytes);
    if (bytes.length === 1 && isDigit(bytes[0]!)) {
      this.key(text, now);
      return;
    }
    const cardLike = this.options.cardFormat === 'hex' ? bytes.every(isHexDigit) : bytes.every(isDigit);
    if (cardLike) {
      this.keypad.clear(); // a card starts a new interaction
      this.emit(out, { kind: 'card', value: text });
    } else if (bytes.length >= 16 && bytes.length <= 128 && !text.includes(' ')) {
      this.emit(out, { kind: 'token', value: text });
    } else {
      this.noise.add(bytes.length, 'unrecognized');
    }
  }

  /** A line that stopped mid-way: digits were key presses, anything else was noise. */
  private endPartialLine(out: ReaderFrame[]): void {
    if (this.line.length > 0) {
      if (!this.lineBinary && this.line.every(isDigit) && this.line.length <= MAX_PIN_DIGITS) {
        for (const digit of this.line) this.key(String.fromCharCode(digit), this.lastByteAt);
      } else {
        this.noise.add(this.line.length, this.lineBinary ? 'binary' : 'unrecognized');
      }
      this.resetLine();
    }
    this.discarding = false;
    this.noise.flush(out);
  }

  private resetLine(): void {
    this.line = [];
    this.lineBinary = false;
  }

  private emit(out: ReaderFrame[], frame: ReaderFrame): void {
    this.noise.flush(out);
    out.push(frame);
  }
}
