import { isPinLabel, pinLabelSet } from '../core/credentials.js';
import type { Db } from './database.js';

/**
 * PINs in the cache shorter than `minLength` digits (leading zeros count): they never open (a typed PIN that
 * short is refused before any lookup), and the operator should hear about them.
 */
export function countShortPins(db: Db, pinLabels: readonly string[], minLength: number): number {
  const labels = pinLabelSet(pinLabels);
  const hasDigits = (db.prepare("SELECT count(*) FROM pragma_table_info('credentials') WHERE name = 'digits'").pluck().get() as number) > 0;
  const length = hasDigits ? 'length(coalesce(digits, number))' : 'length(number)';
  const rows = db.prepare(`SELECT label, count(*) FROM credentials WHERE label IS NOT NULL AND ${length} < ? GROUP BY label`).raw().all(minLength) as Array<
    [string, number]
  >;
  return rows.reduce((sum, [label, n]) => (isPinLabel(label, labels) ? sum + n : sum), 0);
}

/** The sentence status, sync and import use; null when there are none. */
export function shortPinsSentence(count: number, minLength: number): string | null {
  if (count === 0) return null;
  return `${count} PIN${count === 1 ? '' : 's'} shorter than ${minLength} digits ${count === 1 ? 'is' : 'are'} never accepted (access.minPinLength)`;
}
