import { count } from '../util/plural.js';
import type { AgentOptions } from '../config/options.js';
import { countShortPins, shortPinsSentence } from '../store/pinCensus.js';
import { readKeypadGuesses } from '../store/keypadGuessState.js';
import type { Db } from '../store/database.js';

export interface PinStatus {
  minPinLength: number;
  /** PINs in the cache shorter than minPinLength: never accepted. */
  shortPins: number;
  /** The agent's wrong-PIN counter as last saved by the daemon (null: none saved). */
  keypad: { failures: number; lockedOut: boolean; streak: number } | null;
}

/** `door-agent status`'s PIN facts (issue 32): short PINs in the directory, the agent's keypad lockout. */
export function pinStatus(config: AgentOptions, cache: Db, state: Db | null): PinStatus {
  const saved = state ? (readKeypadGuesses(state) as { failures?: number; lockoutMs?: number; streak?: number } | undefined) : undefined;
  return {
    minPinLength: config.access.minPinLength,
    shortPins: countShortPins(cache, config.access.pinLabels, config.access.minPinLength),
    keypad: saved ? { failures: saved.failures ?? 0, lockedOut: (saved.lockoutMs ?? 0) > 0, streak: saved.streak ?? 0 } : null,
  };
}

export function pinLines(status: PinStatus): string[] {
  const short = shortPinsSentence(status.shortPins, status.minPinLength);
  const keypad = status.keypad;
  return [
    ...(short ? [`WARNING: ${short}`] : []),
    ...(keypad && (keypad.lockedOut || keypad.failures > 0 || keypad.streak > 0)
      ? [
          `keypads: ${keypad.lockedOut ? 'LOCKED OUT (every door) at the last save' : `${count(keypad.failures, 'wrong PIN')} counted`}` +
            (keypad.streak > 0 ? `; ${count(keypad.streak, 'lockout')} in a row` : ''),
        ]
      : []),
  ];
}

/** The line `import` and `sync` print when the directory holds PINs that can never open (issue 32). */
export function shortPinLine(db: Db, config: AgentOptions): string[] {
  const sentence = shortPinsSentence(countShortPins(db, config.access.pinLabels, config.access.minPinLength), config.access.minPinLength);
  return sentence ? [`  WARNING: ${sentence}`] : [];
}
