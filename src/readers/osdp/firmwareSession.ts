import type { Clock, Timers } from '../../util/clock.js';
import { CMD } from './codes.js';
import { FileTransfer, type FileTransferOutcome, type TransferProgress } from './fileTransfer.js';
import type { OsdpReaderHandle } from './osdpBuses.js';

export interface FirmwareSessionOptions {
  /** The firmware the reader named before (its osdp_PDID), null when unknown. */
  firmwareBefore: string | null;
  /** The firmware it must name afterwards; without: any other than before. */
  expectVersion?: string;
  /** How long it may take to come back and name its firmware once it took the file (ms). */
  confirmTimeoutMs?: number;
}

/**
 * One file transfer to a reader over its bus (fileTransfer.ts decides, this drives it): each osdp_FILETRANSFER
 * goes out in place of one of the reader's polls (the bus's request), so the reader is polled as ever while its
 * FtDelay runs, and the other readers on the bus keep their turns. Once the reader took the file it is asked who it
 * is again, and the firmware it names (`identified`, from its door's reader) ends the transfer.
 */
export class FirmwareSession {
  private readonly transfer: FileTransfer;
  private wake: (() => void) | null = null;
  private timer: unknown = null;
  private endNow: () => void = () => {};
  private readonly ended = new Promise<void>((resolve) => {
    this.endNow = resolve;
  });

  constructor(
    file: Buffer,
    options: FirmwareSessionOptions,
    private readonly deps: {
      handle: Pick<OsdpReaderHandle, 'request' | 'reidentify' | 'fragmentLimit'>;
      clock: Clock;
      timers: Timers;
      onProgress: (progress: TransferProgress) => void;
    },
  ) {
    const transferOptions = Object.assign(
      { linkLimit: deps.handle.fragmentLimit(), firmwareBefore: options.firmwareBefore },
      options.expectVersion === undefined ? {} : { expectVersion: options.expectVersion },
      options.confirmTimeoutMs === undefined ? {} : { confirmTimeoutMs: options.confirmTimeoutMs },
    );
    this.transfer = new FileTransfer(file, transferOptions, deps.clock.monoNow());
  }

  /** The reader named its firmware (osdp_PDID). */
  identified(firmware: string): void {
    this.transfer.identified(firmware);
    this.wakeUp();
  }

  /** Ends the transfer as failed with `reason` (the reader leaves the bus, the daemon stops). */
  cancel(reason: string): void {
    this.transfer.cancel(reason);
    this.endNow();
    this.wakeUp();
  }

  async run(): Promise<FileTransferOutcome> {
    const { handle, clock } = this.deps;
    for (;;) {
      const step = this.transfer.next(clock.monoNow());
      switch (step.kind) {
        case 'over':
          return step.outcome;
        case 'send': {
          const reply = handle.request(CMD.FILETRANSFER, step.data).then(
            (packet) => this.transfer.replied(packet.code, packet.data, clock.monoNow()),
            (err: unknown) => this.transfer.lost(err instanceof Error ? err.message : String(err)),
          );
          // A reader taken off the bus mid-command leaves its request unanswered: cancel does not wait for it.
          await Promise.race([reply, this.ended]);
          this.deps.onProgress(this.transfer.progress);
          break;
        }
        case 'reidentify':
          handle.reidentify();
          this.deps.onProgress(this.transfer.progress);
          break;
        case 'wait':
        case 'identity':
          await this.sleepUntil(step.until);
          break;
      }
    }
  }

  private sleepUntil(until: number): Promise<void> {
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = this.deps.timers.setTimeout(() => this.wakeUp(), Math.max(0, until - this.deps.clock.monoNow()));
    });
  }

  private wakeUp(): void {
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}
