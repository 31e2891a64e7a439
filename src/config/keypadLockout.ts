import * as z from 'zod';
import { wholeNumber } from '../api/wholeNumber.js';
import type { KeypadLockoutPolicy } from '../core/keypad.js';
import { MAX_CARD_LOCKOUT_SECONDS } from '../core/cardLockout.js';

const secs = (min: number, max: number) => wholeNumber().min(min).max(max);

/** The keypad lockout's keys, each optional: the loader takes the strictest of those given (see keypadPolicy). */
export const keypadLockoutSchema = z.strictObject({
  failures: wholeNumber().min(1).max(100).optional(),
  windowSeconds: secs(1, 86_400).optional(),
  lockoutSeconds: secs(1, 86_400).optional(),
  maxLockoutSeconds: secs(1, 86_400).optional(),
});
export type KeypadLockoutKeys = z.output<typeof keypadLockoutSchema>;

const KEYPAD_LOCKOUT_DEFAULTS: KeypadLockoutPolicy = { failures: 5, windowSeconds: 900, lockoutSeconds: 60, maxLockoutSeconds: 900 };

/**
 * The agent's keypad policy (`access.keypadLockout`). A `doors[].keypadLockout` from before the lockout became
 * agent-wide is still accepted, so an installed configuration keeps working after an upgrade: the strictest value
 * given anywhere wins (fewest failures, longest window and lockouts); keys given nowhere take their defaults.
 */
export function keypadPolicy(agent: KeypadLockoutKeys | undefined, doors: ReadonlyArray<KeypadLockoutKeys | undefined>): KeypadLockoutPolicy {
  const given = [agent, ...doors].filter((k): k is KeypadLockoutKeys => k !== undefined);
  const pick = (key: keyof KeypadLockoutPolicy, strictest: (...v: number[]) => number): number => {
    const values = given.map((k) => k[key]).filter((v): v is number => v !== undefined);
    return values.length > 0 ? strictest(...values) : KEYPAD_LOCKOUT_DEFAULTS[key];
  };
  const lockoutSeconds = pick('lockoutSeconds', Math.max);
  return {
    failures: pick('failures', Math.min),
    windowSeconds: pick('windowSeconds', Math.max),
    lockoutSeconds,
    maxLockoutSeconds: Math.max(pick('maxLockoutSeconds', Math.max), lockoutSeconds),
  };
}

/**
 * The lockout keys that `config check` and the daemon warn about: a door's own keypadLockout (moved), and a card
 * lockout longer than 30 s (taken as 30).
 */
export function lockoutWarnings(
  doors: ReadonlyArray<{ keypadLockout?: KeypadLockoutKeys; cardLockout: { lockoutSeconds: number } }>,
  policy: KeypadLockoutPolicy,
): string[] {
  const card = doors.flatMap((d, i) =>
    d.cardLockout.lockoutSeconds > MAX_CARD_LOCKOUT_SECONDS
      ? [
          `doors[${i}].cardLockout.lockoutSeconds ${d.cardLockout.lockoutSeconds} is taken as ${MAX_CARD_LOCKOUT_SECONDS}: a card lockout never keeps a valid card out longer`,
        ]
      : [],
  );
  const moved = doors.flatMap((d, i) => (d.keypadLockout ? [`doors[${i}].keypadLockout`] : []));
  if (moved.length === 0) return card;
  return [
    ...card,
    `${moved.join(', ')} moved to access.keypadLockout (one wrong-PIN counter for all doors); the strictest values are used: ` +
      `${policy.failures} failures in ${policy.windowSeconds} s, lockout ${policy.lockoutSeconds} s doubling up to ${policy.maxLockoutSeconds} s`,
  ];
}
