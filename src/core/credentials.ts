/** Credential kinds presented at a door. PINs and card numbers share one table (the service stores PINs as smartcards). */
export type CredentialKind = 'card' | 'pin' | 'token';
export type CardFormat = 'decimal' | 'hex';

const DECIMAL = /^[0-9]{1,40}$/;
// A card number as printed on the card: facility:card (docs/hardware.md, "Numbering").
const PRINTED = /^([0-9]{1,20}):([0-9]{1,20})$/;
const HEX = /^[0-9A-Fa-f]{1,32}$/;
const PIN = /^[0-9]{1,16}$/;
// QR guest tokens: printable ASCII without spaces, as the reader frames them.
const TOKEN = /^[\x21-\x7e]{16,128}$/;

/** Drops leading zeros from a string of decimal digits ("000" -> "0"). */
export function stripLeadingZeros(digits: string): string {
  // A scan, not /^0+/: it runs at every tap (a card's number, a PIN's lookup).
  let first = 0;
  while (first < digits.length && digits.charCodeAt(first) === 0x30) first++;
  return first === digits.length ? '0' : first === 0 ? digits : digits.slice(first);
}

/** A card number as the reader or operator gives it, normalized to its decimal integer string; null if malformed. */
export function normalizeCardNumber(raw: string, format: CardFormat): string | null {
  if (format === 'hex') {
    if (!HEX.test(raw)) return null;
    return BigInt(`0x${raw}`).toString(10);
  }
  return DECIMAL.test(raw) ? stripLeadingZeros(raw) : normalizePrinted(raw);
}

/** A printed card number `facility:card` without leading zeros (`0123:045678` -> `123:45678`); null if it is not one. */
export function normalizePrinted(raw: string): string | null {
  const m = PRINTED.exec(raw);
  return m ? `${stripLeadingZeros(m[1]!)}:${stripLeadingZeros(m[2]!)}` : null;
}

/** A PIN is a string of digits: leading zeros count (0123 is not 123). @internal */
export function normalizePin(raw: string): string | null {
  return PIN.test(raw) ? raw : null;
}

/** @internal */
export function isWellFormedToken(raw: string): boolean {
  return TOKEN.test(raw);
}

/**
 * A smartcard/PIN number as the service stores it ("a string holding an integer") in the form the cache keys it
 * by (its decimal integer); null if it is not one. The digits as given are kept beside it: a PIN-labelled entry
 * matches only a PIN typed with exactly those digits.
 */
export function normalizeStoredNumber(number: string): string | null {
  return DECIMAL.test(number) ? stripLeadingZeros(number) : normalizePrinted(number);
}

/** Normalizes a presented credential of any kind; null when it is malformed for that kind. */
export function normalizeCredential(raw: string, kind: CredentialKind, format: CardFormat = 'decimal'): string | null {
  switch (kind) {
    case 'card':
      return normalizeCardNumber(raw, format);
    case 'pin':
      return normalizePin(raw);
    case 'token':
      return isWellFormedToken(raw) ? raw : null;
  }
}

/**
 * What logs and events may show of a credential: the last 4 digits of a card number of 8 or more digits, 2 of
 * one of 6 or 7, nothing of a shorter number (it could be a PIN presented as a card), a PIN or a token.
 */
export function credentialHint(normalized: string, kind: CredentialKind): string {
  if (kind === 'pin') return 'PIN';
  if (kind === 'token') return 'token';
  // A printed number keeps its facility (shared by a site's cards) and masks the card part as any card number.
  const colon = normalized.indexOf(':');
  if (colon >= 0) return `${normalized.slice(0, colon + 1)}${credentialHint(normalized.slice(colon + 1), kind)}`;
  const shown = normalized.length >= 8 ? 4 : normalized.length >= 6 ? 2 : 0;
  return `…${normalized.slice(normalized.length - shown)}`;
}

/** The labels that mark a smartcard entry as a PIN by default (config `access.pinLabels`). */
export const DEFAULT_PIN_LABELS = ['PIN'] as const;

/** Normalizes configured PIN labels for isPinLabel: trimmed, lower case. */
export function pinLabelSet(labels: readonly string[]): ReadonlySet<string> {
  return new Set(labels.map((l) => l.trim().toLowerCase()));
}

/**
 * Whether a smartcard entry is a PIN. The service stores PINs as smartcard entries, so the entry's label
 * says which it is. A PIN matches only keypad entry and a card only a card read: a PIN sent as a card line
 * (or a badge number typed on the keypad) is an unknown credential, and cannot dodge the keypad lockout.
 */
export function isPinLabel(label: string | null, pinLabels: ReadonlySet<string>): boolean {
  return label !== null && pinLabels.has(label.trim().toLowerCase());
}

/** How a duress PIN is derived from a user's PIN (config `access.duressPin`). */
export type DuressRule = 'off' | 'lastDigitPlusOne' | 'lastDigitMinusOne';

/**
 * The PIN a user would have, had they typed `typed` as their duress PIN: the rule undone on the last digit (9 + 1
 * wraps to 0). Works on the digits as typed, before leading zeros are dropped. Null when the rule is off or the
 * input is not digits.
 */
export function duressOriginal(typed: string, rule: DuressRule): string | null {
  if (rule === 'off' || !/^\d+$/.test(typed)) return null;
  const last = Number(typed[typed.length - 1]);
  const original = rule === 'lastDigitPlusOne' ? (last + 9) % 10 : (last + 1) % 10;
  return `${typed.slice(0, -1)}${original}`;
}
