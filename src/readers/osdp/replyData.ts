import { decodeBits, type FormatSet, type WiegandCardFrame } from '../../core/wiegand.js';
import { presentedCard, type WiegandNumbering } from '../../core/wiegandFormats.js';

/** The data of an OSDP reader's replies, decoded: pure, no bus state. */

/** osdp_RAW: reader number, format (0: raw bits, 1: Wiegand), bit count (LE), the bits MSB first; null: cut short. */
export function rawCardBits(data: Buffer): number[] | null {
  if (data.length < 4) return null;
  const bitCount = data.readUInt16LE(2);
  if (data.length < 4 + Math.ceil(bitCount / 8)) return null;
  return Array.from({ length: bitCount }, (_, i) => (data[4 + (i >> 3)]! >> (7 - (i & 7))) & 1);
}

/** osdp_RAW's card bits (rawCardBits), decoded by `formats` and numbered as configured. */
export function decodeCardBits(
  bits: readonly number[],
  numbering: WiegandNumbering,
  formats?: FormatSet,
): { card: string; printed?: string; frame: WiegandCardFrame } | { dropped: string } {
  const frame = decodeBits(bits, formats);
  if (frame.kind !== 'card') return { dropped: frame.kind === 'dropped' ? frame.reason : 'not_a_card' };
  const { value, printed } = presentedCard(frame, numbering);
  return { card: value, ...(printed !== undefined ? { printed } : {}), frame };
}

/** osdp_KEYPAD: reader number, digit count, the keys as ASCII ('*' as 0x2A or 0x7F, '#' as 0x23 or 0x0D); null for a byte that is no key. */
export function decodeKeys(data: Buffer): Array<string | null> {
  const count = data[1] ?? 0;
  return [...data.subarray(2, 2 + count)].map((byte) => {
    const key = byte === 0x7f ? '*' : byte === 0x0d ? '#' : String.fromCharCode(byte);
    return /^[0-9*#]$/.test(key) ? key : null;
  });
}

/** osdp_PDID: vendor code, model, version, serial number (LE), firmware. */
export function parsePdid(data: Buffer): { vendor: string; model: number; version: number; serial: number; firmware: string } {
  if (data.length < 12) return { vendor: '', model: 0, version: 0, serial: 0, firmware: '' };
  return {
    vendor: data.subarray(0, 3).toString('hex'),
    model: data[3]!,
    version: data[4]!,
    serial: data.readUInt32LE(5),
    firmware: `${data[9]}.${data[10]}.${data[11]}`,
  };
}

/** osdp_PDCAP function 10: the longest message the reader receives (compliance level LSB, number of items MSB). */
const CAP_RECEIVE_BUFFER = 10;

/** osdp_PDCAP's data (3 bytes per function: code, compliance, number of items): its receive buffer, null when not given. */
export function receiveBufferSize(pdcap: Buffer): number | null {
  for (let at = 0; at + 3 <= pdcap.length; at += 3) {
    if (pdcap[at] === CAP_RECEIVE_BUFFER) return pdcap[at + 1]! | (pdcap[at + 2]! << 8) || null;
  }
  return null;
}
