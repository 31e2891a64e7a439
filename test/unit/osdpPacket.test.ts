import { describe, expect, it } from 'vitest';
import { PacketParser, checksum, crc16, encodePacket, type Packet } from '../../src/readers/osdp/packet.js';

// The packet layer against the standard's own definitions, checked independently here: the CRC by the catalogue's
// check value and a bit-by-bit reference, the checksum by its defining property, the layout by hand-written bytes.

/** CRC-16/AUG-CCITT bit by bit, as the standard's annex describes it. */
function referenceCrc(bytes: number[]): number {
  let crc = 0x1d0f;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

describe('OSDP packets', () => {
  it('the CRC is CRC-16/AUG-CCITT: the catalogue check value, and the bit-by-bit reference on random data', () => {
    expect(crc16(Buffer.from('123456789', 'latin1'))).toBe(0xe5cc);
    let seed = 7;
    for (let n = 0; n < 50; n++) {
      const bytes = Array.from({ length: 1 + ((n * 13) % 90) }, () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) & 0xff);
      expect(crc16(Buffer.from(bytes))).toBe(referenceCrc(bytes));
    }
  });

  it('a POLL to PD 0 with CRC, sequence 1: the bytes the standard lays out', () => {
    const bytes = encodePacket({ addr: 0, reply: false, sqn: 1, crc: true, code: 0x60, data: Buffer.alloc(0) });
    const head = [0x53, 0x00, 0x08, 0x00, 0x05, 0x60];
    const crc = referenceCrc(head);
    expect([...bytes]).toEqual([...head, crc & 0xff, crc >> 8]);
  });

  it('a checksum packet sums to zero', () => {
    const bytes = encodePacket({ addr: 3, reply: true, sqn: 2, crc: false, code: 0x40, data: Buffer.alloc(0) });
    expect([...bytes.subarray(0, 6)]).toEqual([0x53, 0x83, 0x07, 0x00, 0x02, 0x40]);
    expect([...bytes].reduce((a, b) => (a + b) & 0xff, 0)).toBe(0);
    expect(checksum(Buffer.from([1, 2, 3]))).toBe(0xfa);
  });

  it('parses what it encodes, with a security block and a MAC, from a noisy stream split anywhere', () => {
    const secure: Packet = {
      addr: 5,
      reply: true,
      sqn: 3,
      crc: true,
      scb: { type: 0x16, data: Buffer.alloc(0) },
      code: 0x50,
      data: Buffer.from([0, 1, 26, 0, 1, 2, 3, 4]),
      mac: Buffer.from([9, 8, 7, 6]),
    };
    const plain: Packet = { addr: 5, reply: true, sqn: 1, crc: true, code: 0x40, data: Buffer.alloc(0) };
    const stream = Buffer.concat([Buffer.from([0xff, 0x12, 0x00]), encodePacket(secure), Buffer.from([0xff]), encodePacket(plain)]);
    for (const split of [1, 5, 17, stream.length - 1]) {
      const parser = new PacketParser();
      const out = [...parser.push(stream.subarray(0, split)), ...parser.push(stream.subarray(split))];
      expect(out.filter((p) => p.kind === 'packet').map((p) => p.kind === 'packet' && p.packet)).toEqual([secure, plain]);
    }
  });

  it('a corrupted byte fails the check and the next packet is still found; a stray 0x53 is skipped', () => {
    const good = encodePacket({ addr: 1, reply: true, sqn: 1, crc: true, code: 0x40, data: Buffer.alloc(0) });
    const bad = Buffer.from(good);
    bad[5] = bad[5]! ^ 0x01;
    const out = new PacketParser().push(Buffer.concat([Buffer.from([0x53, 0xff, 0xff]), bad, good]));
    expect(out.map((p) => (p.kind === 'bad' ? `bad ${p.reason}` : 'packet'))).toEqual(['bad length', 'bad check', 'packet']);
  });

  it('a noise 0x53 with a plausible length does not swallow the good packets inside it', () => {
    const good = encodePacket({ addr: 1, reply: true, sqn: 1, crc: true, code: 0x40, data: Buffer.alloc(0) });
    const noise = Buffer.from([0x53, 0x01, 0x1e, 0x00, 0x04]); // "30 bytes follow"
    const out = new PacketParser().push(Buffer.concat([noise, good, good, good, good]));
    expect(out.filter((p) => p.kind === 'packet')).toHaveLength(4);
  });
});
