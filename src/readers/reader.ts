import type { Logger } from 'pino';
import type { CardFormat, CredentialKind } from '../core/credentials.js';
import type { WiegandCardFrame } from '../core/wiegand.js';
import { normalizeCredential } from '../core/credentials.js';
import type { GpioDriver } from '../hardware/gpio.js';
import type { Clock, Timers } from '../util/clock.js';
import type { NoiseSummary } from './noiseReporter.js';
import type { FeedbackKind } from './options.js';
import type { OsdpBuses } from './osdp/osdpBuses.js';
import type { ChannelState } from './osdp/pacing.js';
import type { FileTransferOutcome, TransferProgress } from './osdp/fileTransfer.js';
import type { ReaderFrame } from './readerFrames.js';
import type { PortFactory } from './serial/port.js';

// What a reader's file transfer answers, part of the contract: the door takes them from here.
export type { FileTransferOutcome, TransferProgress };

/**
 * A credential as a reader hands it on, normalized once, here: a card number as its decimal integer (in the
 * reader's format and numbering), a PIN's digits as typed, a QR token as framed. Nothing downstream normalizes it
 * again.
 */
export interface Credential {
  kind: CredentialKind;
  value: string;
  /** A card whose format has a facility: its printed form `facility:card`, tried when `value` matches nobody. */
  printed?: string;
  /** A Wiegand or OSDP card: its bits as decoded, which a learn session shows in every numbering (never decided on). */
  decoded?: WiegandCardFrame;
}

/** A reader's own state, for the door's audit log (OSDP readers report it). */
export const READER_AUDIT_TYPES = ['reader_online', 'reader_offline', 'reader_tamper', 'reader_power'] as const;
export type ReaderAuditType = (typeof READER_AUDIT_TYPES)[number];

/** What a reader tells its door. */
export interface ReaderEvents {
  /** A card presented, a PIN entered (KeypadEntry), a token scanned: once per presentation, normalized. */
  credential(credential: Credential): void;
  /** The device came or went (opened, unplugged, online on its bus). */
  connection(connected: boolean): void;
  /** Frames dropped (noise, parity, a bounce), summed: for the audit log, never decided. */
  noise?(summary: NoiseSummary): void;
  /** The reader's own state changed (online, offline, tamper, power). */
  audit?(type: ReaderAuditType, data: Record<string, unknown>): void;
  /** An OSDP reader's secure channel as it is now, for status. */
  channel?(state: ChannelState): void;
  /** What the device says it is (a PN532's firmware version, "PN532 v1.6"), for status. */
  identity?(text: string): void;
}

/** What the registry gives every reader it creates; each type takes what it needs. */
export interface ReaderContext {
  /** A child logger that already names the door. */
  logger: Logger;
  clock: Clock;
  timers: Timers;
  gpio: GpioDriver;
  events: ReaderEvents;
  /** Opens serial devices (serialport; tests give a fake or a pty). */
  openPort?: PortFactory;
  /** Opens keyboard readers (input devices); tests give a fake of the system. */
  openInputDevice?: PortFactory;
  /** The agent's OSDP buses (shared by the doors whose readers are on one line). */
  osdp?: OsdpBuses;
}

/**
 * The one contract every reader type keeps (docs/architecture.md, "Adding a reader type"): started and stopped by
 * its door, it reports credentials and its connection through ReaderEvents, and shows a decision when the
 * device can (a reply line, OSDP's LED and beeper; GPIO LED and buzzer lines are the door's, readerFeedback.ts).
 */
export interface Reader {
  start(): void;
  /** Releases the device (closes the port, the lines, leaves the bus). */
  stop(): Promise<void>;
  /** Whether the device is there now. */
  readonly connected: boolean;
  /** Shows a decision at the device. Never throws. */
  feedback?(kind: FeedbackKind): void;
  /**
   * Sends the device a firmware file and confirms it installed (OSDP's osdp_FILETRANSFER); absent on a type that
   * cannot. Never throws: a refusal or a failure is the outcome's reason.
   */
  transferFile?(file: Buffer, options: { expectVersion?: string }, onProgress: (progress: TransferProgress) => void): Promise<FileTransferOutcome>;
}

/**
 * The one place a reader's frames become credentials: a card number normalized per the reader's format (decimal
 * or hex; Wiegand, RDM6300 and OSDP numbers are decimal by construction), PINs and tokens checked. Keypad clears
 * and noise are not credentials. A malformed one is logged and dropped.
 */
export function credentialsFrom(format: CardFormat, context: Pick<ReaderContext, 'events' | 'logger'>): (frame: ReaderFrame) => void {
  return (frame) => {
    if (frame.kind === 'noise' || frame.kind === 'keypad_cleared') return;
    const value = normalizeCredential(frame.value, frame.kind, format);
    if (value === null) {
      context.logger.warn({ kind: frame.kind }, 'malformed credential from the reader dropped');
      return;
    }
    const credential: Credential = { kind: frame.kind, value };
    if (frame.kind === 'card' && frame.printed !== undefined && frame.printed !== value) credential.printed = frame.printed;
    if (frame.kind === 'card' && frame.decoded !== undefined) credential.decoded = frame.decoded;
    context.events.credential(credential);
  };
}
