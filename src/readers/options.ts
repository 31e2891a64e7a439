import type { CardFormat } from '../core/credentials.js';
import type { Level } from '../core/relay.js';
import type { FormatChoice, WiegandFormatSpec, WiegandNumbering } from '../core/wiegandFormats.js';
import type { Pull } from '../hardware/gpio.js';
import type { UidByteOrder } from './pn532/uid.js';
import type { OsdpTextOptions } from './osdp/textOutput.js';

/** What a reader is told of a decision (its LED and buzzer, a line sent back, OSDP's LED and beeper). */
export type { ReaderFeedback as FeedbackKind } from './readerFrames.js';
import type { ReaderFeedback as FeedbackKind } from './readerFrames.js';

/** A reader's LED or buzzer line: its pin, the level that lights or sounds it, a pattern per outcome (ms on, off, ...). */
export interface SignalLineOptions {
  pin: number;
  activeLevel: Level;
  patterns: Record<FeedbackKind, readonly number[]>;
}

/** The GPIO lines of a reader's LED and buzzer, when the agent drives them. */
export interface SignalLines {
  led?: SignalLineOptions;
  buzzer?: SignalLineOptions;
}

export type ReaderOptions =
  | ({
      type: 'serial';
      path: string;
      baudRate: number;
      cardFormat: CardFormat;
      format: 'lines' | 'rdm6300';
      numbering: 'last32' | 'whole';
      /** Lines written back to the reader per outcome (e.g. "OK\r\n"). */
      replies?: Partial<Record<FeedbackKind, string>>;
    } & SignalLines)
  | ({
      type: 'wiegand';
      d0: number;
      d1: number;
      pull: Pull;
      /** As configured (auto or names); `formats` are those it stands for, resolved by the loader. */
      format: FormatChoice;
      formats?: readonly WiegandFormatSpec[];
      numbering: WiegandNumbering;
    } & SignalLines)
  | ({ type: 'keyboard'; path: string; cardFormat: CardFormat } & SignalLines)
  /** A PN532 NFC module on a serial port (HSU): ISO 14443 A UIDs as decimal card numbers (docs/hardware.md). */
  | ({ type: 'pn532'; path: string; baudRate: number; pollMs: number; releaseMs: number; uidByteOrder: UidByteOrder } & SignalLines)
  | {
      type: 'osdp';
      path: string;
      baudRate: number;
      address: number;
      scbkFile?: string;
      installMode: boolean;
      requireSecureChannel?: boolean;
      /** The formats its raw card data is decoded by, as a Wiegand reader's (default: auto). */
      format?: FormatChoice;
      formats?: readonly WiegandFormatSpec[];
      numbering: WiegandNumbering;
      check: 'crc' | 'checksum';
      text?: OsdpTextOptions;
    };

/** One reader type's options. */
export type ReaderType = ReaderOptions['type'];
export type ReaderOptionsOf<T extends ReaderType> = Extract<ReaderOptions, { type: T }>;

/** How a door's reader writes card numbers (Wiegand and RDM6300 numbers are decimal by construction). */
export function readerCardFormat(door: { reader?: ReaderOptions }): CardFormat {
  const reader = door.reader;
  if (reader?.type === 'keyboard') return reader.cardFormat;
  return reader?.type === 'serial' && reader.format === 'lines' ? reader.cardFormat : 'decimal';
}

/** A reader as status and logs name it: its device, or its two GPIO lines. */
export function describeReader(reader: ReaderOptions): string {
  if (reader.type === 'wiegand') return `Wiegand D0 GPIO ${reader.d0} / D1 GPIO ${reader.d1}${formatNote(reader)}`;
  if (reader.type === 'osdp')
    return `OSDP ${reader.path} address ${reader.address}${reader.scbkFile ? ' (secure channel)' : reader.installMode ? ' (install mode)' : ' (plain)'}${formatNote(reader)}`;
  if (reader.type === 'pn532') return `PN532 ${reader.path}`;
  return reader.type === 'keyboard' ? `keyboard ${reader.path}` : reader.path;
}

/**
 * A Wiegand or OSDP reader's formats (when not auto) and its numbering, the default (data) too: an installer sees
 * which numbering the site's directory must match (docs/hardware.md, "Numbering").
 */
function formatNote(reader: { format?: FormatChoice; numbering: string }): string {
  const parts = [reader.format === undefined || reader.format === 'auto' ? null : `format ${reader.format.join(', ')}`, `numbering ${reader.numbering}`];
  const shown = parts.filter((p) => p !== null);
  return shown.length > 0 ? ` (${shown.join('; ')})` : '';
}
