/**
 * OSDP packets (SIA OSDP v2.2 / IEC 60839-11-5, section 5), pure: bytes in, packets out, and back.
 *
 *   [0xFF mark] SOM 0x53 | ADDR (bit 7 set in replies) | LEN (2 bytes LE: SOM to the last check byte) |
 *   CTRL (bits 0-1 sequence number, bit 2: 16-bit CRC rather than an 8-bit checksum, bit 3: security block) |
 *   [security block: length, type, data] | command or reply code | data | [MAC, 4 bytes] | CRC-16 LE or checksum
 *
 * The CRC is CRC-16/AUG-CCITT (polynomial 0x1021, initial 0x1D0F, no reflection): "123456789" gives 0xE5CC.
 * The checksum is the two's complement of the byte sum, so that every byte of the packet sums to zero.
 */

const SOM = 0x53;
const CTRL_CRC = 0x04;
const CTRL_SCB = 0x08;
/** The longest packet we take: the standard leaves it to the PD's receive buffer; 1,440 is what readers report. */
const MAX_PACKET = 1440;

export interface SecurityBlock {
  type: number;
  data: Buffer;
}

export interface Packet {
  /** 0-126, or 0x7f (broadcast). */
  addr: number;
  /** A reply from a PD (address bit 7 set). */
  reply: boolean;
  /** 0 (a reset of the sequence) or 1-3. */
  sqn: number;
  crc: boolean;
  scb?: SecurityBlock;
  code: number;
  data: Buffer;
  /** The 4-byte MAC of a secure packet (security block types 0x15-0x18). */
  mac?: Buffer;
}

/** Security block types that carry a MAC after the data. */
function hasMac(scbType: number | undefined): boolean {
  return scbType !== undefined && scbType >= 0x15 && scbType <= 0x18;
}

const CRC_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let b = 0; b < 8; b++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/** @internal */
export function crc16(bytes: Uint8Array, from = 0, to = bytes.length): number {
  let crc = 0x1d0f;
  for (let i = from; i < to; i++) crc = ((crc << 8) & 0xffff) ^ CRC_TABLE[((crc >> 8) ^ bytes[i]!) & 0xff]!;
  return crc;
}

/** @internal */
export function checksum(bytes: Uint8Array, from = 0, to = bytes.length): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum = (sum + bytes[i]!) & 0xff;
  return (0x100 - sum) & 0xff;
}

/**
 * The packet's bytes up to (not including) the MAC and the check: what a MAC is computed over. `mac` and the
 * check are appended by `finishPacket`.
 */
export function packetHead(packet: Omit<Packet, 'mac'>, macLength: number): Buffer {
  const scbLength = packet.scb ? 2 + packet.scb.data.length : 0;
  const length = 5 + scbLength + 1 + packet.data.length + macLength + (packet.crc ? 2 : 1);
  if (length > MAX_PACKET) throw new RangeError(`an OSDP packet of ${length} bytes is over ${MAX_PACKET}`);
  const head = Buffer.alloc(length - macLength - (packet.crc ? 2 : 1));
  head[0] = SOM;
  head[1] = (packet.addr & 0x7f) | (packet.reply ? 0x80 : 0);
  head.writeUInt16LE(length, 2);
  head[4] = (packet.sqn & 0x03) | (packet.crc ? CTRL_CRC : 0) | (packet.scb ? CTRL_SCB : 0);
  let at = 5;
  if (packet.scb) {
    head[at++] = scbLength;
    head[at++] = packet.scb.type;
    packet.scb.data.copy(head, at);
    at += packet.scb.data.length;
  }
  head[at++] = packet.code;
  packet.data.copy(head, at);
  return head;
}

/** The whole packet: head, MAC if any, then the CRC or checksum. */
export function finishPacket(head: Buffer, crc: boolean, mac?: Buffer): Buffer {
  const body = mac ? Buffer.concat([head, mac]) : head;
  const check = crc ? Buffer.alloc(2) : Buffer.alloc(1);
  if (crc) check.writeUInt16LE(crc16(body));
  else check[0] = checksum(body);
  return Buffer.concat([body, check]);
}

export function encodePacket(packet: Packet): Buffer {
  return finishPacket(packetHead(packet, packet.mac?.length ?? 0), packet.crc, packet.mac);
}

export type ParsedPacket = { kind: 'packet'; packet: Packet; raw: Buffer } | { kind: 'bad'; reason: 'check' | 'length' | 'format'; bytes: number };

/** Finds packets in a byte stream (an RS-485 bus: noise, marks, other PDs' traffic); keeps a partial one. */
export class PacketParser {
  private buffer: Buffer = Buffer.alloc(0);

  /** Forgets a partial packet (a new command on a half-duplex line: what is pending is no answer to it). */
  reset(): void {
    this.buffer = Buffer.alloc(0);
  }

  push(chunk: Buffer): ParsedPacket[] {
    this.buffer = this.buffer.length > 0 ? Buffer.concat([this.buffer, chunk]) : chunk;
    const out: ParsedPacket[] = [];
    for (;;) {
      const start = this.buffer.indexOf(SOM);
      if (start < 0) {
        this.buffer = Buffer.alloc(0);
        return out;
      }
      const buf = this.buffer.subarray(start);
      if (buf.length < 5) {
        this.buffer = Buffer.from(buf);
        return out;
      }
      const length = buf.readUInt16LE(2);
      const crc = (buf[4]! & CTRL_CRC) !== 0;
      if (length < 7 + (crc ? 1 : 0) || length > MAX_PACKET) {
        // Not a packet start (a 0x53 inside other bytes): look further.
        out.push({ kind: 'bad', reason: 'length', bytes: 1 });
        this.buffer = Buffer.from(buf.subarray(1));
        continue;
      }
      if (buf.length < length) {
        this.buffer = Buffer.from(buf);
        return out;
      }
      const raw = Buffer.from(buf.subarray(0, length));
      const good = crc ? raw.readUInt16LE(length - 2) === crc16(raw, 0, length - 2) : raw[length - 1] === checksum(raw, 0, length - 1);
      if (!good) {
        // Maybe not a packet at all (a noise 0x53 with a plausible length): look again from the next byte, so a
        // good packet inside those bytes is still found.
        out.push({ kind: 'bad', reason: 'check', bytes: 1 });
        this.buffer = Buffer.from(buf.subarray(1));
        continue;
      }
      this.buffer = Buffer.from(buf.subarray(length));
      const parsed = parseBody(raw, crc);
      out.push(parsed ? { kind: 'packet', packet: parsed, raw } : { kind: 'bad', reason: 'format', bytes: length });
    }
  }
}

function parseBody(raw: Buffer, crc: boolean): Packet | null {
  const end = raw.length - (crc ? 2 : 1);
  let at = 5;
  let scb: SecurityBlock | undefined;
  if (raw[4]! & CTRL_SCB) {
    const scbLength = raw[at]!;
    if (scbLength < 2 || at + scbLength >= end) return null;
    scb = { type: raw[at + 1]!, data: Buffer.from(raw.subarray(at + 2, at + scbLength)) };
    at += scbLength;
  }
  const macLength = hasMac(scb?.type) ? 4 : 0;
  if (at + 1 + macLength > end) return null;
  const code = raw[at]!;
  const data = Buffer.from(raw.subarray(at + 1, end - macLength));
  const mac = macLength > 0 ? Buffer.from(raw.subarray(end - macLength, end)) : undefined;
  return { addr: raw[1]! & 0x7f, reply: (raw[1]! & 0x80) !== 0, sqn: raw[4]! & 0x03, crc, ...(scb ? { scb } : {}), code, data, ...(mac ? { mac } : {}) };
}
