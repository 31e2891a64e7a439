import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { FileTransferOutcome, TransferProgress } from '../readers/reader.js';
import type { NewEvent } from '../store/eventLog.js';
import type { Clock } from '../util/clock.js';
import type { Door } from './door.js';
import { chooseReader } from './readerNames.js';

export type { TransferProgress } from '../readers/reader.js';

/** A transfer's end: confirmed with the firmware the reader names now, or why not (`refused`: nothing was sent). */
export type FirmwareResult = FileTransferOutcome | { ok: false; reason: string; version: null; refused: true };

export interface FirmwareRequest {
  /** The firmware the reader must name afterwards; without: any other than the one it had. */
  expectVersion?: string;
  /** The file's name, for the audit log. */
  name?: string;
  /** Who asked, for the audit log: `{ origin: 'local', user }`, `{ origin: 'fleet', task_id }`. */
  by?: Record<string, unknown>;
}

/**
 * Reader firmware over OSDP for the whole daemon (docs/hardware.md, "Reader firmware"): one reader at a time, never
 * two at once (a second request while one runs is refused), so a door is never without its readers for long.
 * The control socket's `reader-firmware` and the fleet's tasks both come here. Each transfer is audited
 * (`reader_firmware`: started, done with the new firmware, failed with the reason).
 */
export class ReaderFirmware {
  private running: string | null = null;

  constructor(private readonly deps: { doors: readonly Door[]; append: (event: NewEvent) => void; clock: Clock; logger: Logger }) {}

  /** The reader being updated now (as a request names it), null when none. */
  get busy(): string | null {
    return this.running;
  }

  /**
   * Sends `bytes` to the reader `readerName` names (`DOOR`, `DOOR:exit`; docs/local-control.md) and confirms the
   * reader runs the new firmware afterwards. Never throws.
   */
  async transferFirmware(
    readerName: string,
    bytes: Buffer,
    onProgress: (progress: TransferProgress) => void = () => {},
    request: FirmwareRequest = {},
  ): Promise<FirmwareResult> {
    const choice = chooseReader(this.deps.doors, readerName);
    if ('problem' in choice) return { ok: false, reason: choice.problem, version: null, refused: true };
    const { door, direction } = choice;
    const label = `${door.options.name}'s ${direction} reader`;
    if (this.running !== null)
      return {
        ok: false,
        reason: `a reader firmware transfer is under way (${this.running}): one reader at a time; try again when it is over`,
        version: null,
        refused: true,
      };
    const options = direction === 'entry' ? door.options.reader : door.options.exitReader;
    if (options?.type !== 'osdp')
      return { ok: false, reason: `${label} is not an OSDP reader: a reader's firmware goes over OSDP only`, version: null, refused: true };
    this.running = label;
    const uuid = door.options.uuid;
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const base = Object.assign({ reader: direction, bytes: bytes.length, sha256 }, request.name === undefined ? {} : { file: request.name }, request.by ?? {});
    this.audit(uuid, Object.assign({ state: 'started' }, base));
    const log = this.deps.logger.child({ door: uuid, reader: direction });
    log.info({ bytes: bytes.length, sha256 }, 'reader firmware transfer started');
    try {
      const expect = request.expectVersion === undefined ? {} : { expectVersion: request.expectVersion };
      const outcome = await door.transferReaderFile(direction, bytes, expect, onProgress);
      if (outcome.ok) this.audit(uuid, Object.assign({ state: 'done', firmware: outcome.version, previous: outcome.previous }, base));
      else this.audit(uuid, Object.assign({ state: 'failed', reason: outcome.reason, firmware: outcome.version }, base));
      return outcome;
    } catch (err) {
      const reason = `the transfer failed: ${err instanceof Error ? err.message : String(err)}`;
      log.error({ err }, 'reader firmware transfer failed');
      this.audit(uuid, Object.assign({ state: 'failed', reason, firmware: null }, base));
      return { ok: false, reason, version: null };
    } finally {
      this.running = null;
    }
  }

  private audit(door: string, data: Record<string, unknown>): void {
    try {
      this.deps.append({ type: 'reader_firmware', door, at: this.deps.clock.wallNow(), data });
    } catch (err) {
      this.deps.logger.error({ err }, 'cannot record a reader firmware transfer');
    }
  }
}
