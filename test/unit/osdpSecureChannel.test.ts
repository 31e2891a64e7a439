import { describe, expect, it } from 'vitest';
import {
  SCBK_D,
  clientCryptogram,
  computeMac,
  decryptData,
  deriveSessionKeys,
  encryptData,
  initialRmac,
  macMatches,
  serverCryptogram,
} from '../../src/readers/osdp/secureChannel.js';
import { checksum, crc16 } from '../../src/readers/osdp/packet.js';

const rndA = Buffer.from('0102030405060708', 'hex');
const rndB = Buffer.from('a1a2a3a4a5a6a7a8', 'hex');

describe('OSDP secure channel cryptography', () => {
  it('SCBK-D is the standard default key, the bytes 0x30 to 0x3F', () => {
    expect([...SCBK_D]).toEqual(Array.from({ length: 16 }, (_, i) => 0x30 + i));
  });

  it('session keys differ from each other and depend on the key and on the first six bytes of RND.A only', () => {
    const keys = deriveSessionKeys(SCBK_D, rndA);
    expect(new Set([keys.enc, keys.mac1, keys.mac2].map((k) => k.toString('hex'))).size).toBe(3);
    const sameFirstSix = Buffer.from(rndA);
    sameFirstSix[7] = 0xee;
    expect(deriveSessionKeys(SCBK_D, sameFirstSix)).toEqual(keys);
    expect(deriveSessionKeys(Buffer.alloc(16, 1), rndA).enc.equals(keys.enc)).toBe(false);
    expect(() => deriveSessionKeys(Buffer.alloc(15), rndA)).toThrow(RangeError);
  });

  it('the two cryptograms are not the same block (the order of the random numbers differs)', () => {
    const keys = deriveSessionKeys(SCBK_D, rndA);
    expect(clientCryptogram(keys, rndA, rndB).equals(serverCryptogram(keys, rndA, rndB))).toBe(false);
  });

  it('data round-trips through encryption with the MAC of the other side as IV, padded 80 00..; a wrong IV does not give it back', () => {
    const keys = deriveSessionKeys(SCBK_D, rndA);
    const mac = Buffer.alloc(16, 0x5a);
    for (const length of [1, 15, 16, 17, 40]) {
      const data = Buffer.from(Array.from({ length }, (_, i) => i));
      const encrypted = encryptData(keys, mac, data);
      expect(encrypted.length).toBe(Math.ceil((length + 1) / 16) * 16); // the marker always, so 16 bytes become 32
      expect(decryptData(keys, mac, encrypted)).toEqual(data);
      const other = decryptData(keys, Buffer.alloc(16, 0x5b), encrypted);
      expect(other === null || !other.equals(data)).toBe(true);
    }
    expect(decryptData(keys, mac, Buffer.alloc(15))).toBeNull();
  });

  it('a MAC chains: the same message after another MAC gives another MAC; only the first 4 bytes travel', () => {
    const keys = deriveSessionKeys(SCBK_D, rndA);
    const message = Buffer.from('53001000150260', 'hex');
    const first = computeMac(keys, Buffer.alloc(16), message);
    const second = computeMac(keys, first, message);
    expect(first.equals(second)).toBe(false);
    expect(macMatches(first, first.subarray(0, 4))).toBe(true);
    expect(macMatches(first, second.subarray(0, 4))).toBe(false);
    expect(macMatches(first, first.subarray(0, 3))).toBe(false);
    // A message of whole blocks is not padded; one byte more is.
    expect(computeMac(keys, first, Buffer.alloc(32)).length).toBe(16);
  });

  // The worked examples of the standard (SIA OSDP v2.2, Annex E): the host (CP) random B0..B7, the PD random
  // A0..A7, SCBK-D.
  it("Annex E: session keys, both cryptograms and the initial R-MAC are the standard's own numbers", () => {
    const hex = (h: string) => Buffer.from(h, 'hex');
    const cpRandom = hex('b0b1b2b3b4b5b6b7');
    const pdRandom = hex('a0a1a2a3a4a5a6a7');
    const keys = deriveSessionKeys(SCBK_D, cpRandom);
    expect(keys.mac1.toString('hex')).toBe('5e86c676603bdee2d8beafe178637332');
    expect(keys.mac2.toString('hex')).toBe('6fda86e857777e81132035758239172e');
    expect(keys.enc.toString('hex')).toBe('bf8dc2a8329acb8c67c6d0cd9a451682');
    const host = serverCryptogram(keys, cpRandom, pdRandom);
    expect(host.toString('hex')).toBe('26d3356e07762d262801fc8e6665a891');
    expect(clientCryptogram(keys, cpRandom, pdRandom).toString('hex')).toBe('fde5d2f428ec16312471ea3c02bd7796');
    expect(initialRmac(keys, host).toString('hex')).toBe('b2a30057eb98ba2229ec1f875662b524');
  });

  it('Annex E: the CRC and checksum examples', () => {
    const crcOf = (bytes: number[]) => {
      const value = crc16(Buffer.from(bytes));
      return [value & 0xff, value >> 8];
    };
    expect(crcOf([0x53, 0x7f, 0x0d, 0x00, 0x04, 0x6e, 0x00, 0x80, 0x25, 0x00, 0x00])).toEqual([0x6e, 0x38]);
    expect(crcOf([0x53, 0x00, 0x09, 0x00, 0x04, 0x61, 0x00])).toEqual([0xc0, 0x66]);
    expect(checksum(Buffer.from([0x53, 0x7f, 0x0c, 0x00, 0x00, 0x6e, 0x00, 0x80, 0x25, 0x00, 0x00]))).toBe(0x0f);
    expect(checksum(Buffer.from([0x53, 0x00, 0x08, 0x00, 0x00, 0x61, 0x00]))).toBe(0x44);
  });
});
