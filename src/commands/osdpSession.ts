import { pino } from 'pino';
import type { ReaderOptionsOf } from '../readers/options.js';
import type { Packet } from '../readers/osdp/packet.js';
import { OsdpBuses } from '../readers/osdp/osdpBuses.js';
import type { PortFactory } from '../readers/serial/port.js';
import type { WiegandNumbering } from '../core/wiegandFormats.js';
import { systemClock, systemTimers } from '../util/clock.js';
import { DoorAgentError } from '../util/errors.js';

/**
 * One OSDP reader on its bus, for a maintenance command while the daemon is stopped: the bus is opened for this
 * reader alone, and the session is handed over once the reader answers (a plain reader: its osdp_ID; one with a
 * key: the secure channel), so a command's requests go to a reader known to be there.
 */

export interface OsdpSessionTarget {
  path: string;
  baudRate: number;
  address: number;
  numbering: WiegandNumbering;
  checksum?: boolean;
  /** The secure channel's key; with installMode, SCBK-D; neither: plain. */
  scbk?: Buffer;
  installMode?: boolean;
  /** Each card the reader reads meanwhile, as its raw bits (reader learn). */
  onRawCard?: (bits: number[]) => void;
}

/** A configured OSDP reader as a session's target: over its secure channel with `scbk`, else SCBK-D in installMode, else plain. */
export function sessionTarget(reader: ReaderOptionsOf<'osdp'>, scbk?: Buffer): OsdpSessionTarget {
  return {
    path: reader.path,
    baudRate: reader.baudRate,
    address: reader.address,
    numbering: reader.numbering,
    checksum: reader.check === 'checksum',
    ...(scbk ? { scbk } : reader.installMode ? { installMode: true } : {}),
  };
}

export interface OsdpSession {
  /** A command in place of the next poll; its reply (refused after 5 unanswered tries, or when the reader leaves). */
  request(code: number, data: Buffer): Promise<Packet>;
  close(): Promise<void>;
}

/**
 * Rejects with a DoorAgentError (exit 1) starting with `label` (the door's name): `why` when the reader has not
 * answered within `timeoutMs`, the reason when the bus cannot be opened or the secure channel fails.
 */
export async function openOsdpSession(
  target: OsdpSessionTarget,
  options: { label: string; timeoutMs: number; why: string; openPort?: PortFactory },
): Promise<OsdpSession> {
  const secure = Boolean(target.scbk || target.installMode);
  let ready: () => void = () => {};
  let failed: (message: string) => void = () => {};
  const answered = new Promise<void>((resolve, reject) => {
    ready = resolve;
    failed = (message) => reject(new DoorAgentError(`${options.label}: ${message}`));
  });
  answered.catch(() => {}); // settled through the race below; a late failure must not go unhandled
  const buses = new OsdpBuses({
    clock: systemClock,
    timers: systemTimers,
    logger: pino({ level: 'silent' }),
    ...(options.openPort ? { openPort: options.openPort } : {}),
    // A bus that cannot be opened ends the command at once (the daemon would retry; here nobody waits for it).
    onOpenError: (path, reason) => failed(`cannot open ${path}: ${reason} (is door-agent stopped? it holds the bus while it runs)`),
  });
  const handle = buses.attach(target.path, target.baudRate, {
    address: target.address,
    numbering: target.numbering,
    ...(target.checksum ? { checksum: true } : {}),
    ...(target.scbk ? { scbk: target.scbk } : target.installMode ? { installMode: true } : {}),
    onFrame: () => {},
    ...(target.onRawCard ? { onRawCard: target.onRawCard } : {}),
    onOnline: (online) => online && !secure && ready(),
    onSecure: (up) => up && ready(),
    onSecureError: (message) => failed(message),
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DoorAgentError(`${options.label}: ${options.why}`)), options.timeoutMs);
  });
  try {
    await Promise.race([answered, timeout]);
  } catch (err) {
    await handle.detach();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return { request: (code, data) => handle.request(code, data), close: () => handle.detach() };
}
