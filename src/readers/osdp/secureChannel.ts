import { createCipheriv, createDecipheriv, timingSafeEqual } from 'node:crypto';

/**
 * The OSDP secure channel's cryptography (SIA OSDP v2.2, annex D), with node:crypto's AES-128:
 * - session keys from the SCBK and the CP's random number: S-ENC, S-MAC1, S-MAC2 = AES-ECB(SCBK, 01 82|01|02,
 *   RND.A[0..5], eight zero bytes);
 * - the PD proves it holds the SCBK with the client cryptogram AES-ECB(S-ENC, RND.A || RND.B), the CP with the
 *   server cryptogram AES-ECB(S-ENC, RND.B || RND.A); the initial R-MAC is AES(S-MAC2, AES(S-MAC1, server
 *   cryptogram));
 * - every secure packet carries a MAC: AES-CBC over the packet (padded 80 00.. to 16 bytes) with S-MAC1, the last
 *   block with S-MAC2, chained from the other side's last MAC; 4 bytes of it travel, all 16 chain on;
 * - data is AES-CBC with S-ENC, IV = the complement of the other side's last MAC, padded 80 00...
 * Pure: no IO, no clock; random numbers come in.
 */

/** SCBK-D, the default key of the standard: only for install mode, never for a door in service. */
export const SCBK_D = Buffer.from('303132333435363738393a3b3c3d3e3f', 'hex');

export interface SessionKeys {
  enc: Buffer;
  mac1: Buffer;
  mac2: Buffer;
}

function aesEcb(key: Buffer, block: Buffer): Buffer {
  const cipher = createCipheriv('aes-128-ecb', key, null).setAutoPadding(false);
  return Buffer.concat([cipher.update(block), cipher.final()]);
}

function aesCbc(key: Buffer, iv: Buffer, data: Buffer): Buffer {
  const cipher = createCipheriv('aes-128-cbc', key, iv).setAutoPadding(false);
  return Buffer.concat([cipher.update(data), cipher.final()]);
}

export function deriveSessionKeys(scbk: Buffer, rndA: Buffer): SessionKeys {
  if (scbk.length !== 16) throw new RangeError('an SCBK is 16 bytes');
  const block = (second: number) => Buffer.concat([Buffer.from([0x01, second]), rndA.subarray(0, 6), Buffer.alloc(8)]);
  return { enc: aesEcb(scbk, block(0x82)), mac1: aesEcb(scbk, block(0x01)), mac2: aesEcb(scbk, block(0x02)) };
}

export const clientCryptogram = (keys: SessionKeys, rndA: Buffer, rndB: Buffer): Buffer => aesEcb(keys.enc, Buffer.concat([rndA, rndB]));
export const serverCryptogram = (keys: SessionKeys, rndA: Buffer, rndB: Buffer): Buffer => aesEcb(keys.enc, Buffer.concat([rndB, rndA]));
export const initialRmac = (keys: SessionKeys, serverCrypt: Buffer): Buffer => aesEcb(keys.mac2, aesEcb(keys.mac1, serverCrypt));

/** Pads to whole AES blocks: 0x80, then zeros. `always`: data always gets its marker; a MAC only when needed. */
function pad(data: Buffer, always: boolean): Buffer {
  if (!always && data.length > 0 && data.length % 16 === 0) return data;
  const padded = Buffer.alloc(Math.ceil((data.length + 1) / 16) * 16);
  data.copy(padded);
  padded[data.length] = 0x80;
  return padded;
}

/** The 16-byte MAC of `message` (the packet from SOM to the end of its data), chained from `iv`. */
export function computeMac(keys: SessionKeys, iv: Buffer, message: Buffer): Buffer {
  const padded = pad(message, false);
  const last = padded.subarray(padded.length - 16);
  const chain = padded.length > 16 ? aesCbc(keys.mac1, iv, padded.subarray(0, padded.length - 16)).subarray(-16) : iv;
  return aesCbc(keys.mac2, chain, last);
}

/** Both MACs' first 4 bytes (what travels) compared in constant time. */
export function macMatches(expected16: Buffer, received4: Buffer): boolean {
  return received4.length === 4 && timingSafeEqual(expected16.subarray(0, 4), received4);
}

const complement = (mac: Buffer) => Buffer.from(mac.map((b) => ~b & 0xff));

export function encryptData(keys: SessionKeys, otherSideLastMac: Buffer, data: Buffer): Buffer {
  return aesCbc(keys.enc, complement(otherSideLastMac), pad(data, true));
}

/** The plain data, or null when it does not decrypt to data with its padding (a wrong key, a forged packet). */
export function decryptData(keys: SessionKeys, otherSideLastMac: Buffer, data: Buffer): Buffer | null {
  if (data.length === 0 || data.length % 16 !== 0) return null;
  const decipher = createDecipheriv('aes-128-cbc', keys.enc, complement(otherSideLastMac)).setAutoPadding(false);
  const plain = Buffer.concat([decipher.update(data), decipher.final()]);
  let end = plain.length - 1;
  while (end >= 0 && plain[end] === 0) end--;
  if (end < 0 || plain[end] !== 0x80 || plain.length - end > 16) return null;
  return plain.subarray(0, end);
}
