import { count } from '../util/plural.js';
import type { AgentOptions } from '../config/options.js';
import { readKeypadGuesses } from '../store/keypadGuessState.js';
import type { Db } from '../store/database.js';

export interface PinStatus {
  minPinLength: number;
  /** PINs in the cache shorter than minPinLength: never accepted. */
  shortPins: number;
  /** The agent's wrong-PIN counter as last saved by the daemon (null: none saved). */
  keypad: KeypadStatus | null;
}

export interface KeypadStatus {
  failures: number;
  /** Locked out now, by the saved end and the wall clock (or at the last save, when it saved no end). */
  lockedOut: boolean;
  /** When the lockout saved ends or ended (ISO 8601); null: none saved, or saved before the end was kept. */
  lockoutEndsAt: string | null;
  streak: number;
}

/** The saved state as `status` reads it: any field may be missing or not what it should be (core/keypad.ts saves it). */
interface SavedKeypadFields {
  failures?: unknown;
  lockoutMs?: unknown;
  streak?: unknown;
  lockoutEndsAt?: unknown;
}

const countOf = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);

/**
 * `door-agent status`'s PIN facts (issue 32): short PINs in the directory (counted in its scan, `shortPins`), the
 * agent's keypad lockout, compared with the wall clock (`now`): the daemon saves its state only when a wrong PIN
 * changes it, so a lockout saved in progress may have ended long since.
 */
export function pinStatus(config: AgentOptions, shortPins: number, state: Db | null, now: number): PinStatus {
  const saved = state ? (readKeypadGuesses(state) as SavedKeypadFields | undefined) : undefined;
  return { minPinLength: config.access.minPinLength, shortPins, keypad: saved ? keypadStatus(saved, now) : null };
}

function keypadStatus(saved: SavedKeypadFields, now: number): KeypadStatus {
  const endsAt = typeof saved.lockoutEndsAt === 'string' && Number.isFinite(Date.parse(saved.lockoutEndsAt)) ? saved.lockoutEndsAt : null;
  const inProgress = countOf(saved.lockoutMs) > 0;
  return {
    failures: countOf(saved.failures),
    lockedOut: inProgress && (endsAt === null || Date.parse(endsAt) > now),
    lockoutEndsAt: inProgress ? endsAt : null,
    streak: countOf(saved.streak),
  };
}

/** The keypad lockout's line (the short PINs' warning is among the directory's, directoryStatus.ts). */
export function pinLines(status: PinStatus): string[] {
  const keypad = status.keypad;
  if (!keypad || !(keypad.lockedOut || keypad.lockoutEndsAt !== null || keypad.failures > 0 || keypad.streak > 0)) return [];
  const state = keypad.lockedOut
    ? `LOCKED OUT (every door) ${keypad.lockoutEndsAt === null ? 'at the last save' : `until ${keypad.lockoutEndsAt}`}`
    : keypad.lockoutEndsAt !== null
      ? `not locked out (the last lockout ended ${keypad.lockoutEndsAt})`
      : `${count(keypad.failures, 'wrong PIN')} counted`;
  return [`keypads: ${state}${keypad.streak > 0 ? `; ${count(keypad.streak, 'lockout')} in a row` : ''}`];
}
