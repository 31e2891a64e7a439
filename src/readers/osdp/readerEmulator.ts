import { randomBytes } from 'node:crypto';
import { emulatedReader, type EmulatedReader } from './emulatedReader.js';
import { DEFAULT_KEY, cbc, crc, ecb, mac, not, padded, unpadded, type Session } from './emulatorCrypto.js';
import { firmwareBytes, receiveFragment } from './emulatorFiles.js';

/**
 * A simulated OSDP reader (Peripheral Device), as the simulated GPIO driver is a simulated chip: for the tests, the
 * benchmark and a bench without hardware. Written from the standard (SIA OSDP v2.2, section 5 and annex D) and
 * not from the control panel's encoder: its own bit-by-bit CRC, its own packet layout, its own secure channel
 * (node:crypto's AES, emulatorCrypto.ts), so the two check each other. One emulator can answer for several
 * addresses on one bus, each an EmulatedReader (emulatedReader.ts). It takes a firmware file over osdp_FILETRANSFER
 * (emulatorFiles.ts), timed by `now` (monotonic ms; tests give their manual clock).
 */
export class OsdpEmulator {
  readonly readers = new Map<number, EmulatedReader>();
  private buffer: number[] = [];

  private readonly now: () => number;

  constructor(
    addresses: number[],
    private readonly reply: (bytes: Buffer) => void,
    options: { now?: () => number } = {},
  ) {
    this.now = options.now ?? (() => performance.now());
    for (const address of addresses) this.readers.set(address, emulatedReader(address));
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
      if (som < 0) {
        this.buffer = [];
        return;
      }
      this.buffer.splice(0, som);
      if (this.buffer.length < 5) return;
      const length = this.buffer[2]! | (this.buffer[3]! << 8);
      if (length < 7 || length > 1440) {
        this.buffer.shift();
        continue;
      }
      if (this.buffer.length < length) return;
      const packet = this.buffer.splice(0, length);
      const withCrc = (packet[4]! & 0x04) !== 0;
      const good = withCrc
        ? (packet[length - 2]! | (packet[length - 1]! << 8)) === crc(packet.slice(0, length - 2))
        : packet.reduce((sum, b) => (sum + b) & 0xff, 0) === 0; // the checksum makes every byte sum to zero
      if (!good) continue;
      this.command(packet, withCrc);
    }
  }

  private command(packet: number[], withCrc: boolean): void {
    const address = packet[1]! & 0x7f;
    const reader = this.readers.get(address);
    if (!reader || packet[1]! & 0x80 || reader.silent || this.restarting(reader)) return;
    // A command longer than its receive buffer (osdp_PDCAP function 10) does not fit: NAK 2, length error.
    if (reader.receiveBuffer !== null && packet.length > reader.receiveBuffer) return this.send(reader, packet[4]! & 0x03, 0x41, [0x02]);
    const sqn = packet[4]! & 0x03;
    const hasScb = (packet[4]! & 0x08) !== 0;
    const scbLength = hasScb ? packet[5]! : 0;
    const scbType = hasScb ? packet[6]! : null;
    const codeAt = 5 + scbLength;
    const code = packet[codeAt]!;
    const macLength = scbType !== null && scbType >= 0x15 ? 4 : 0;
    const trailer = withCrc ? 2 : 1;
    reader.checksumMode = !withCrc; // we answer in kind
    let data: Buffer = Buffer.from(packet.slice(codeAt + 1, packet.length - trailer - macLength));
    reader.received.push(code);
    // The same sequence number again: the CP did not get our reply. Send it again, not a new one (a card read
    // must not be lost with a reply the line corrupted).
    if (sqn !== 0 && sqn === reader.lastSqn && reader.lastReply) {
      // Only the same command again is a retry (as libosdp); another one with the old number is a sequence error.
      if (code === reader.lastCode) return this.reply(this.checked(reader, reader.lastReply));
      reader.session = null;
      return this.send(reader, sqn, 0x41, [0x04]);
    }
    if (sqn !== 0 && reader.lastSqn !== null && sqn !== (reader.lastSqn % 3) + 1) {
      return this.send(reader, sqn, 0x41, [0x04]); // NAK: sequence number error
    }
    reader.lastSqn = sqn;
    reader.lastCode = code;
    if (sqn === 0) reader.session = null; // a reset ends any secure session
    const session = reader.session;
    if (code === 0x76 && scbType === 0x11) return this.challenge(reader, sqn, packet[7]!, data);
    if (code === 0x77 && scbType === 0x13) return this.serverCryptogram(reader, sqn, data);
    if (session?.established) {
      // Secure: the command must carry its MAC, chained from our last reply's.
      if (macLength === 0) return this.send(reader, sqn, 0x41, [0x06]); // NAK: unsupported security block
      const expected = mac(session, session.rmac, Buffer.from(packet.slice(0, packet.length - trailer - 4)));
      if (!expected.subarray(0, 4).equals(Buffer.from(packet.slice(packet.length - trailer - 4, packet.length - trailer)))) {
        reader.log.push('bad mac');
        reader.session = null;
        return this.send(reader, sqn, 0x41, [0x06]);
      }
      if (scbType === 0x17) data = unpadded(cbc(session.enc, not(session.rmac), data, true));
      session.cmac = expected;
    } else if (reader.scbk && code !== 0x61 && code !== 0x62) {
      return this.send(reader, sqn, 0x41, [0x06]); // a secure reader answers only ID and CAP in the clear
    }
    switch (code) {
      case 0x61: // osdp_ID -> osdp_PDID: vendor 0A0B0C, model 1, version 2, serial 0x01020304, firmware (3.4.5 at first)
        return this.send(reader, sqn, 0x45, [0x0a, 0x0b, 0x0c, 1, 2, 4, 3, 2, 1, ...firmwareBytes(reader.firmware)]);
      case 0x62: {
        // osdp_CAP -> osdp_PDCAP: card data format (3), one LED (4), a buzzer (5), CRC (8); a display: text output (6),
        // one row; a receive buffer (10) when set
        const buffer = reader.receiveBuffer;
        const extra = [...(reader.display ? [6, 1, 1] : []), ...(buffer !== null ? [10, buffer & 0xff, buffer >> 8] : [])];
        return this.send(reader, sqn, 0x46, [3, 1, 0, 4, 1, 1, 5, 1, 1, 8, 1, 0, ...extra]);
      }
      case 0x7c: // osdp_FILETRANSFER -> osdp_FTSTAT (emulatorFiles.ts)
        return this.fileTransfer(reader, sqn, data);
      case 0x60: {
        const next = reader.pending.shift();
        return next ? this.send(reader, sqn, next.code, next.data) : this.send(reader, sqn, 0x40, []);
      }
      case 0x64: // osdp_LSTAT -> osdp_LSTATR: tamper, power
        return this.send(reader, sqn, 0x48, [reader.tamper ? 1 : 0, reader.powerFailure ? 1 : 0]);
      case 0x75: // osdp_KEYSET: only over the secure channel; the new key counts from the next handshake
        if (!session?.established || data[0] !== 0x01 || data[1] !== 16 || data.length < 18) return this.send(reader, sqn, 0x41, [0x06]);
        reader.scbk = Buffer.from(data.subarray(2, 18));
        reader.log.push('keyset');
        return this.send(reader, sqn, 0x40, []);
      case 0x6b: {
        // osdp_TEXT: reader, text command (1-4: permanent/temporary, wrapped or not), seconds, row, column, length, text
        if (!reader.display) return this.send(reader, sqn, 0x41, [0x03]);
        if (data.length < 6 || data.length < 6 + data[5]!) return this.send(reader, sqn, 0x41, [0x02]);
        const text = data.subarray(6, 6 + data[5]!).toString('latin1');
        reader.shown.push({ text, command: data[1]!, seconds: data[2]!, row: data[3]!, column: data[4]! });
        return this.send(reader, sqn, 0x40, []);
      }
      case 0x6e: // osdp_COMSET: answered at the old settings with osdp_COM (the settings it will use), then moved
        return this.comset(reader, sqn, data);
      default: // LED, BUZ and the rest: acknowledged
        return this.send(reader, sqn, 0x40, []);
    }
  }

  /** Away restarting (it installed a firmware): no answer until the time is up; then as at power-up. */
  private restarting(reader: EmulatedReader): boolean {
    if (reader.restartingUntil === null) return false;
    if (this.now() < reader.restartingUntil) return true;
    reader.restartingUntil = null;
    return false;
  }

  private fileTransfer(reader: EmulatedReader, sqn: number, data: Buffer): void {
    const answer = receiveFragment(reader, data, this.now());
    if (!answer) return; // off the line
    this.send(reader, sqn, answer.code, answer.data);
    if (!answer.restart) return;
    reader.restartingUntil = this.now() + reader.rebootMs;
    reader.lastSqn = null;
    reader.lastReply = null;
    reader.session = null;
    reader.log.push('restart');
  }

  private comset(reader: EmulatedReader, sqn: number, data: Buffer): void {
    reader.log.push('comset');
    if (reader.comsetNak !== null) return this.send(reader, sqn, 0x41, [reader.comsetNak]);
    if (data.length !== 5) return this.send(reader, sqn, 0x41, [0x02]);
    if (data[0]! >= 0x7f) return this.send(reader, sqn, 0x41, [0x09]); // libosdp's PD discards a broadcast address
    const next = reader.comsetAnswer ?? { address: data[0]!, baudRate: data.readUInt32LE(1) };
    const answer = Buffer.alloc(5);
    answer[0] = next.address;
    answer.writeUInt32LE(next.baudRate, 1);
    this.send(reader, sqn, 0x54, [...answer]);
    if (reader.comsetStays) return;
    this.readers.delete(reader.address);
    reader.address = next.address;
    reader.baudRate = next.baudRate;
    reader.lastSqn = null;
    reader.session = null;
    this.readers.set(next.address, reader);
  }

  /** osdp_CHLNG: derive the session keys from our key (or SCBK-D) and the CP's random number; prove we hold it. */
  private challenge(reader: EmulatedReader, sqn: number, keyType: number, rndA: Buffer): void {
    const key = keyType === 0 ? DEFAULT_KEY : reader.scbk;
    if (!key || rndA.length !== 8) return this.send(reader, sqn, 0x41, [0x06]);
    const derive = (which: number) => ecb(key, Buffer.from([0x01, which, ...rndA.subarray(0, 6), 0, 0, 0, 0, 0, 0, 0, 0]));
    const rndB = randomBytes(8);
    const session: Session = {
      enc: derive(0x82),
      mac1: derive(0x01),
      mac2: derive(0x02),
      rndA,
      rndB,
      established: false,
      cmac: Buffer.alloc(16),
      rmac: Buffer.alloc(16),
    };
    reader.session = session;
    const cuid = Buffer.from([0x0a, 0x0b, 0x0c, 1, 4, 3, 2, 1]);
    this.send(reader, sqn, 0x76, [...cuid, ...rndB, ...ecb(session.enc, Buffer.concat([rndA, rndB]))], [0x12, keyType]);
  }

  /** osdp_SCRYPT: the CP proves it holds the key; we answer with the initial R-MAC. */
  private serverCryptogram(reader: EmulatedReader, sqn: number, cryptogram: Buffer): void {
    const session = reader.session;
    if (!session || !ecb(session.enc, Buffer.concat([session.rndB, session.rndA])).equals(cryptogram)) {
      reader.log.push('bad cryptogram');
      reader.session = null;
      return this.send(reader, sqn, 0x78, [], [0x14, 0xff]);
    }
    session.rmac = ecb(session.mac2, ecb(session.mac1, cryptogram));
    this.send(reader, sqn, 0x78, [...session.rmac], [0x14, 0x01]); // in the clear: the channel starts after it
    session.established = true;
    reader.log.push('established');
  }

  private send(reader: EmulatedReader, sqn: number, code: number, data: number[], scb?: number[]): void {
    const session = reader.session?.established ? reader.session : null;
    let payload: Buffer = Buffer.from(data);
    let block = scb;
    if (session && reader.lstatReplyInBlock15 && code === 0x48) block = [0x15];
    else if (session) {
      block = payload.length > 0 ? [0x18] : [0x16];
      if (payload.length > 0) payload = cbc(session.enc, not(session.cmac), padded(payload, true));
    }
    const scbBytes = block ? [block.length + 1, ...block] : [];
    const length = 5 + scbBytes.length + 1 + payload.length + (session ? 4 : 0) + (reader.checksumMode ? 1 : 2);
    const ctrl = sqn | (reader.checksumMode ? 0 : 0x04) | (block ? 0x08 : 0);
    let body = Buffer.from([0x53, reader.address | 0x80, length & 0xff, length >> 8, ctrl, ...scbBytes, code, ...payload]);
    if (session) {
      session.rmac = mac(session, session.cmac, body);
      const sent = Buffer.from(session.rmac.subarray(0, 4));
      if (reader.forgeNextMac) {
        reader.forgeNextMac = false;
        sent[0] = sent[0]! ^ 0xff;
      }
      body = Buffer.concat([body, sent]);
    }
    reader.lastReply = body;
    this.reply(this.checked(reader, body));
  }

  /** The CRC or the checksum appended (a wrong one while `corrupt`: the line garbled it). */
  private checked(reader: EmulatedReader, body: Buffer): Buffer {
    if ((body[4]! & 0x04) === 0) {
      const sum = body.reduce((a, b) => (a + b) & 0xff, 0);
      return Buffer.concat([body, Buffer.from([((0x100 - sum) & 0xff) ^ (reader.corrupt ? 0x01 : 0)])]);
    }
    const value = crc([...body]) ^ (reader.corrupt ? 0x0101 : 0);
    return Buffer.concat([body, Buffer.from([value & 0xff, value >> 8])]);
  }
}
