/** How a UID's bytes make a number: the order the PN532 reports them (first byte most significant), or reversed. */
export type UidByteOrder = 'msb_first' | 'lsb_first';

/** ISO/IEC 14443 A UIDs: single (4 bytes), double (7) or triple (10) size. */
const UID_LENGTHS = new Set([4, 7, 10]);

/**
 * A card's UID as its card number: the bytes as one unsigned integer, in decimal (as a serial reader's
 * `numbering: whole`), so it matches a card enrolled from another reader that prints the UID as a decimal number.
 * A UID of any other length is refused with the reason.
 */
export function uidToCardNumber(uid: Uint8Array, order: UidByteOrder): { number: string } | { refused: string } {
  if (!UID_LENGTHS.has(uid.length)) return { refused: `a UID of ${uid.length} bytes (ISO 14443 A UIDs have 4, 7 or 10)` };
  const bytes = order === 'lsb_first' ? [...uid].reverse() : [...uid];
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return { number: value.toString(10) };
}
