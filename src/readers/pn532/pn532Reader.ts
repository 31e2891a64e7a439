import { backoffDelay, type BackoffOptions } from '../../util/backoff.js';
import { NoiseReporter } from '../noiseReporter.js';
import type { ReaderOptionsOf } from '../options.js';
import { credentialsFrom, type Reader, type ReaderContext } from '../reader.js';
import { openSerialPort, type PortLike } from '../serial/port.js';
import { portCloseReason } from '../serial/closeReason.js';
import {
  describeFirmware,
  getFirmwareVersion,
  HSU_WAKE_UP,
  listOneTypeA,
  maxRetries,
  parseFirmwareVersion,
  parseTypeATarget,
  samNormalMode,
} from './commands.js';
import { Pn532Link, type Pn532Timing } from './link.js';
import { TapFilter } from './taps.js';
import { uidToCardNumber } from './uid.js';

type Pn532Options = ReaderOptionsOf<'pn532'>;

/** A reader that is gone or silent is opened again after 1 s, doubling to 30 s, with jitter (docs/hardware.md). */
const PN532_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 30_000, jitter: 0.2 };
/** Polls in a row without an answer (each after its resends) that make the reader offline. */
const SILENT_POLLS_OFFLINE = 3;
/** InListPassiveTarget's activation retries (RFConfiguration MaxRetries): it answers "no target" within milliseconds. */
const PASSIVE_RETRIES = 2;
const NOISE_REPORT_MS = 1000;

/**
 * A door's PN532 NFC reader on a serial port (HSU): wakes it, sets it up (SAMConfiguration in normal mode, a finite
 * activation retry count), reads its firmware version (for status), then polls InListPassiveTarget for one
 * ISO 14443 A card every `pollMs`. A card's UID becomes its card number (uid.ts), once per presentation (taps.ts).
 * A port that closes or fails to open, a set-up that is not answered, or SILENT_POLLS_OFFLINE silent polls: the
 * reader goes offline (reader_offline), the port is closed and opened again with backoff, and set up again.
 */
export class Pn532Reader implements Reader {
  private port: PortLike | null = null;
  private link: Pn532Link | null = null;
  private stopped = true;
  private online = false;
  /** Whether reader_online was recorded for this spell (reader_offline follows only one). */
  private onlineReported = false;
  private attempt = 0;
  private outageLogged = false;
  private retryTimer: unknown = null;
  private pollTimer: unknown = null;
  private silentPolls = 0;
  /** Bumped at each session, so a command that settles after its port was replaced is ignored. */
  private session = 0;
  private readonly taps: TapFilter;
  private readonly noise: NoiseReporter;
  private readonly onFrame;

  constructor(
    private readonly options: Pn532Options,
    private readonly context: ReaderContext,
    private readonly timing: Partial<Pn532Timing> = {},
  ) {
    this.taps = new TapFilter(options.releaseMs);
    this.onFrame = credentialsFrom('decimal', context);
    this.noise = new NoiseReporter({
      timers: context.timers,
      intervalMs: NOISE_REPORT_MS,
      report: (summary) => {
        context.logger.warn(
          { path: options.path, frames: summary.count, reasons: summary.reasons },
          'PN532 frames dropped (bad checksum or length); the commands were sent again',
        );
        context.events.noise?.(summary);
      },
    });
  }

  get connected(): boolean {
    return this.online;
  }

  start(): void {
    this.stopped = false;
    this.open();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.session += 1;
    this.clearTimers();
    this.noise.flush();
    this.link?.close();
    this.link = null;
    const port = this.port;
    this.port = null;
    // Stopped by the agent: disconnected, without a reader_offline event.
    if (this.online) {
      this.online = false;
      this.context.events.connection(false);
    }
    if (port?.isOpen) await new Promise<void>((resolve) => port.close(() => resolve()));
    port?.removeAllListeners();
  }

  private get logger() {
    return this.context.logger;
  }

  private open(): void {
    if (this.stopped) return;
    const { path, baudRate } = this.options;
    const session = ++this.session;
    const port = (this.context.openPort ?? openSerialPort)(path, baudRate);
    this.port = port;
    port.on('error', (err) => this.logger.debug({ err, path }, 'PN532 port error'));
    port.on('close', (err) => {
      if (session === this.session) this.lost(portCloseReason(err));
    });
    port.on('data', (chunk) => {
      if (session === this.session) this.link?.receive(chunk);
    });
    port.open((err) => {
      if (this.stopped || session !== this.session) {
        if (!err) port.close();
        return;
      }
      if (err) {
        this.lost(`cannot open ${path}: ${err.message}`);
        return;
      }
      if (!port.write) {
        this.lost(`${path} cannot be written`);
        return;
      }
      const write = port.write.bind(port);
      this.link = new Pn532Link({
        write: (bytes) => void write(bytes),
        timers: this.context.timers,
        logger: this.logger,
        timing: this.timing,
        onFrameError: (e) => this.noise.add(0, [e.error]),
      });
      void this.setUp(session);
    });
  }

  /** The wake-up and set-up; the reader is online once its firmware version is read. */
  private async setUp(session: number): Promise<void> {
    const link = this.link!;
    try {
      await link.command(samNormalMode(), HSU_WAKE_UP);
      await link.command(maxRetries(PASSIVE_RETRIES));
      const firmware = parseFirmwareVersion(await link.command(getFirmwareVersion()));
      if (session !== this.session) return;
      if (!firmware) throw new Error('a firmware version answer too short');
      this.goOnline(describeFirmware(firmware));
    } catch (err) {
      if (session === this.session) this.lost(`no answer to the set-up: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    this.schedulePoll(session, 0);
  }

  private goOnline(firmware: string): void {
    this.attempt = 0;
    this.outageLogged = false;
    this.silentPolls = 0;
    this.taps.release();
    this.online = true;
    this.onlineReported = true;
    this.context.events.identity?.(firmware);
    this.context.events.connection(true);
    this.context.events.audit?.('reader_online', { firmware });
    this.logger.info({ path: this.options.path, firmware }, 'PN532 reader online');
  }

  private schedulePoll(session: number, delay: number): void {
    if (this.stopped || session !== this.session) return;
    this.pollTimer = this.context.timers.setTimeout(() => {
      this.pollTimer = null;
      void this.poll(session);
    }, delay);
  }

  private async poll(session: number): Promise<void> {
    const link = this.link;
    if (!link || session !== this.session) return;
    let answer: Buffer;
    try {
      answer = await link.command(listOneTypeA());
    } catch (err) {
      if (session !== this.session) return;
      this.silentPolls += 1;
      this.logger.debug({ err, silentPolls: this.silentPolls }, 'PN532 poll not answered');
      if (this.silentPolls >= SILENT_POLLS_OFFLINE) {
        this.lost(`${this.silentPolls} polls in a row not answered`);
        return;
      }
      this.schedulePoll(session, this.options.pollMs);
      return;
    }
    if (session !== this.session) return;
    this.silentPolls = 0;
    this.target(answer);
    this.schedulePoll(session, this.options.pollMs);
  }

  /** One poll's answer: no target, or a card (a new tap, or the one still held). */
  private target(answer: Buffer): void {
    const parsed = parseTypeATarget(answer);
    if ('malformed' in parsed) {
      this.noise.add(answer.length, ['malformed_target']);
      this.logger.debug({ reason: parsed.malformed }, 'PN532 target answer dropped');
      return;
    }
    const now = this.context.clock.monoNow();
    if (!this.taps.seen(parsed.uid?.toString('hex') ?? null, now) || !parsed.uid) return;
    const card = uidToCardNumber(parsed.uid, this.options.uidByteOrder);
    if ('refused' in card) {
      this.logger.warn({ path: this.options.path, uidBytes: parsed.uid.length }, `PN532 card refused: ${card.refused}`);
      return;
    }
    this.onFrame({ kind: 'card', value: card.number });
  }

  /** The reader is gone or silent: offline, the port closed, opened again with backoff. */
  private lost(reason: string): void {
    if (this.stopped) return;
    this.session += 1;
    this.clearTimers();
    this.link?.close();
    this.link = null;
    const port = this.port;
    this.port = null;
    port?.removeAllListeners();
    if (port?.isOpen) port.close(() => undefined);
    this.taps.release();
    const { path } = this.options;
    if (this.online) {
      this.online = false;
      this.context.events.connection(false);
    }
    if (this.onlineReported) {
      this.onlineReported = false;
      this.context.events.audit?.('reader_offline', { reason });
      this.logger.warn({ path, reason }, 'PN532 reader offline; retrying with backoff');
    } else if (!this.outageLogged) {
      this.logger.warn({ path, reason }, 'PN532 reader not answering; retrying with backoff');
    }
    this.outageLogged = true;
    const delay = backoffDelay(this.attempt++, PN532_BACKOFF);
    this.retryTimer = this.context.timers.setTimeout(() => {
      this.retryTimer = null;
      this.open();
    }, delay);
  }

  private clearTimers(): void {
    for (const timer of [this.retryTimer, this.pollTimer]) if (timer !== null) this.context.timers.clearTimeout(timer);
    this.retryTimer = null;
    this.pollTimer = null;
  }
}
