/**
 * PN532 host-link frames (NXP UM0701-02, section 6.2.1), pure: bytes in, frames out, and back.
 *
 *   normal information frame:   00 | 00 FF | LEN | LCS | TFI | PD0..PDn | DCS | 00
 *   extended information frame: 00 | 00 FF | FF FF | LENM LENL | LCS | TFI | PD0..PDn | DCS | 00
 *   ACK: 00 00 FF 00 FF 00      NACK: 00 00 FF FF 00 00      error frame: an information frame whose TFI is 0x7F
 *
 * LEN counts TFI and the data bytes; LEN + LCS = 0 (mod 256); TFI + PD0 + ... + PDn + DCS = 0 (mod 256). TFI is
 * 0xD4 from the host to the PN532 and 0xD5 back.
 */

const TFI_HOST = 0xd4;
export const TFI_PN532 = 0xd5;
/** The TFI of the PN532's syntax error frame (00 00 FF 01 FF 7F 81 00): it could not take the frame it got. */
const TFI_ERROR = 0x7f;

export const ACK_FRAME = Buffer.from([0x00, 0x00, 0xff, 0x00, 0xff, 0x00]);
/** The NACK a host sends to have a frame sent again (the emulator's tests). @internal */
export const NACK_FRAME = Buffer.from([0x00, 0x00, 0xff, 0xff, 0x00, 0x00]);

/**
 * The most a frame may carry after TFI: 254 in a normal frame (LEN is one byte and counts TFI); an extended frame
 * claiming more than the PN532's own 264-byte buffer holds is a damaged length, not a frame to wait for.
 */
const MAX_NORMAL_DATA = 254;
const MAX_EXTENDED_LEN = 265;

export type Pn532Frame =
  | { kind: 'ack' }
  | { kind: 'nack' }
  /** The PN532 could not take the host's frame (bad checksum, unknown command): the command is sent again. */
  | { kind: 'error_frame' }
  | { kind: 'info'; tfi: number; data: Buffer };

/**
 * A frame that was not one, named: its length checksum (`bad_lcs`), its data checksum (`bad_dcs`), or a LEN that
 * runs past the bytes that came (`length_past_buffer`: the line went quiet first, or the claimed bytes hold the
 * next whole frame, or an extended LEN past the PN532's buffer). The bytes after its start code are read again,
 * so a good frame that follows is never lost.
 */
export interface Pn532FrameError {
  kind: 'frame_error';
  error: 'bad_lcs' | 'bad_dcs' | 'length_past_buffer';
  /** What was wrong, for the log: e.g. "LEN 200 runs past the 9 bytes received". */
  detail: string;
}

export type Pn532Received = Pn532Frame | Pn532FrameError;

const sum = (bytes: Uint8Array, from: number, to: number): number => {
  let s = 0;
  for (let i = from; i < to; i++) s += bytes[i]!;
  return s & 0xff;
};

/** A normal information frame carrying `data` (a command code and its parameters) with `tfi`. */
export function encodeFrame(data: Uint8Array, tfi: number = TFI_HOST): Buffer {
  if (data.length > MAX_NORMAL_DATA) throw new RangeError(`a PN532 frame carries at most ${MAX_NORMAL_DATA} bytes after TFI (got ${data.length})`);
  const len = data.length + 1;
  const frame = Buffer.alloc(len + 7);
  frame[0] = 0x00;
  frame[1] = 0x00;
  frame[2] = 0xff;
  frame[3] = len;
  frame[4] = (0x100 - len) & 0xff;
  frame[5] = tfi;
  frame.set(data, 6);
  frame[6 + data.length] = (0x100 - ((tfi + sum(data, 0, data.length)) & 0xff)) & 0xff;
  frame[7 + data.length] = 0x00;
  return frame;
}

type Step =
  /** Not enough bytes yet for what the header promises. */
  { need: true } | { need?: false; consumed: number; out: Pn532Received };

/**
 * A streaming parser (like node-serialport's parsers): `feed` takes chunks split anywhere and returns the frames and
 * frame errors they complete; bytes before a start code are skipped. After a bad frame it reads on from just after
 * that frame's start code. `idle` (the line went quiet) settles a frame still waiting for bytes that will not come.
 */
export class Pn532FrameParser {
  private buffer: Buffer = Buffer.alloc(0);

  feed(chunk: Uint8Array): Pn532Received[] {
    this.buffer = this.buffer.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.buffer, chunk]);
    return this.drain(false);
  }

  /** The line is quiet: a frame whose LEN promised more bytes is reported, and what it held is read again. */
  idle(): Pn532Received[] {
    return this.drain(true);
  }

  reset(): void {
    this.buffer = Buffer.alloc(0);
  }

  private drain(quiet: boolean): Pn532Received[] {
    const out: Pn532Received[] = [];
    for (;;) {
      const start = this.startCode();
      if (start < 0) {
        // Keep a trailing 0x00: it may be the first half of the next start code.
        this.buffer = this.buffer.subarray(this.buffer.length > 0 && this.buffer[this.buffer.length - 1] === 0 ? this.buffer.length - 1 : this.buffer.length);
        return out;
      }
      this.buffer = this.buffer.subarray(start);
      const step = this.frameAt();
      if (step.need) {
        if (!quiet || this.buffer.length <= 2) return out;
        const claimed = this.claimedLength();
        out.push({
          kind: 'frame_error',
          error: 'length_past_buffer',
          detail:
            claimed === null
              ? 'the frame ends after its start code'
              : `LEN ${claimed} runs past the ${this.buffer.length - 2} bytes received after its start code`,
        });
        this.buffer = this.buffer.subarray(2);
        continue;
      }
      out.push(step.out);
      // A bad frame: read on from just after its start code, not after the bytes its LEN claimed.
      this.buffer = this.buffer.subarray(step.out.kind === 'frame_error' ? 2 : step.consumed);
    }
  }

  /** The index of the next 00 FF, or -1. */
  private startCode(): number {
    const b = this.buffer;
    for (let i = 0; i + 1 < b.length; i++) if (b[i] === 0x00 && b[i + 1] === 0xff) return i;
    return -1;
  }

  private claimedLength(): number | null {
    const b = this.buffer;
    if (b.length < 3) return null;
    if (b[2] === 0xff && b[3] === 0xff) return b.length >= 6 ? (b[4]! << 8) | b[5]! : null;
    return b[2]!;
  }

  /** The frame whose start code (00 FF) begins the buffer. */
  private frameAt(): Step {
    const b = this.buffer;
    if (b.length < 4) return { need: true };
    const [l0, l1] = [b[2]!, b[3]!];
    if (l0 === 0x00 && l1 === 0xff) return { consumed: this.withPostamble(4), out: { kind: 'ack' } };
    if (l0 === 0xff && l1 === 0x00) return { consumed: this.withPostamble(4), out: { kind: 'nack' } };
    if (l0 === 0xff && l1 === 0xff) return this.extendedAt();
    if (((l0 + l1) & 0xff) !== 0) {
      return { consumed: 2, out: { kind: 'frame_error', error: 'bad_lcs', detail: `LEN 0x${hex(l0)} with LCS 0x${hex(l1)}` } };
    }
    return this.bodyAt(4, l0);
  }

  private extendedAt(): Step {
    const b = this.buffer;
    if (b.length < 7) return { need: true };
    const len = (b[4]! << 8) | b[5]!;
    if (((b[4]! + b[5]! + b[6]!) & 0xff) !== 0) {
      return { consumed: 2, out: { kind: 'frame_error', error: 'bad_lcs', detail: `extended LEN ${len} with LCS 0x${hex(b[6]!)}` } };
    }
    if (len > MAX_EXTENDED_LEN) {
      return {
        consumed: 2,
        out: { kind: 'frame_error', error: 'length_past_buffer', detail: `extended LEN ${len} is past the PN532's ${MAX_EXTENDED_LEN}-byte buffer` },
      };
    }
    return this.bodyAt(7, len);
  }

  /** TFI, data and DCS of a frame whose LEN (`len`) and LCS were good; the body starts at `at`. */
  private bodyAt(at: number, len: number): Step {
    const b = this.buffer;
    if (len === 0) return { consumed: 2, out: { kind: 'frame_error', error: 'bad_lcs', detail: 'LEN 0 in an information frame' } };
    if (b.length < at + len + 1) return { need: true };
    if (sum(b, at, at + len + 1) !== 0) {
      // The claimed bytes hold the next whole frame: the LEN was wrong, not the data.
      const error = this.holdsFrame(at, at + len + 1) ? 'length_past_buffer' : 'bad_dcs';
      return {
        consumed: 2,
        out: {
          kind: 'frame_error',
          error,
          detail: error === 'bad_dcs' ? `DCS 0x${hex(b[at + len]!)} does not sum to zero` : `LEN ${len} runs into the next frame`,
        },
      };
    }
    const tfi = b[at]!;
    const data = Buffer.from(b.subarray(at + 1, at + len));
    const consumed = this.withPostamble(at + len + 1);
    return { consumed, out: tfi === TFI_ERROR && data.length === 0 ? { kind: 'error_frame' } : { kind: 'info', tfi, data } };
  }

  /** Whether a whole good frame (start code to DCS) lies within [from, to). */
  private holdsFrame(from: number, to: number): boolean {
    const inner = new Pn532FrameParser();
    return inner.feed(this.buffer.subarray(from, to)).some((r) => r.kind !== 'frame_error');
  }

  /** `end` plus the postamble byte when it is there (some modules leave it out). */
  private withPostamble(end: number): number {
    return this.buffer[end] === 0x00 && this.buffer[end + 1] !== 0xff ? end + 1 : end;
  }
}

function hex(byte: number): string {
  return byte.toString(16).padStart(2, '0');
}
