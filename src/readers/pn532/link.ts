import type { Logger } from 'pino';
import type { Timers } from '../../util/clock.js';
import { ACK_FRAME, encodeFrame, Pn532FrameParser, TFI_PN532, type Pn532FrameError, type Pn532Received } from './frames.js';

/** How long the link waits, and how often it sends a command again (docs/hardware.md, "PN532"). */
export interface Pn532Timing {
  /** The ACK must come within this (ms); the manual gives the PN532 about 15 ms, a loaded board and a USB adapter need more. */
  ackTimeoutMs: number;
  /** The answer must come within this after the ACK (ms); a later one is ignored. */
  responseTimeoutMs: number;
  /** Sends per command: the first and its resends after a NACK, a bad frame or no answer. */
  attempts: number;
  /** Bytes of one frame further apart than this (ms): the partial frame is settled (a LEN past what came). */
  interByteTimeoutMs: number;
}

const PN532_TIMING: Pn532Timing = { ackTimeoutMs: 300, responseTimeoutMs: 1000, attempts: 3, interByteTimeoutMs: 100 };

/** A command the PN532 did not answer after every attempt; `reason` names the last failure. */
class Pn532CommandError extends Error {
  constructor(
    readonly command: number,
    readonly reason: string,
  ) {
    super(`PN532 command 0x${command.toString(16).padStart(2, '0')}: ${reason}`);
  }
}

interface Outstanding {
  data: Buffer;
  prefix: Buffer | undefined;
  attempt: number;
  phase: 'ack' | 'response';
  timer: unknown;
  resolve(data: Buffer): void;
  reject(err: Error): void;
}

export interface Pn532LinkOptions {
  write(bytes: Buffer): void;
  timers: Timers;
  logger: Logger;
  timing?: Partial<Pn532Timing>;
  /** A frame that was not one (bad LCS or DCS, a LEN past the buffer): for the reader's noise report. */
  onFrameError?(error: Pn532FrameError): void;
}

/**
 * The host's side of the PN532's command exchange: one command at a time, each waiting for its ACK and then its
 * answer. A NACK, a bad frame, an error frame or a timeout sends the command again (after an ACK, which aborts
 * what the PN532 may still be doing), up to `attempts`; an answer that comes after its timeout, or before the
 * command's ACK, is not this command's and is ignored.
 */
export class Pn532Link {
  private readonly parser = new Pn532FrameParser();
  private readonly timing: Pn532Timing;
  private outstanding: Outstanding | null = null;
  private idleTimer: unknown = null;
  private closed = false;

  constructor(private readonly options: Pn532LinkOptions) {
    this.timing = Object.assign({}, PN532_TIMING, options.timing);
  }

  /** Sends `data` (command code and parameters; `prefix`: bytes before the frame, the wake-up) and resolves with the answer's data after its code. */
  command(data: Buffer, prefix?: Buffer): Promise<Buffer> {
    if (this.closed) return Promise.reject(new Error('the PN532 link is closed'));
    if (this.outstanding) return Promise.reject(new Error('a PN532 command is already outstanding'));
    return new Promise<Buffer>((resolve, reject) => {
      this.outstanding = { data, prefix, attempt: 0, phase: 'ack', timer: null, resolve, reject };
      this.send();
    });
  }

  /** Bytes from the port. */
  receive(chunk: Buffer): void {
    if (this.closed) return;
    for (const received of this.parser.feed(chunk)) this.handle(received);
    if (this.idleTimer !== null) this.options.timers.clearTimeout(this.idleTimer);
    this.idleTimer = this.options.timers.setTimeout(() => {
      this.idleTimer = null;
      for (const received of this.parser.idle()) this.handle(received);
    }, this.timing.interByteTimeoutMs);
  }

  /** Ends the link: a command outstanding is refused, timers end. */
  close(): void {
    this.closed = true;
    if (this.idleTimer !== null) this.options.timers.clearTimeout(this.idleTimer);
    this.idleTimer = null;
    const o = this.outstanding;
    this.outstanding = null;
    if (o) {
      this.options.timers.clearTimeout(o.timer);
      o.reject(new Error('the PN532 link is closed'));
    }
  }

  private send(): void {
    const o = this.outstanding!;
    o.attempt += 1;
    o.phase = 'ack';
    const frame = encodeFrame(o.data);
    try {
      this.options.write(o.prefix ? Buffer.concat([o.prefix, frame]) : frame);
    } catch (err) {
      this.finish((x) => x.reject(err instanceof Error ? err : new Error(String(err))));
      return;
    }
    o.timer = this.options.timers.setTimeout(() => this.retry('no ACK'), this.timing.ackTimeoutMs);
  }

  /** This attempt failed: the command again, or refused after the last attempt. */
  private retry(reason: string): void {
    const o = this.outstanding;
    if (!o) return;
    this.options.timers.clearTimeout(o.timer);
    this.options.logger.debug({ command: o.data[0], attempt: o.attempt, reason }, 'PN532 command sent again');
    if (o.attempt >= this.timing.attempts) {
      this.finish((x) => x.reject(new Pn532CommandError(x.data[0]!, reason)));
      return;
    }
    // An ACK from the host aborts a command the PN532 may still be working on (UM0701-02 6.2.1.3).
    if (o.phase === 'response') this.write(ACK_FRAME);
    this.send();
  }

  private write(bytes: Buffer): void {
    try {
      this.options.write(bytes);
    } catch {
      // the resend's own write reports a port that is gone
    }
  }

  private finish(settle: (o: Outstanding) => void): void {
    const o = this.outstanding;
    if (!o) return;
    this.options.timers.clearTimeout(o.timer);
    this.outstanding = null;
    settle(o);
  }

  private handle(received: Pn532Received): void {
    const o = this.outstanding;
    switch (received.kind) {
      case 'frame_error':
        // Summed and reported by the reader (once a second at most): a bad cable must not flood the journal.
        this.options.logger.debug({ error: received.error, detail: received.detail }, 'PN532 frame dropped');
        this.options.onFrameError?.(received);
        if (o) this.retry(received.error);
        return;
      case 'nack':
        if (o) this.retry('NACK');
        return;
      case 'error_frame':
        if (o) this.retry('error frame');
        return;
      case 'ack':
        if (o?.phase !== 'ack') return;
        this.options.timers.clearTimeout(o.timer);
        o.phase = 'response';
        o.timer = this.options.timers.setTimeout(() => this.retry('no answer'), this.timing.responseTimeoutMs);
        return;
      case 'info':
        if (o?.phase === 'response' && received.tfi === TFI_PN532 && received.data[0] === o.data[0]! + 1) {
          this.finish((x) => x.resolve(received.data.subarray(1)));
          return;
        }
        // After its timeout (the command was sent again or given up), or not the command outstanding.
        this.options.logger.debug(
          { tfi: received.tfi, code: received.data[0], outstanding: o?.data[0] ?? null },
          'PN532 answer ignored: late, or not for the command outstanding',
        );
        return;
    }
  }
}
