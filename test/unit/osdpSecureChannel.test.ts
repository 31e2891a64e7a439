import { describe, expect, it } from 'vitest';
import { SCBK_D, clientCryptogram, computeMac, decryptData, deriveSessionKeys, encryptData, macMatches, serverCryptogram } from '../../src/hardware/osdp/secureChannel.js';

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
});
