import type { CardFormat, DuressRule } from '../core/credentials.js';
import type { AccessLevel } from '../core/accessLevels.js';
import type { KeypadLockoutPolicy } from '../core/keypad.js';
import type { CardLockoutPolicy } from '../core/cardLockout.js';
import type { FailMode, Level } from '../core/relay.js';
import type { TimeMapping } from '../core/schedule.js';
import type { WiegandFormat, WiegandNumbering } from '../core/wiegand.js';
import type { Pull } from '../hardware/gpio.js';

/** What a reader is told of a decision (its LED and buzzer, a line sent back, OSDP's LED and beeper). */
export type { ReaderFeedback as FeedbackKind } from '../hardware/readerFrames.js';
import type { ReaderFeedback as FeedbackKind } from '../hardware/readerFrames.js';

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
  | ({ type: 'wiegand'; d0: number; d1: number; pull: Pull; format: WiegandFormat; numbering: WiegandNumbering } & SignalLines)
  | ({ type: 'keyboard'; path: string; cardFormat: CardFormat } & SignalLines)
  | { type: 'osdp'; path: string; baudRate: number; address: number; scbkFile?: string; installMode: boolean; requireSecureChannel?: boolean; numbering: WiegandNumbering; check: 'crc' | 'checksum' };

/** How a door's reader writes card numbers (Wiegand and RDM6300 numbers are decimal by construction). */
export function readerCardFormat(door: { reader?: ReaderOptions }): CardFormat {
  const reader = door.reader;
  if (reader?.type === 'keyboard') return reader.cardFormat;
  return reader?.type === 'serial' && reader.format === 'lines' ? reader.cardFormat : 'decimal';
}

/** A reader as status and logs name it: its device, or its two GPIO lines. */
export function describeReader(reader: ReaderOptions): string {
  if (reader.type === 'wiegand') return `Wiegand D0 GPIO ${reader.d0} / D1 GPIO ${reader.d1}`;
  if (reader.type === 'osdp') return `OSDP ${reader.path} address ${reader.address}${reader.scbkFile ? ' (secure channel)' : reader.installMode ? ' (install mode)' : ' (plain)'}`;
  return reader.type === 'keyboard' ? `keyboard ${reader.path}` : reader.path;
}

/** One door as the door components take it: normalized (lower-case uuid, a name), every default applied. */
export interface DoorOptions {
  /** Lower case. */
  uuid: string;
  resourceId: number;
  name: string;
  relay: { pin: number; activeLow: boolean };
  failMode: FailMode;
  unlockSeconds: number;
  /** 0 = no cap. */
  maxUnlockSeconds: number;
  contact?: { pin: number; openLevel: Level; debounceMs: number; pull: Pull };
  exitButton?: { pin: number; activeLevel: Level; debounceMs: number; pull: Pull };
  relockOnClose: boolean;
  heldOpenSeconds: number;
  reader?: ReaderOptions;
  tamper?: { pin: number; activeLevel: Level; debounceMs: number; pull: Pull };
  /** Hours held unlocked (time_mapping shape, agent.timezone). */
  unlockSchedule?: TimeMapping;
  /** The schedule's hours start each day only after a grant to one of these. */
  firstPersonIn?: MemberPolicy;
  mode: 'card_or_pin' | 'card_and_pin';
  /** As written in the file (it moved to access.keypadLockout; the loader merged it there). */
  keypadLockout?: Partial<KeypadLockoutPolicy>;
  cardLockout: CardLockoutPolicy;
}

/** Members of any of these groups or policies. */
export interface MemberPolicy {
  groups: readonly string[];
  policies: readonly string[];
}


/** Who may open this agent's doors, and which smartcard labels mark a PIN. */
export interface AccessOptions {
  groups: readonly string[];
  policies: readonly string[];
  pinLabels: readonly string[];
  /** The configured access levels (access.levels), doors resolved to uuids; access.groups/policies are not among them. */
  levels: readonly AccessLevel[];
  /** Still admitted during a lockdown; everyDoor: at every door, whatever their levels say. */
  responders?: MemberPolicy & { everyDoor?: boolean };
  /** Local dates YYYY-MM-DD: no unlock schedules, no guest links (unless made for the day). */
  holidays: readonly string[];
  duressPin: DuressRule;
  /** Card numbers shorter than this are refused (card_too_short) and flagged in the directory. */
  minCardDigits: number;
  /** Typed PINs shorter are refused (pin_too_short); shorter PINs in the directory never open. */
  minPinLength: number;
  /** One wrong-PIN counter and lockout for all the agent's doors. */
  keypadLockout: KeypadLockoutPolicy;
}
