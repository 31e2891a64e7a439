import { FormatSet, type WiegandFrame } from '../core/wiegand.js';
import { cardNumber, decodeWith, formatsFor, type DecodedCard, type FormatChoice, type WiegandFormatSpec } from '../core/wiegandFormats.js';
import type { Credential } from './reader.js';

/**
 * What an installer enrolling a card is shown of it (`door-agent reader learn`, `learn-card`): its format's fields,
 * each numbering, the frame's bits. Full numbers on purpose: printed at the device to whoever runs the command,
 * never logged.
 */
function describeCard(card: DecodedCard, raw: bigint): string {
  const hexDigits = Math.ceil(card.bits / 4);
  return [
    `format:        ${card.format} (${card.bits} bits)`,
    `facility:      ${card.facility ?? '-'}`,
    `card:          ${card.card}`,
    `issue:         ${card.issue ?? '-'}`,
    `data:          ${cardNumber(card, 'data')}`,
    `facility_card: ${cardNumber(card, 'facility_card')}`,
    `printed:       ${cardNumber(card, 'printed')}`,
    `raw bits:      0x${raw.toString(16).padStart(hexDigits, '0')}`,
  ]
    .map((line) => `${line}\n`)
    .join('');
}

/**
 * What a frame of card bits shows an installer: a card in every numbering, an ambiguous one in each format it fits;
 * null for anything else (a key, a frame dropped for a fault of the line).
 */
export function describeFrame(frame: WiegandFrame, formats: FormatSet): string | null {
  if (frame.kind === 'card') return describeCard(frame, frame.raw);
  if (frame.kind === 'dropped' && frame.reason === 'ambiguous_format' && frame.raw !== undefined) {
    const raw = frame.raw;
    const bits = Array.from({ length: frame.bits }, (_, i) => Number((raw >> BigInt(frame.bits - 1 - i)) & 1n));
    const shown = formats
      .ofLength(frame.bits)
      .map((f) => decodeWith(f, bits))
      .filter((d): d is DecodedCard => d !== null)
      .map((d) => describeCard(d, raw))
      .join('\n');
    return `${frame.bits} bits fit more than one of the reader's formats (${frame.candidates?.join(', ')}); as each:\n\n${shown}`;
  }
  return null;
}

/** The formats a Wiegand or OSDP reader's card bits are decoded by (its `format`, auto by default). */
export function readerFormats(reader: { format?: FormatChoice; formats?: readonly WiegandFormatSpec[] }): FormatSet {
  return new FormatSet(reader.formats ?? formatsFor(reader.format ?? 'auto', []));
}

/**
 * A credential a running daemon's reader handed on, as a learn session shows it: a Wiegand or OSDP card in every
 * numbering (its decoded bits), any other card as the reader numbers it; a PIN or a token is named, never shown.
 */
export function describeCredential(credential: Credential): string {
  if (credential.kind === 'pin') return 'a PIN was entered at the keypad (not shown)\n';
  if (credential.kind === 'token') return 'a token (QR code) was scanned (not shown)\n';
  if (credential.decoded) return describeCard(credential.decoded, credential.decoded.raw);
  return `card:          ${credential.value}\n`;
}
