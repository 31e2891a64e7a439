import type { CardFormat } from '../core/credentials.js';
import type { KeypadLockoutPolicy } from '../core/keypad.js';
import type { FailMode, Level } from '../core/relay.js';

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
  contact?: { pin: number; openLevel: Level; debounceMs: number };
  exitButton?: { pin: number; activeLevel: Level; debounceMs: number };
  relockOnClose: boolean;
  heldOpenSeconds: number;
  reader?: { path: string; baudRate: number; cardFormat: CardFormat };
  mode: 'card_or_pin' | 'card_and_pin';
  keypadLockout: KeypadLockoutPolicy;
  cardLockout: KeypadLockoutPolicy;
}

/** Who may open this agent's doors, and which smartcard labels mark a PIN. */
export interface AccessOptions {
  groups: readonly string[];
  policies: readonly string[];
  pinLabels: readonly string[];
}
