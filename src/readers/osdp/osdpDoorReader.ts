import { FormatSet } from '../../core/wiegand.js';
import { readScbk } from '../../util/secretFiles.js';
import type { OsdpBuses, OsdpReaderHandle } from './osdpBuses.js';
import { MAX_FILE_BYTES, type FileTransferOutcome, type TransferProgress } from './fileTransfer.js';
import { FirmwareSession } from './firmwareSession.js';
import type { ChannelState } from './pacing.js';
import type { FeedbackKind, ReaderOptionsOf } from '../options.js';
import { credentialsFrom, type Reader, type ReaderContext } from '../reader.js';

type OsdpOptions = ReaderOptionsOf<'osdp'>;

/**
 * A door's OSDP reader: its place on a shared bus, its credentials to its door, the door's decisions back as
 * LED and buzzer, and its state (online, secure channel, tamper, power) into the audit log and status.
 */
export class OsdpDoorReader implements Reader {
  private handle: OsdpReaderHandle | null = null;
  private online = false;
  /** reader_online waits for the handshake's outcome, so that it can say whether the reader is secure. */
  private onlineReported = false;
  private channel: ChannelState;
  private tamper = false;
  private powerFailure = false;
  /** Said once per start: a configured text the reader cannot show, a text it refused. */
  private textUnusedSaid = false;
  private textRefusedSaid = false;
  /** The firmware it named last (osdp_PDID), null before. */
  private firmware: string | null = null;
  /** A firmware transfer under way: the reader is busy (shown offline, its taps not taken). */
  private session: FirmwareSession | null = null;

  private readonly buses: OsdpBuses;

  constructor(
    private readonly options: OsdpOptions,
    private readonly context: ReaderContext,
  ) {
    if (!context.osdp) throw new Error("an OSDP reader needs the agent's OSDP buses");
    this.buses = context.osdp;
    this.channel = options.scbkFile || options.installMode ? 'pending' : 'plain';
  }

  private get logger() {
    return this.context.logger;
  }

  /** Shows a decision with the reader's LED and beeper, over its bus. */
  feedback(kind: FeedbackKind): void {
    if (!this.session) this.handle?.feedback(kind);
  }

  /** Online on its bus, and not busy with a firmware transfer. */
  get connected(): boolean {
    return this.online && this.session === null;
  }

  /**
   * Sends the reader a firmware file (osdp_FILETRANSFER, fileTransfer.ts) and confirms it took it: it must come
   * back naming another firmware (or `expectVersion`). Meanwhile the reader is shown offline and its taps are not
   * taken (it is busy); the door's other reader decides as ever.
   */
  async transferFile(file: Buffer, options: { expectVersion?: string }, onProgress: (progress: TransferProgress) => void): Promise<FileTransferOutcome> {
    const refused = (reason: string): FileTransferOutcome => ({ ok: false, reason, version: this.firmware });
    const handle = this.handle;
    if (!handle) return refused('the reader is not started');
    if (this.session) return refused('a firmware transfer to this reader is under way already');
    if (!this.online) return refused('the reader is offline: a firmware goes only to a reader that answers');
    if (file.length === 0 || file.length > MAX_FILE_BYTES) return refused(`a firmware file is 1 byte to ${MAX_FILE_BYTES} bytes, not ${file.length}`);
    const session = new FirmwareSession(
      file,
      Object.assign({ firmwareBefore: this.firmware }, options.expectVersion === undefined ? {} : { expectVersion: options.expectVersion }),
      { handle, clock: this.context.clock, timers: this.context.timers, onProgress },
    );
    this.session = session;
    this.context.events.connection(false);
    const where = { path: this.options.path, address: this.options.address };
    this.logger.warn(
      Object.assign({ bytes: file.length, firmware: this.firmware }, where),
      'OSDP reader firmware transfer started: the reader takes no taps until it is over',
    );
    try {
      const outcome = await session.run();
      if (outcome.ok) this.logger.info(Object.assign({ firmware: outcome.version, previous: outcome.previous }, where), 'OSDP reader firmware installed');
      else this.logger.warn(Object.assign({ reason: outcome.reason, firmware: outcome.version }, where), 'OSDP reader firmware transfer failed');
      return outcome;
    } finally {
      this.session = null;
      this.context.events.connection(this.online);
    }
  }

  start(): void {
    const o = this.options;
    // The key is read at start and kept in memory only; a bad file stops the start with a clear error.
    const scbk = o.scbkFile && !o.installMode ? readScbk('reader.scbkFile', o.scbkFile) : undefined;
    if (!scbk && !o.installMode)
      this.logger.warn(
        { path: o.path, address: o.address },
        'OSDP reader without a secure channel (no scbkFile): its traffic can be read and forged on the line',
      );
    if (o.installMode) {
      // SCBK-D is printed in the standard: a channel made with it protects nothing. Only while installing.
      this.logger.warn(
        { path: o.path, address: o.address },
        'OSDP reader in install mode (the public default key): give it its own key with door-agent reader keyset, then set installMode: false',
      );
    }
    const decide = credentialsFrom('decimal', this.context);
    this.handle = this.buses.attach(o.path, o.baudRate, {
      address: o.address,
      numbering: o.numbering,
      ...(o.formats ? { formats: new FormatSet(o.formats) } : {}),
      ...(scbk ? { scbk } : {}),
      installMode: o.installMode,
      checksum: o.check === 'checksum',
      ...(o.text ? { text: o.text } : {}),
      onCapabilities: ({ textOutput }) => {
        if (!o.text || textOutput || this.textUnusedSaid) return;
        this.textUnusedSaid = true;
        this.logger.warn(
          { path: o.path, address: o.address },
          'OSDP reader has no display (its capabilities list no text output): its configured text is not shown',
        );
      },
      onTextRefused: (reason) => {
        if (this.textRefusedSaid) return;
        this.textRefusedSaid = true;
        this.logger.warn({ path: o.path, address: o.address, reason }, 'OSDP reader refused the text for its display');
      },
      onFrame: (frame) => {
        if (!this.session) decide(frame); // busy with a firmware transfer: no tap is taken
      },
      onOnline: (online) => {
        this.online = online;
        if (!this.session) this.context.events.connection(online);
        if (online) this.reportOnline();
        else if (this.onlineReported) {
          this.onlineReported = false;
          this.context.events.audit?.('reader_offline', { address: o.address });
          this.logger.warn({ path: o.path, address: o.address }, 'OSDP reader offline');
        }
      },
      onChannel: (state) => {
        this.channel = state;
        this.context.events.channel?.(state);
        if (this.online) this.reportOnline();
      },
      onQuirk: (message) => this.logger.warn({ path: o.path, address: o.address }, message),
      onStatus: ({ tamper, powerFailure }) => {
        // Changes only (the state is asked for each time the reader comes online), restores included.
        if (tamper !== this.tamper) this.context.events.audit?.('reader_tamper', { address: o.address, state: tamper ? 'tampered' : 'restored' });
        if (powerFailure !== this.powerFailure)
          this.context.events.audit?.('reader_power', { address: o.address, state: powerFailure ? 'failure' : 'restored' });
        this.tamper = tamper;
        this.powerFailure = powerFailure;
      },
      onSecure: (established) => this.logger.info({ address: o.address }, established ? 'OSDP secure channel established' : 'OSDP secure channel ended'),
      onSecureError: (message) => this.logger.error({ path: o.path, address: o.address }, message),
      onDropped: (reason) => this.context.events.noise?.({ count: 1, units: 0, reasons: { [reason]: 1 } }),
      onIdentified: (id) => {
        this.firmware = id.firmware;
        this.logger.info({ address: o.address, ...id }, 'OSDP reader identified');
        this.session?.identified(id.firmware);
      },
    });
  }

  /**
   * reader_online once per time it comes online, with the channel it has: at once for a plain reader, after the
   * handshake's outcome (secure or failed) for one with a key.
   */
  private reportOnline(): void {
    if (this.onlineReported || this.channel === 'pending') return;
    this.onlineReported = true;
    const secure = this.channel === 'secure';
    this.context.events.audit?.('reader_online', { address: this.options.address, secure, channel: this.channel });
    this.logger[secure ? 'info' : 'warn']({ path: this.options.path, address: this.options.address, channel: this.channel }, 'OSDP reader online');
  }

  async stop(): Promise<void> {
    this.session?.cancel('the reader was stopped (the daemon stops)');
    await this.handle?.detach();
    this.handle = null;
    // Off the bus: disconnected, as every reader is once stopped (no reader_offline event: the agent stops it).
    if (this.online) {
      this.online = false;
      this.context.events.connection(false);
    }
  }
}
