import { REPLY, describeNak } from './codes.js';

/**
 * A file sent to an OSDP reader with osdp_FILETRANSFER (SIA OSDP v2.2, 6.26 and 7.25): its firmware, as a state
 * machine over plain Buffers and times given in (monotonic ms), without IO or timers (the session that drives it
 * over the bus is firmwareSession.ts).
 *
 * osdp_FILETRANSFER's data: FtType (1: opaque, a file the reader recognizes itself), FtSizeTotal (u32 LE), FtOffset
 * (u32 LE), FtFragmentSize (u16 LE), then the fragment. The reader answers each with osdp_FTSTAT: FtAction (bit 0:
 * other commands may be interleaved; bit 1: it may leave the secure channel; bit 2: a poll reply is waiting),
 * FtDelay (u16 LE: ms before the next osdp_FILETRANSFER), FtStatusDetail (i16 LE, below) and FtUpdateMsgMax (u16 LE:
 * the largest fragment it wants from now on, 0 for no change).
 *
 * Fragments are the smaller of what the link carries (linkFragmentLimit) and the reader's FtUpdateMsgMax; none is
 * sent before the reader's FtDelay has passed. "Finishing" (3) is waited for with empty fragments, as the standard
 * says; an error status (below 0), a NAK or another reply ends the transfer as failed, with the reason. Once the
 * reader says the file is processed (1) or that it restarts (2), the transfer is not over: the reader must come
 * back and name, in osdp_PDID, a firmware other than the one it had (or the one expected); else it failed.
 */

/** FtType: opaque contents the reader recognizes itself (a firmware image). */
const FT_TYPE_OPAQUE = 1;
/** FtType, FtSizeTotal, FtOffset, FtFragmentSize. */
const HEADER_BYTES = 11;
/** FtSizeTotal is 32 bits; a reader's firmware is far smaller. The fleet's tasks carry at most this too. */
export const MAX_FILE_BYTES = 16 << 20;

/** FtStatusDetail. */
const FT_STATUS = {
  OK: 0,
  PROCESSED: 1,
  REBOOTING: 2,
  FINISHING: 3,
  ABORT: -1,
  UNRECOGNIZED: -2,
  MALFORMED: -3,
} as const;

const ERRORS: Record<number, string> = {
  [FT_STATUS.ABORT]: 'the reader aborted the transfer (FtStatusDetail -1)',
  [FT_STATUS.UNRECOGNIZED]: 'the reader does not recognize the file (FtStatusDetail -2: not a firmware for this reader)',
  [FT_STATUS.MALFORMED]: 'the reader found the file malformed (FtStatusDetail -3: data unacceptable)',
};

/** An osdp_FTSTAT's fields. */
export interface FtStat {
  action: number;
  delayMs: number;
  status: number;
  updateMsgMax: number;
}

/**
 * osdp_FTSTAT's 7 bytes; null when shorter.
 * @internal
 */
export function parseFtStat(data: Buffer): FtStat | null {
  if (data.length < 7) return null;
  return { action: data[0]!, delayMs: data.readUInt16LE(1), status: data.readInt16LE(3), updateMsgMax: data.readUInt16LE(5) };
}

/** osdp_FILETRANSFER's data for `fragment` of a file of `total` bytes at `offset` (an empty fragment: "still here"). */
function fileTransferData(type: number, total: number, offset: number, fragment: Buffer): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header[0] = type;
  header.writeUInt32LE(total, 1);
  header.writeUInt32LE(offset, 5);
  header.writeUInt16LE(fragment.length, 9);
  return Buffer.concat([header, fragment]);
}

/**
 * A reader that does not name its receive buffer (osdp_PDCAP function 10) gets packets of at most this: the
 * standard's smallest, and half of libosdp's (OSDP_PACKET_BUF_SIZE, 256).
 */
const DEFAULT_RECEIVE_BUFFER = 128;
/** The longest packet the stack builds (packet.ts). */
const MAX_PACKET = 1440;

/**
 * The largest fragment whose packet fits the reader's receive buffer: the mark byte, header, code, the 11-byte
 * file header and the CRC; on the secure channel also the security block and MAC, and the data padded to 16 bytes.
 */
export function linkFragmentLimit(receiveBuffer: number | null, secure: boolean): number {
  const buffer = Math.min(receiveBuffer !== null && receiveBuffer > 0 ? receiveBuffer : DEFAULT_RECEIVE_BUFFER, MAX_PACKET);
  // 0xFF mark, SOM, ADDR, LEN (2), CTRL, code, CRC (2).
  const framing = 9;
  if (!secure) return Math.max(1, buffer - framing - HEADER_BYTES);
  // Security block (length, type), MAC (4); the encrypted data (file header and fragment) padded with 80 00...
  const padded = Math.floor((buffer - framing - 6) / 16) * 16;
  return Math.max(1, padded - 1 - HEADER_BYTES);
}

export type FileTransferOutcome = { ok: true; version: string; previous: string | null } | { ok: false; reason: string; version: string | null };

export type TransferPhase = 'sending' | 'finishing' | 'installing' | 'over';

export interface TransferProgress {
  phase: TransferPhase;
  /** Bytes the reader has confirmed. */
  sent: number;
  total: number;
  /** The reader's last FtDelay (ms). */
  delayMs: number;
  /** The fragment size now. */
  fragment: number;
}

/** What the driver does next. */
export type TransferStep =
  /** Send this osdp_FILETRANSFER (its data) and hand its reply to `replied` (or its loss to `lost`). */
  | { kind: 'send'; data: Buffer }
  /** Nothing before `until` (the reader's FtDelay): polls go on meanwhile. */
  | { kind: 'wait'; until: number }
  /** The reader installed the file: make it identify itself again (osdp_ID after its reset), once. */
  | { kind: 'reidentify' }
  /** Wait for the reader's osdp_PDID (`identified`) until `until`. */
  | { kind: 'identity'; until: number }
  | { kind: 'over'; outcome: FileTransferOutcome };

export interface FileTransferOptions {
  /** What the link carries (linkFragmentLimit). */
  linkLimit: number;
  /** The firmware the reader named before (its osdp_PDID), null when unknown. */
  firmwareBefore: string | null;
  /** The firmware it must name afterwards; without: any other than firmwareBefore. */
  expectVersion?: string;
  fileType?: number;
  /** How long the reader may stay "finishing" (ms). */
  finishingTimeoutMs?: number;
  /** How long the reader may take to come back and name its firmware once it has taken the file (ms). */
  confirmTimeoutMs?: number;
}

export class FileTransfer {
  private phase: TransferPhase = 'sending';
  /** Bytes the reader confirmed. */
  private offset = 0;
  /** The fragment sent and not answered yet (its length), null when none is out. */
  private inFlight: number | null = null;
  private fragment: number;
  private delayMs = 0;
  private notBefore: number;
  private deadline = Number.POSITIVE_INFINITY;
  private reidentifyAsked = false;
  private outcome: FileTransferOutcome | null = null;
  private readonly type: number;
  private readonly finishingTimeoutMs: number;
  private readonly confirmTimeoutMs: number;

  constructor(
    private readonly file: Buffer,
    private readonly options: FileTransferOptions,
    now: number,
  ) {
    if (file.length === 0 || file.length > MAX_FILE_BYTES) throw new RangeError(`a file for a reader is 1 byte to ${MAX_FILE_BYTES} bytes, not ${file.length}`);
    this.type = options.fileType ?? FT_TYPE_OPAQUE;
    this.fragment = Math.max(1, options.linkLimit);
    this.notBefore = now;
    this.finishingTimeoutMs = options.finishingTimeoutMs ?? 120_000;
    this.confirmTimeoutMs = options.confirmTimeoutMs ?? 120_000;
  }

  get progress(): TransferProgress {
    return { phase: this.phase, sent: this.offset, total: this.file.length, delayMs: this.delayMs, fragment: this.fragment };
  }

  /** What to do at `now`. */
  next(now: number): TransferStep {
    if (this.outcome) return { kind: 'over', outcome: this.outcome };
    if (now >= this.deadline) {
      const seconds = Math.round((this.phase === 'finishing' ? this.finishingTimeoutMs : this.confirmTimeoutMs) / 1000);
      return this.fail(
        this.phase === 'finishing'
          ? `the reader did not finish processing the file within ${seconds} s`
          : `the reader did not come back within ${seconds} s after taking the file`,
      );
    }
    if (this.phase === 'installing') {
      if (!this.reidentifyAsked) {
        this.reidentifyAsked = true;
        return { kind: 'reidentify' };
      }
      return { kind: 'identity', until: this.deadline };
    }
    if (this.inFlight !== null) throw new Error('a fragment is out: its reply comes first');
    if (now < this.notBefore) return { kind: 'wait', until: this.notBefore };
    const length = this.phase === 'finishing' ? 0 : Math.min(this.fragment, this.file.length - this.offset);
    this.inFlight = length;
    return { kind: 'send', data: fileTransferData(this.type, this.file.length, this.offset, this.file.subarray(this.offset, this.offset + length)) };
  }

  /** The reader's reply to the fragment sent. */
  replied(code: number, data: Buffer, now: number): void {
    if (this.outcome || this.inFlight === null) return;
    const length = this.inFlight;
    this.inFlight = null;
    if (code === REPLY.NAK) return void this.fail(`the reader refused the file (${describeNak(data)})`);
    if (code !== REPLY.FTSTAT) return void this.fail(`the reader answered osdp_FILETRANSFER with reply 0x${code.toString(16)}, not osdp_FTSTAT`);
    const stat = parseFtStat(data);
    if (!stat) return void this.fail(`the reader's osdp_FTSTAT has ${data.length} bytes, not 7`);
    this.offset += length;
    this.delayMs = stat.delayMs;
    this.notBefore = now + stat.delayMs;
    if (stat.updateMsgMax > 0) this.fragment = Math.max(1, Math.min(stat.updateMsgMax, this.options.linkLimit));
    if (stat.status < 0) return void this.fail(ERRORS[stat.status] ?? `the reader ended the transfer with FtStatusDetail ${stat.status}`);
    if (stat.status === FT_STATUS.PROCESSED || stat.status === FT_STATUS.REBOOTING) {
      this.phase = 'installing';
      this.deadline = now + this.confirmTimeoutMs;
      return;
    }
    // Everything sent: the reader finishes (3), or says nothing of the end yet (0): it is asked again, with an empty
    // fragment after its delay, until its status changes.
    if (this.offset >= this.file.length && this.phase !== 'finishing') {
      this.phase = 'finishing';
      this.deadline = now + this.finishingTimeoutMs;
    }
  }

  /** The fragment got no answer: the reader went offline, the line went away, the daemon stops. */
  lost(reason: string): void {
    if (this.outcome) return;
    this.inFlight = null;
    if (this.phase === 'installing') return; // it restarts: its answers stop for a while
    this.fail(`the transfer broke off at ${this.offset} of ${this.file.length} bytes: ${reason}`);
  }

  /** The reader named its firmware (osdp_PDID) after it took the file. */
  identified(firmware: string): void {
    if (this.outcome || this.phase !== 'installing') return;
    const { expectVersion, firmwareBefore } = this.options;
    if (expectVersion !== undefined ? firmware === expectVersion : firmware !== firmwareBefore) {
      this.phase = 'over';
      this.outcome = { ok: true, version: firmware, previous: firmwareBefore };
      return;
    }
    this.fail(
      expectVersion !== undefined && firmware !== firmwareBefore
        ? `the reader reports firmware ${firmware}, not ${expectVersion}`
        : `the reader still reports firmware ${firmware}`,
      firmware,
    );
  }

  /** Ends the transfer from outside (the reader leaves the bus, the daemon stops). */
  cancel(reason: string): void {
    if (!this.outcome) this.fail(reason);
  }

  private fail(reason: string, version: string | null = this.options.firmwareBefore): TransferStep {
    this.phase = 'over';
    this.outcome = { ok: false, reason, version };
    return { kind: 'over', outcome: this.outcome };
  }
}
