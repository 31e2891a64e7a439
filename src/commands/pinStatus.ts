import { count } from '../util/plural.js';
import type { AgentOptions } from '../config/options.js';
import { readKeypadGuesses } from '../store/keypadGuessState.js';
import type { Db } from '../store/database.js';

export interface PinStatus {
  minPinLength: number;
  /** PINs in the cache shorter than minPinLength: never accepted. */
  shortPins: number;
  /** The agent's wrong-PIN counter as last saved by the daemon (null: none saved). */
  keypad: { failures: number; lockedOut: boolean; streak: number } | null;
}

/**
 * `door-agent status`'s PIN facts (issue 32): short PINs in the directory (counted in its scan, `shortPins`), the
 * agent's keypad lockout.
 */
export function pinStatus(config: AgentOptions, shortPins: number, state: Db | null): PinStatus {
  const saved = state ? (readKeypadGuesses(state) as { failures?: number; lockoutMs?: number; streak?: number } | undefined) : undefined;
  return {
    minPinLength: config.access.minPinLength,
    shortPins,
    keypad: saved ? { failures: saved.failures ?? 0, lockedOut: (saved.lockoutMs ?? 0) > 0, streak: saved.streak ?? 0 } : null,
  };
}

/** The keypad lockout's line (the short PINs' warning is among the directory's, directoryStatus.ts). */
export function pinLines(status: PinStatus): string[] {
  const keypad = status.keypad;
  return [
    ...(keypad && (keypad.lockedOut || keypad.failures > 0 || keypad.streak > 0)
      ? [
          `keypads: ${keypad.lockedOut ? 'LOCKED OUT (every door) at the last save' : `${count(keypad.failures, 'wrong PIN')} counted`}` +
            (keypad.streak > 0 ? `; ${count(keypad.streak, 'lockout')} in a row` : ''),
        ]
      : []),
  ];
}
