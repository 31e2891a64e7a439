import type { Logger } from 'pino';
import type { CardFormat } from '../../core/credentials.js';
import { backoffDelay } from '../../util/backoff.js';
import type { Clock, Timers } from '../../util/clock.js';
import { READER_BACKOFF, openSerialPort, type PortFactory, type PortLike } from './port.js';
import { portCloseReason } from './closeReason.js';
import { NoiseReporter } from '../noiseReporter.js';
import { Rdm6300FrameParser, type Rdm6300Numbering } from './rdm6300Frames.js';
import { ReaderFrameParser, type FrameParser, type ReaderFrame } from '../readerFrames.js';
import type { FeedbackKind } from '../options.js';
import type { Reader } from '../reader.js';
import { replyFor } from '../readerFeedback.js';

export type SerialFormat = 'lines' | 'rdm6300';

export type { PortFactory, PortLike } from './port.js';

const IDLE_CHECK_MS = 250;
const NOISE_WARNING_INTERVAL_MS = 1000;

export interface SerialReaderOptions {
  path: string;
  baudRate: number;
  cardFormat: CardFormat;
  /** lines: CR/LF-terminated cards, keys and tokens (default); rdm6300: STX/ETX binary frames of 125 kHz modules. */
  format?: SerialFormat;
  /** rdm6300: the last 32 bits of the ID (default) or all 40. */
  numbering?: Rdm6300Numbering;
  /** Lines written back to the reader per outcome (e.g. "OK\r\n"): its feedback. */
  replies?: Partial<Record<FeedbackKind, string>>;
  onFrame: (frame: ReaderFrame) => void;
  onConnectionChange?: (connected: boolean) => void;
  logger: Logger;
  clock: Clock;
  timers: Timers;
  openPort?: PortFactory;
}

/**
 * A door's serial reader: opens the configured device (no udev enumeration), frames what it sends, and reopens
 * it with backoff whenever it fails to open, errors or disappears (unplugged), until stopped.
 */
export class SerialReader implements Reader {
  private port: PortLike | null = null;
  private parser: FrameParser;
  private attempt = 0;
  private retryTimer: unknown = null;
  private idleTimer: unknown = null;
  private stopped = false;
  private connectedFlag = false;
  private outageReported = false;
  private readonly noise: NoiseReporter;

  constructor(private readonly options: SerialReaderOptions) {
    this.parser = this.newParser();
    this.noise = new NoiseReporter({
      timers: options.timers,
      intervalMs: NOISE_WARNING_INTERVAL_MS,
      report: ({ units, count, reasons }) =>
        options.logger.warn({ path: options.path, bytes: units, bursts: count, reasons: Object.keys(reasons) }, 'reader noise dropped'),
    });
  }

  private newParser(): FrameParser {
    return this.options.format === 'rdm6300'
      ? new Rdm6300FrameParser({ numbering: this.options.numbering ?? 'last32' })
      : new ReaderFrameParser({ cardFormat: this.options.cardFormat });
  }

  get connected(): boolean {
    return this.connectedFlag;
  }

  /**
   * Writes `text` to the reader (a reply line such as "OK\r\n", as latin1 bytes). False, and nothing written,
   * when the port is not open or cannot be written (a keyboard reader); never throws. A failure of the write
   * itself is reported as the port's error ('reader error').
   */
  send(text: string): boolean {
    const { path, logger } = this.options;
    const port = this.port;
    if (!port || !this.connectedFlag || !port.isOpen || !port.write) {
      logger.debug({ path }, 'reader reply not sent: the reader is not connected');
      return false;
    }
    try {
      port.write(Buffer.from(text, 'latin1'));
      return true;
    } catch (err) {
      logger.debug({ err, path }, 'reader reply not sent');
      return false;
    }
  }

  /** Shows a decision as the reply line configured for it (none for a keyboard reader). Never throws. */
  feedback(kind: FeedbackKind): void {
    const reply = this.options.replies && replyFor(this.options.replies, kind);
    if (reply === undefined) return;
    try {
      this.send(reply);
    } catch (err) {
      this.options.logger.warn({ err }, 'reader reply not sent');
    }
  }

  start(): void {
    this.stopped = false;
    this.open();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.clearTimers();
    const port = this.port;
    this.port = null;
    this.setConnected(false);
    if (port?.isOpen) await new Promise<void>((resolve) => port.close(() => resolve()));
    port?.removeAllListeners();
  }

  private open(): void {
    if (this.stopped) return;
    const { path, baudRate, logger } = this.options;
    const port = (this.options.openPort ?? openSerialPort)(path, baudRate);
    this.port = port;
    port.on('data', (chunk) => this.receive(chunk));
    port.on('error', (err) => logger.warn({ err, path }, 'reader error'));
    port.on('close', (err) => {
      if (this.port !== port) return;
      this.setConnected(false);
      if (!this.stopped) {
        logger.warn({ path, reason: portCloseReason(err) }, 'reader disconnected; reopening');
        this.scheduleReopen();
      }
    });
    port.open((err) => {
      if (this.stopped || this.port !== port) {
        // Stopped (or replaced) while opening: release the device, or its lock would outlive us.
        if (!err) port.close();
        return;
      }
      if (err) {
        if (!this.outageReported) logger.warn({ path, reason: err.message }, 'cannot open reader; retrying with backoff');
        this.outageReported = true;
        this.scheduleReopen();
        return;
      }
      this.attempt = 0;
      this.outageReported = false;
      this.parser = this.newParser();
      this.setConnected(true);
      logger.info({ path, baudRate }, 'reader connected');
    });
  }

  private scheduleReopen(): void {
    const old = this.port;
    this.port = null;
    old?.removeAllListeners();
    if (this.stopped || this.retryTimer !== null) return;
    const delay = backoffDelay(this.attempt++, READER_BACKOFF);
    this.retryTimer = this.options.timers.setTimeout(() => {
      this.retryTimer = null;
      this.open();
    }, delay);
  }

  private receive(chunk: Buffer): void {
    for (const frame of this.parser.feed(chunk, this.options.clock.monoNow())) this.deliver(frame);
    if (this.idleTimer !== null) this.options.timers.clearTimeout(this.idleTimer);
    this.idleTimer = this.options.timers.setTimeout(() => {
      this.idleTimer = null;
      for (const frame of this.parser.idle(this.options.clock.monoNow())) this.deliver(frame);
    }, IDLE_CHECK_MS);
  }

  private deliver(frame: ReaderFrame): void {
    if (frame.kind !== 'noise') {
      this.options.onFrame(frame);
      return;
    }
    // One warning per second at most, however the noise trickles in: a bad cable must not flood the journal.
    this.noise.add(frame.bytes, frame.reasons);
  }

  private setConnected(connected: boolean): void {
    if (connected === this.connectedFlag) return;
    this.connectedFlag = connected;
    this.options.onConnectionChange?.(connected);
  }

  private clearTimers(): void {
    for (const timer of [this.retryTimer, this.idleTimer]) if (timer !== null) this.options.timers.clearTimeout(timer);
    this.retryTimer = null;
    this.idleTimer = null;
    this.noise.flush();
  }
}
