import type { Logger } from 'pino';
import { backoffDelay } from '../../util/backoff.js';
import type { Clock, Timers } from '../../util/clock.js';
import { READER_BACKOFF, openSerialPort, type PortFactory, type PortLike } from '../serial/port.js';
import { portCloseReason } from '../serial/closeReason.js';
import { CMD, OsdpBus, type OsdpReaderOptions } from './controlPanel.js';
import type { Packet } from './packet.js';
import type { ReaderFeedback } from '../readerFrames.js';
import { textCommand } from './textOutput.js';

const GREEN = 2;
const RED = 1;

/**
 * osdp_LED (temporary: on/off times and the timer in 100 ms units) and osdp_BUZ (on/off in 100 ms units, count)
 * for each feedback: grant green 2 s and one beep; deny red 1 s and three quick beeps; lockout red flashing fast
 * for 3 s and five quick beeps; lockdown red flashing slowly for 3 s and three spaced beeps; awaiting (a two-person
 * door's first tap) green flashing for 3 s and two quick beeps.
 * @internal
 */
export function feedbackCommands(kind: ReaderFeedback): Array<{ code: number; data: Buffer }> {
  const led = (color: number, onTenths: number, offTenths: number, timerTenths: number) => ({
    code: CMD.LED,
    data: Buffer.from([0, 0, 0x02, onTenths, offTenths, color, 0, timerTenths & 0xff, timerTenths >> 8, 0x00, 0, 0, 0, 0]),
  });
  const buzz = (onTenths: number, offTenths: number, count: number) => ({ code: CMD.BUZ, data: Buffer.from([0, 0x02, onTenths, offTenths, count]) });
  switch (kind) {
    case 'grant':
      return [led(GREEN, 20, 0, 20), buzz(2, 0, 1)];
    case 'deny':
      return [led(RED, 10, 0, 10), buzz(1, 1, 3)];
    case 'lockedOut':
      return [led(RED, 2, 2, 30), buzz(1, 1, 5)];
    case 'lockdown':
      return [led(RED, 5, 5, 30), buzz(1, 4, 3)];
    case 'awaiting':
      return [led(GREEN, 2, 2, 30), buzz(1, 1, 2)];
    default:
      return [];
  }
}

/** One reader on its bus, as its door holds it. */
export interface OsdpReaderHandle {
  feedback(kind: ReaderFeedback): void;
  /** A command in place of the reader's next poll; resolves with its reply. */
  request(code: number, data: Buffer): Promise<Packet>;
  /** The reader restarts on its own (a firmware installed): it is identified again. */
  reidentify(): void;
  /** The largest osdp_FILETRANSFER fragment its link carries. */
  fragmentLimit(): number;
  detach(): Promise<void>;
}

interface BusEntry {
  bus: OsdpBus;
  baudRate: number;
  port: PortLike | null;
  retry: unknown;
  attempt: number;
  stopped: boolean;
}

/**
 * The OSDP buses of this agent, one per serial device: several doors' readers may share one RS-485 line at
 * different addresses. Each bus opens its device, reopens it with backoff when it goes away (every reader on
 * it is then offline), and polls its readers.
 */
export class OsdpBuses {
  private readonly buses = new Map<string, BusEntry>();

  constructor(
    private readonly deps: {
      clock: Clock;
      timers: Timers;
      logger: Logger;
      openPort?: PortFactory;
      replyTimeoutMs?: number;
      /** The device could not be opened (it is retried with backoff; a one-shot command gives up instead). */
      onOpenError?: (path: string, reason: string) => void;
    },
  ) {}

  /** A reader joins the bus on `path`; the handle gives its feedback (LED, buzzer) and takes it off again. */
  attach(path: string, baudRate: number, reader: OsdpReaderOptions): OsdpReaderHandle {
    let entry = this.buses.get(path);
    if (!entry) {
      const created: BusEntry = {
        bus: new OsdpBus({
          transport: { write: (bytes) => void created.port?.write?.(bytes) },
          clock: this.deps.clock,
          timers: this.deps.timers,
          ...(this.deps.replyTimeoutMs ? { replyTimeoutMs: this.deps.replyTimeoutMs } : {}),
        }),
        baudRate,
        port: null,
        retry: null,
        attempt: 0,
        stopped: false,
      };
      entry = created;
      this.buses.set(path, created);
      this.open(path, created);
      created.bus.start();
    }
    const bus = entry;
    bus.bus.addReader(reader);
    return {
      feedback: (kind) => {
        for (const command of feedbackCommands(kind)) bus.bus.send(reader.address, command.code, command.data);
        // After the LED and the beep, so a display that is slow or refuses the text delays neither.
        const text = textCommand(kind, reader.text);
        if (text && bus.bus.hasTextOutput(reader.address)) bus.bus.send(reader.address, text.code, text.data);
      },
      request: (code, data) => bus.bus.request(reader.address, code, data),
      reidentify: () => bus.bus.reidentify(reader.address),
      fragmentLimit: () => bus.bus.fragmentLimit(reader.address),
      detach: async () => {
        bus.bus.removeReader(reader.address);
        if (bus.bus.readerCount === 0) await this.close(path, bus);
      },
    };
  }

  private open(path: string, entry: BusEntry): void {
    if (entry.stopped) return;
    const port = (this.deps.openPort ?? openSerialPort)(path, entry.baudRate);
    entry.port = port;
    port.on('data', (chunk) => entry.bus.receive(chunk));
    port.on('error', (err) => this.deps.logger.warn({ err, path }, 'OSDP bus error'));
    port.on('close', (err) => {
      if (entry.port !== port) return;
      entry.port = null;
      entry.bus.lineLost();
      if (!entry.stopped) {
        this.deps.logger.warn({ path, reason: portCloseReason(err) }, 'OSDP bus disconnected; reopening');
        this.reopen(path, entry);
      }
    });
    port.open((err) => {
      if (entry.stopped || entry.port !== port) {
        if (!err) port.close();
        return;
      }
      if (err) {
        if (entry.attempt === 0) this.deps.logger.warn({ path, reason: err.message }, 'cannot open the OSDP bus; retrying with backoff');
        this.deps.onOpenError?.(path, err.message);
        entry.port = null;
        port.removeAllListeners();
        this.reopen(path, entry);
        return;
      }
      entry.attempt = 0;
      this.deps.logger.info({ path, baudRate: entry.baudRate }, 'OSDP bus open');
    });
  }

  private reopen(path: string, entry: BusEntry): void {
    if (entry.stopped || entry.retry !== null) return;
    entry.retry = this.deps.timers.setTimeout(
      () => {
        entry.retry = null;
        this.open(path, entry);
      },
      backoffDelay(entry.attempt++, READER_BACKOFF),
    );
  }

  private async close(path: string, entry: BusEntry): Promise<void> {
    entry.stopped = true;
    entry.bus.stop();
    if (entry.retry !== null) this.deps.timers.clearTimeout(entry.retry);
    this.buses.delete(path);
    const port = entry.port;
    entry.port = null;
    if (port?.isOpen) await new Promise<void>((resolve) => port.close(() => resolve()));
    port?.removeAllListeners();
  }
}
