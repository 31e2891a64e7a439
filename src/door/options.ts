import type { DuressRule } from '../core/credentials.js';
import type { AccessLevel } from '../core/accessLevels.js';
import type { KeypadLockoutPolicy } from '../core/keypad.js';
import type { CardLockoutPolicy } from '../core/cardLockout.js';
import type { FailMode, Level } from '../core/relay.js';
import type { TimeMapping } from '../core/schedule.js';
import type { Pull } from '../hardware/gpio.js';

// The reader options live with the readers (src/readers/options.ts); the door and the loader take them from here.
export type { FeedbackKind, ReaderOptions, SignalLineOptions, SignalLines } from '../readers/options.js';
export { describeReader, readerCardFormat } from '../readers/options.js';
import type { ReaderOptions } from '../readers/options.js';
import type { AreaOptions as CoreAreaOptions } from '../core/doorGroupChecks.js';
export type { InterlockOptions } from '../core/doorGroupChecks.js';

/** An area (docs/areas.md): its policy, its doors (lower-case uuids) and daily reset, and a name for people. */
export interface AreaOptions extends CoreAreaOptions {
  name: string;
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
  /** With a contact: Home Assistant's lock shows JAMMED once the door still stands open this long after the relay was driven locked. */
  jammedAfterSeconds: number;
  /** The entry reader (`reader`, or `readers.entry`). */
  reader?: ReaderOptions;
  /** The exit reader (`readers.exit`): its taps are exits (docs/areas.md). */
  exitReader?: ReaderOptions;
  /** Opens only for two different authorized holders within windowSeconds (docs/areas.md). */
  twoPerson?: { windowSeconds: number };
  tamper?: { pin: number; activeLevel: Level; debounceMs: number; pull: Pull };
  /** Hours held unlocked (time_mapping shape, agent.timezone). */
  unlockSchedule?: TimeMapping;
  /** The schedule's hours start each day only after a grant to one of these. */
  firstPersonIn?: MemberPolicy;
  mode: 'card_or_pin' | 'card_and_pin';
  /** As written in the file (it moved to access.keypadLockout; the loader merged it there). */
  keypadLockout?: Partial<KeypadLockoutPolicy>;
  cardLockout: CardLockoutPolicy;
  /** Released while the agent's emergency input is active (listed in emergency.doors); absent without one. */
  emergencyRelease?: boolean;
}

/**
 * The agent's emergency input (issue 30 item 1): the fire panel's relay, its normally-closed contact in a loop to
 * `pin`, so that an alarm and a cut wire both read as open and release the doors (fail-safe).
 */
export interface EmergencyOptions {
  pin: number;
  /** The same relay's normally-open contact: tells a cut wire or a short from an alarm (null: none wired). */
  confirmPin: number | null;
  /** The level of `pin` while its loop is open (alarm); closed, it reads the other one. */
  activeLevel: Level;
  pull: Pull;
  debounceMs: number;
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
  /** The offline limit: past this many hours without a successful sync only responders are admitted; absent: none. */
  maxCacheAgeHours?: number;
}

/**
 * The agent's power inputs (the `power` section): mains present or lost (a UPS's power-good line), battery low. Each
 * pin is optional; each level is the pin's level in that condition.
 */
export interface PowerOptions {
  mainsPin?: number;
  /** The level of mainsPin while mains power is present. */
  mainsPresentLevel: Level;
  batteryLowPin?: number;
  /** The level of batteryLowPin while the battery is low. */
  batteryLowLevel: Level;
  debounceMs: number;
  pull: Pull;
}
