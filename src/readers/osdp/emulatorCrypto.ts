import { createCipheriv, createDecipheriv } from 'node:crypto';

/**
 * The emulated OSDP reader's own CRC and secure channel (SIA OSDP v2.2, annex D), written from the standard with
 * node:crypto's AES and not shared with the control panel's, so that the two check each other.
 */

export const DEFAULT_KEY = Buffer.from('0123456789:;<=>?', 'latin1'); // SCBK-D: the bytes 0x30 to 0x3F

export function ecb(key: Buffer, block: Buffer): Buffer {
  const c = createCipheriv('aes-128-ecb', key, null).setAutoPadding(false);
  return Buffer.concat([c.update(block), c.final()]);
}

export function cbc(key: Buffer, iv: Buffer, data: Buffer, decrypt = false): Buffer {
  const c = (decrypt ? createDecipheriv : createCipheriv)('aes-128-cbc', key, iv).setAutoPadding(false);
  return Buffer.concat([c.update(data), c.final()]);
}

/** 0x80 then zeros up to a 16-byte boundary (only when needed, for a MAC; always, for data). */
export function padded(data: Buffer, always: boolean): Buffer {
  if (!always && data.length % 16 === 0 && data.length > 0) return data;
  const out = Buffer.alloc((Math.floor(data.length / 16) + 1) * 16);
  data.copy(out);
  out[data.length] = 0x80;
  return out;
}

/** Encrypted data without its padding: the last 0x80 and the zeros after it. */
export function unpadded(data: Buffer): Buffer {
  let end = data.length;
  while (end > 0 && data[end - 1] === 0) end--;
  return data[end - 1] === 0x80 ? data.subarray(0, end - 1) : data;
}

export interface Session {
  enc: Buffer;
  mac1: Buffer;
  mac2: Buffer;
  rndA: Buffer;
  rndB: Buffer;
  established: boolean;
  cmac: Buffer;
  rmac: Buffer;
}

export function mac(session: Session, iv: Buffer, message: Buffer): Buffer {
  const all = padded(message, false);
  let chain = iv;
  for (let at = 0; at < all.length - 16; at += 16) chain = cbc(session.mac1, chain, all.subarray(at, at + 16));
  return cbc(session.mac2, chain, all.subarray(all.length - 16));
}

export const not = (b: Buffer) => Buffer.from(b.map((x) => 255 - x));

export function crc(bytes: number[]): number {
  let value = 0x1d0f; // CRC-16/AUG-CCITT
  for (const byte of bytes) {
    value ^= byte << 8;
    for (let i = 0; i < 8; i++) value = value & 0x8000 ? ((value << 1) ^ 0x1021) & 0xffff : (value << 1) & 0xffff;
  }
  return value;
}
