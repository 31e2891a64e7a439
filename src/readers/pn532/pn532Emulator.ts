/**
 * A simulated PN532 on the far end of a serial line (HSU), as osdp/readerEmulator.ts is an OSDP reader: for the tests
 * and a bench without hardware. Written from the user manual (NXP UM0701-02) and not from frames.ts, with its own
 * framing, so that the two check each other. It sleeps until the HSU wake-up (0x55), ACKs each good command frame,
 * answers SAMConfiguration, RFConfiguration, GetFirmwareVersion and InListPassiveTarget (106 kbps type A) with the
 * card placed on it, and resends its last answer on a NACK. Switches make the next answer go wrong on purpose.
 */

const PN532_TFI = 0xd5;

/** One information frame from the PN532, with its own checksums. */
function frame(data: number[]): number[] {
  const body = [PN532_TFI, ...data];
  const len = body.length;
  const dcs = (0x100 - (body.reduce((a, b) => a + b, 0) % 0x100)) % 0x100;
  return [0x00, 0x00, 0xff, len, (0x100 - len) % 0x100, ...body, dcs, 0x00];
}

const ACK = [0x00, 0x00, 0xff, 0x00, 0xff, 0x00];
const NACK = [0x00, 0x00, 0xff, 0xff, 0x00, 0x00];
/** The syntax error frame: a command frame it could not take. */
const ERROR_FRAME = [0x00, 0x00, 0xff, 0x01, 0xff, 0x7f, 0x81, 0x00];

export interface Pn532EmulatorOptions {
  /** IC, Ver, Rev, Support as GetFirmwareVersion gives them (default a PN532 v1.6: 0x32, 1, 6, 7). */
  firmware?: [number, number, number, number];
}

export class Pn532Emulator {
  /** Asleep until the HSU wake-up (0x55); a real module also starts asleep. */
  awake = false;
  /** Answers nothing at all while true (unplugged, powered off, wrong baud rate). */
  silent = false;
  /** The next answer's LEN checksum is wrong. */
  corruptNextLcs = false;
  /** The next answer's data checksum is wrong. */
  corruptNextDcs = false;
  /** The next command is answered with a NACK instead of its ACK (asking the host to send it again). */
  nackNext = false;
  /** The next answer claims a LEN past the bytes that follow (the rest never comes). */
  lengthPastBufferNext = false;
  /** The next answer comes this many ms after its ACK (0: at once). */
  lateNextByMs = 0;
  /** Command codes received, in order (every good frame, resends included). */
  readonly received: number[] = [];
  private uid: number[] | null = null;
  private buffer: number[] = [];
  private lastAnswer: number[] | null = null;
  private readonly firmware: [number, number, number, number];
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly write: (bytes: Buffer) => void,
    options: Pn532EmulatorOptions = {},
  ) {
    this.firmware = options.firmware ?? [0x32, 0x01, 0x06, 0x07];
  }

  /** A card on the reader: its UID as the PN532 reports it (4, 7 or 10 bytes; any length, to test a refusal). */
  present(uid: readonly number[]): void {
    this.uid = [...uid];
  }

  /** The card taken away. */
  remove(): void {
    this.uid = null;
  }

  /** Bytes from the host. */
  receive(chunk: Uint8Array): void {
    if (this.silent) return;
    for (const byte of chunk) {
      if (!this.awake) {
        if (byte === 0x55) this.awake = true; // the rest of the wake-up (0x55 and zeros) is not a frame
        continue;
      }
      this.buffer.push(byte);
    }
    this.parse();
  }

  /** Ends the delayed answers (the test is over). */
  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private parse(): void {
    for (;;) {
      let start = -1;
      for (let i = 0; i + 1 < this.buffer.length; i++) {
        if (this.buffer[i] === 0x00 && this.buffer[i + 1] === 0xff) {
          start = i;
          break;
        }
      }
      if (start < 0) {
        this.buffer = this.buffer.slice(-1);
        return;
      }
      const b = this.buffer.slice(start);
      if (b.length < 4) return;
      const len = b[2]!;
      const lcs = b[3]!;
      if (len === 0x00 && lcs === 0xff) {
        // The host's ACK: an abort of what is in progress. A delayed answer already on its way still comes.
        this.buffer = b.slice(4);
        continue;
      }
      if (len === 0xff && lcs === 0x00) {
        // The host's NACK: the last answer again.
        this.buffer = b.slice(4);
        if (this.lastAnswer) this.send(this.lastAnswer);
        continue;
      }
      if ((len + lcs) % 0x100 !== 0) {
        this.buffer = b.slice(2);
        this.send(ERROR_FRAME);
        continue;
      }
      if (b.length < 4 + len + 1) return;
      const body = b.slice(4, 4 + len);
      const dcs = b[4 + len]!;
      this.buffer = b.slice(4 + len + 1);
      if ((body.reduce((a, c) => a + c, 0) + dcs) % 0x100 !== 0 || body[0] !== 0xd4 || body.length < 2) {
        this.send(ERROR_FRAME);
        continue;
      }
      this.command(body[1]!, body.slice(2));
    }
  }

  private command(code: number, params: number[]): void {
    this.received.push(code);
    if (this.nackNext) {
      this.nackNext = false;
      this.send(NACK);
      return;
    }
    const answer = this.answer(code, params);
    this.send(ACK);
    if (!answer) {
      this.send(ERROR_FRAME);
      return;
    }
    const bytes = this.damaged(frame(answer));
    this.lastAnswer = frame(answer);
    const delay = this.lateNextByMs;
    this.lateNextByMs = 0;
    if (delay <= 0) {
      this.send(bytes);
      return;
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.silent) this.send(bytes);
    }, delay);
    this.timers.add(timer);
  }

  /** The answer's data (response code first), or null for a command it does not know. */
  private answer(code: number, params: number[]): number[] | null {
    switch (code) {
      case 0x02:
        return [0x03, ...this.firmware];
      case 0x14:
        return [0x15];
      case 0x32:
        return [0x33];
      case 0x4a: {
        if (params[1] !== 0x00 || !this.uid) return [0x4b, 0x00];
        // Tg 1, SENS_RES (ATQA), SEL_RES (SAK), NFCIDLength, NFCID1.
        const atqa = this.uid.length === 4 ? [0x00, 0x04] : [0x00, 0x44];
        return [0x4b, 0x01, 0x01, ...atqa, 0x08, this.uid.length, ...this.uid];
      }
      default:
        return null;
    }
  }

  /** The switches for the next answer. */
  private damaged(bytes: number[]): number[] {
    const out = [...bytes];
    if (this.corruptNextLcs) {
      this.corruptNextLcs = false;
      out[4] = (out[4]! + 1) % 0x100;
    } else if (this.corruptNextDcs) {
      this.corruptNextDcs = false;
      out[out.length - 2] = (out[out.length - 2]! + 1) % 0x100;
    } else if (this.lengthPastBufferNext) {
      this.lengthPastBufferNext = false;
      // LEN 200 (its LCS right), then a few bytes and nothing more.
      return [0x00, 0x00, 0xff, 200, 0x100 - 200, ...out.slice(5, 8)];
    }
    return out;
  }

  private send(bytes: number[]): void {
    this.write(Buffer.from(bytes));
  }
}
