import type { Logger } from 'pino';
import { readScbk } from '../config/secrets.js';
import type { OsdpBuses } from '../hardware/osdp/osdpBuses.js';
import type { DoorRuntime } from './doorRuntime.js';
import type { FeedbackKind, ReaderOptions } from './options.js';

type OsdpOptions = Extract<ReaderOptions, { type: 'osdp' }>;

/**
 * A door's OSDP reader: its place on a shared bus, its frames into the door runtime, the door's decisions back as
 * LED and buzzer, and its state (online, secure channel, tamper, power) into the audit log and status.
 */
export class OsdpDoorReader {
  private handle: { feedback(kind: FeedbackKind): void; detach(): Promise<void> } | null = null;
  private online = false;
  private tamper = false;
  private powerFailure = false;

  constructor(
    private readonly options: OsdpOptions,
    private readonly buses: OsdpBuses,
    private readonly runtime: DoorRuntime,
    private readonly logger: Logger,
    private readonly onConnection: (connected: boolean) => void,
  ) {}

  get connected(): boolean {
    return this.online;
  }

  start(): void {
    const o = this.options;
    // The key is read at start and kept in memory only; a bad file stops the start with a clear error.
    const scbk = o.scbkFile && !o.installMode ? readScbk('reader.scbkFile', o.scbkFile) : undefined;
    if (!scbk && !o.installMode) this.logger.warn({ path: o.path, address: o.address }, 'OSDP reader without a secure channel (no scbkFile): its traffic can be read and forged on the line');
    if (o.installMode) {
      // SCBK-D is printed in the standard: a channel made with it protects nothing. Only while installing.
      this.logger.warn({ path: o.path, address: o.address }, 'OSDP reader in install mode (the public default key): give it its own key with door-agent reader keyset, then set installMode: false');
    }
    this.handle = this.buses.attach(o.path, o.baudRate, {
      address: o.address,
      numbering: o.numbering,
      ...(scbk ? { scbk } : {}),
      installMode: o.installMode,
      checksum: o.check === 'checksum',
      onFrame: (frame) => this.runtime.onReaderFrame(frame),
      onOnline: (online) => {
        this.online = online;
        this.onConnection(online);
        this.runtime.audit(online ? 'reader_online' : 'reader_offline', { address: o.address });
        this.logger[online ? 'info' : 'warn']({ path: o.path, address: o.address }, online ? 'OSDP reader online' : 'OSDP reader offline');
      },
      onStatus: ({ tamper, powerFailure }) => {
        // Changes only (the state is asked for each time the reader comes online), restores included.
        if (tamper !== this.tamper) this.runtime.audit('reader_tamper', { address: o.address, state: tamper ? 'tampered' : 'restored' });
        if (powerFailure !== this.powerFailure) this.runtime.audit('reader_power', { address: o.address, state: powerFailure ? 'failure' : 'restored' });
        this.tamper = tamper;
        this.powerFailure = powerFailure;
      },
      onSecure: (established) => this.logger.info({ address: o.address }, established ? 'OSDP secure channel established' : 'OSDP secure channel ended'),
      onSecureError: (message) => this.logger.error({ path: o.path, address: o.address }, message),
      onDropped: (reason) => this.runtime.onReaderNoise({ count: 1, units: 0, reasons: { [reason]: 1 } }),
      onIdentified: (id) => this.logger.info({ address: o.address, ...id }, 'OSDP reader identified'),
    });
    this.runtime.setFeedback((kind) => this.handle?.feedback(kind));
  }

  async stop(): Promise<void> {
    this.runtime.setFeedback(null);
    await this.handle?.detach();
    this.handle = null;
  }
}
