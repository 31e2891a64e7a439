/**
 * An OSDP Peripheral Device (reader) emulator for the tests, written from the standard (SIA OSDP v2.2, section 5
 * and annex) and not from door-agent's encoder: its own bit-by-bit CRC, its own packet layout. One emulator can
 * answer for several addresses on one bus. Plain mode only.
 */

function crc(bytes: number[]): number {
  let value = 0x1d0f; // CRC-16/AUG-CCITT
  for (const byte of bytes) {
    value ^= byte << 8;
    for (let i = 0; i < 8; i++) value = value & 0x8000 ? ((value << 1) ^ 0x1021) & 0xffff : (value << 1) & 0xffff;
  }
  return value;
}

export interface EmulatedReader {
  address: number;
  /** Stops answering (unplugged, powered off) while true. */
  silent: boolean;
  /** Replies with a broken CRC while true. */
  corrupt: boolean;
  /** Replies waiting for the next poll (RAW, KEYPAD, LSTATR), oldest first. */
  pending: Array<{ code: number; data: number[] }>;
  /** Commands received, by code. */
  received: number[];
  /** Expected sequence number of the next command; 0 resets. */
  lastSqn: number | null;
  /** The last reply, sent again when the CP repeats a command's sequence number (its reply was lost). */
  lastReply: Buffer | null;
}

export class OsdpEmulator {
  readonly readers = new Map<number, EmulatedReader>();
  private buffer: number[] = [];

  constructor(
    addresses: number[],
    private readonly reply: (bytes: Buffer) => void,
  ) {
    for (const address of addresses) this.readers.set(address, { address, silent: false, corrupt: false, pending: [], received: [], lastSqn: null, lastReply: null });
  }

  reader(address: number): EmulatedReader {
    return this.readers.get(address)!;
  }

  /** A card held to the reader: osdp_RAW with its Wiegand bits (format 1 = Wiegand), MSB first. */
  presentCard(address: number, bits: number[]): void {
    const bytes = Array.from({ length: Math.ceil(bits.length / 8) }, (_, i) => bits.slice(i * 8, i * 8 + 8).reduce((a, b, j) => a | (b << (7 - j)), 0));
    this.reader(address).pending.push({ code: 0x50, data: [0, 1, bits.length & 0xff, bits.length >> 8, ...bytes] });
  }

  /** Keys typed: osdp_KEYPAD, ASCII digits, '*' and '#'. */
  typeKeys(address: number, keys: string): void {
    this.reader(address).pending.push({ code: 0x53, data: [0, keys.length, ...[...keys].map((k) => k.charCodeAt(0))] });
  }

  receive(chunk: Buffer): void {
    this.buffer.push(...chunk);
    for (;;) {
      const som = this.buffer.indexOf(0x53);
      if (som < 0) return void (this.buffer = []);
      this.buffer.splice(0, som);
      if (this.buffer.length < 5) return;
      const length = this.buffer[2]! | (this.buffer[3]! << 8);
      if (length < 8 || length > 1440) {
        this.buffer.shift();
        continue;
      }
      if (this.buffer.length < length) return;
      const packet = this.buffer.splice(0, length);
      const check = packet[length - 2]! | (packet[length - 1]! << 8);
      if ((packet[4]! & 0x04) === 0 || check !== crc(packet.slice(0, length - 2))) continue; // we only take CRC packets
      this.command(packet);
    }
  }

  private command(packet: number[]): void {
    const address = packet[1]! & 0x7f;
    const reader = this.readers.get(address);
    if (!reader || packet[1]! & 0x80 || reader.silent) return;
    const sqn = packet[4]! & 0x03;
    const code = packet[5]!;
    reader.received.push(code);
    // The same sequence number again: the CP did not get our reply. Send it again, not a new one (a card read
    // must not be lost with a reply the line corrupted).
    if (sqn !== 0 && sqn === reader.lastSqn && reader.lastReply) return this.reply(this.finish(reader, reader.lastReply));
    if (sqn !== 0 && reader.lastSqn !== null && sqn !== (reader.lastSqn % 3) + 1 && sqn !== reader.lastSqn) {
      return this.send(reader, sqn, 0x41, [0x04]); // NAK: sequence number error
    }
    reader.lastSqn = sqn;
    switch (code) {
      case 0x61: // osdp_ID -> osdp_PDID: vendor 0A0B0C, model 1, version 2, serial 0x01020304, firmware 3.4.5
        return this.send(reader, sqn, 0x45, [0x0a, 0x0b, 0x0c, 1, 2, 4, 3, 2, 1, 3, 4, 5]);
      case 0x62: // osdp_CAP -> osdp_PDCAP: card data format (4), reader LED (6), buzzer (8)
        return this.send(reader, sqn, 0x46, [4, 1, 0, 6, 1, 1, 8, 1, 1]);
      case 0x60: {
        const next = reader.pending.shift();
        return next ? this.send(reader, sqn, next.code, next.data) : this.send(reader, sqn, 0x40, []);
      }
      default: // LED, BUZ and the rest: acknowledged
        return this.send(reader, sqn, 0x40, []);
    }
  }

  private send(reader: EmulatedReader, sqn: number, code: number, data: number[]): void {
    const length = 5 + 1 + data.length + 2;
    const body = Buffer.from([0x53, reader.address | 0x80, length & 0xff, length >> 8, sqn | 0x04, code, ...data]);
    reader.lastReply = body;
    this.reply(this.finish(reader, body));
  }

  private finish(reader: EmulatedReader, body: Buffer): Buffer {
    const value = crc([...body]) ^ (reader.corrupt ? 0x0101 : 0);
    return Buffer.concat([body, Buffer.from([value & 0xff, value >> 8])]);
  }
}
