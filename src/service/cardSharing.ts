import { isPinLabel, normalizeStoredNumber } from '../core/credentials.js';

/**
 * Which credential a smartcard entry is at a door, for the duplicate check of every call that assigns cards. A door
 * drops a card number's leading zeros ("04213578" is "4213578", "0012:0345" is "12:345": core/credentials.ts), so
 * two spellings of one card are one card; a PIN keeps its digits as typed ("0123" is not "123"). PINs and cards
 * never match each other at a door, so they are keyed apart.
 */

export type CardEntry = { number: string; label?: string | null };

/** The credential `card` is at a door: `pin <digits>` or `card <number without leading zeros>`. */
export function credentialKey(card: CardEntry, pinLabels: ReadonlySet<string>): string {
  if (isPinLabel(card.label ?? null, pinLabels)) return `pin ${card.number}`;
  // A number no door reads (a part of over 20 digits) is kept as written: it matches nothing but itself.
  return `card ${normalizeStoredNumber(card.number) ?? card.number}`;
}

// The longest spelling a door takes: 40 digits, or facility:card of up to 20 digits each (api/shapes.ts).
const MAX_DIGITS = 40;
const MAX_PART_DIGITS = 20;

/** `digits` with 0 to as many leading zeros as keep it within `max` characters. */
function padded(digits: string, max: number): string[] {
  const out: string[] = [];
  for (let s = digits; s.length <= max; s = `0${s}`) out.push(s);
  return out;
}

/**
 * Every number that is the credential `key` (credentialKey), as it may be stored: a card's number with any leading
 * zeros a door still takes, a PIN's digits as they are. Looked up by the smartcards table's index on number.
 */
export function spellings(key: string): string[] {
  const number = key.slice(key.indexOf(' ') + 1);
  if (key.startsWith('pin ')) return [number];
  const colon = number.indexOf(':');
  if (colon < 0) return /^[0-9]+$/.test(number) ? padded(number, MAX_DIGITS) : [number];
  const facility = number.slice(0, colon);
  const card = number.slice(colon + 1);
  if (facility.length > MAX_PART_DIGITS || card.length > MAX_PART_DIGITS) return [number];
  return padded(facility, MAX_PART_DIGITS).flatMap((f) => padded(card, MAX_PART_DIGITS).map((c) => `${f}:${c}`));
}

/** What a new list of cards would share, each by the numbers as the request gave them. */
export interface Sharing {
  /** Numbers listed more than once in the request (in any spelling), unless the holder already holds them so. */
  listedTwice: string[];
  /** Numbers another active user holds (in any spelling). */
  heldByOthers: string[];
}

/** Numbers by their last 4 digits, as every refusal names a card (two spellings of one card are named once). */
const lastDigits = (numbers: readonly string[]) => [...new Set(numbers.map((n) => `…${n.slice(-4)}`))].join(', ');

/**
 * The refusal of a request that would share a card, or null: the numbers listed twice and those already in use,
 * each said apart. `allowable`: the call takes allow_duplicates, and the message says so.
 */
export function sharingRefusal(sharing: Sharing, allowable: boolean): string | null {
  const problems: string[] = [];
  if (sharing.listedTwice.length > 0) problems.push(`smartcard number(s) listed twice in this request: ${lastDigits(sharing.listedTwice)}`);
  if (sharing.heldByOthers.length > 0) problems.push(`smartcard number(s) already in use: ${lastDigits(sharing.heldByOthers)}`);
  if (problems.length === 0) return null;
  return `${problems.join('; ')}${allowable ? ' (set allow_duplicates to allow)' : ''}`;
}
