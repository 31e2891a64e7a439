import { cardNumber, decodeBits, type WiegandNumbering } from '../../core/wiegand.js';
import type { Clock, Timers } from '../../util/clock.js';
import { ReaderFrameParser, type ReaderFrame } from '../readerFrames.js';
import { PacketParser, encodePacket, type Packet } from './packet.js';

/**
 * An OSDP Control Panel on one RS-485 bus (SIA OSDP v2.2), plain mode: it polls each Peripheral Device (reader)
 * in turn, one command outstanding on the bus at a time, identifies it (ID, CAP) when it comes online, and turns
 * its card reads (osdp_RAW) and keys (osdp_KEYPAD) into the same frames as every other reader. A reader that
 * stops answering is reported offline, polled with a reset sequence until it answers again. Transport, timers and
 * clock are injected; the secure channel is not in this module yet.
 */

export const CMD = { POLL: 0x60, ID: 0x61, CAP: 0x62, LED: 0x69, BUZ: 0x6a } as const;
export const REPLY = { ACK: 0x40, NAK: 0x41, PDID: 0x45, PDCAP: 0x46, LSTATR: 0x48, RAW: 0x50, KEYPAD: 0x53, BUSY: 0x79 } as const;
const NAK_SEQUENCE = 0x04;

export interface OsdpTransport {
  write(bytes: Buffer): void;
}

export interface OsdpReaderOptions {
  address: number;
  numbering: WiegandNumbering;
  onFrame: (frame: ReaderFrame) => void;
  onOnline?: (online: boolean) => void;
  /** osdp_LSTATR: the reader's tamper switch and power. */
  onStatus?: (status: { tamper: boolean; powerFailure: boolean }) => void;
  onIdentified?: (id: { vendor: string; model: number; version: number; serial: number; firmware: string }) => void;
  /** A card frame whose bits failed their parity, a key the reader should not send: never decided. */
  onDropped?: (reason: string) => void;
}

export interface OsdpBusOptions {
  transport: OsdpTransport;
  clock: Clock;
  timers: Timers;
  readers: readonly OsdpReaderOptions[];
  /** A reply must start within this (ms); the standard allows a PD 200 ms. */
  replyTimeoutMs?: number;
  /** Quiet between a reply and the next command (ms): the turnaround of a half-duplex line. */
  pollGapMs?: number;
  /** A reader without a good reply for this long is offline (ms); the standard says 8 s, installers want less. */
  offlineAfterMs?: number;
}

interface ReaderState {
  options: OsdpReaderOptions;
  sqn: number;
  online: boolean;
  identified: boolean;
  capabilities: boolean;
  lastReplyAt: number;
  queued: Array<{ code: number; data: Buffer }>;
  keys: ReaderFrameParser;
}

export class OsdpBus {
  private readonly readers: ReaderState[];
  private readonly parser = new PacketParser();
  private turn = 0;
  private outstanding: { reader: ReaderState; packet: Packet; timer: unknown } | null = null;
  private nextTimer: unknown = null;
  private stopped = true;
  private readonly replyTimeoutMs: number;
  private readonly pollGapMs: number;
  private readonly offlineAfterMs: number;

  constructor(private readonly options: OsdpBusOptions) {
    this.replyTimeoutMs = options.replyTimeoutMs ?? 200;
    this.pollGapMs = options.pollGapMs ?? 2;
    this.offlineAfterMs = options.offlineAfterMs ?? 2000;
    const now = options.clock.monoNow();
    this.readers = options.readers.map((r) => ({
      options: r,
      sqn: 0,
      online: false,
      identified: false,
      capabilities: false,
      lastReplyAt: now,
      queued: [],
      keys: new ReaderFrameParser({ cardFormat: 'decimal' }),
    }));
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.nextTimer !== null) this.options.timers.clearTimeout(this.nextTimer);
    if (this.outstanding) this.options.timers.clearTimeout(this.outstanding.timer);
    this.nextTimer = null;
    this.outstanding = null;
  }

  /** Bytes from the bus. */
  receive(chunk: Buffer): void {
    for (const parsed of this.parser.push(chunk)) {
      if (parsed.kind !== 'packet') continue; // a corrupted reply is no reply: the timeout retries the command
      const packet = parsed.packet;
      const pending = this.outstanding;
      if (!packet.reply || !pending || packet.addr !== pending.reader.options.address) continue;
      if (packet.sqn !== pending.packet.sqn) continue; // an echo of an earlier exchange
      this.options.timers.clearTimeout(pending.timer);
      this.outstanding = null;
      this.handleReply(pending.reader, pending.packet, packet);
      this.schedule(this.pollGapMs);
    }
  }

  /** Queues a command (LED, buzzer) for a reader; it goes out in place of its next poll. */
  send(address: number, code: number, data: Buffer): void {
    this.readers.find((r) => r.options.address === address)?.queued.push({ code, data });
  }

  private schedule(delayMs: number): void {
    if (this.stopped || this.nextTimer !== null) return;
    this.nextTimer = this.options.timers.setTimeout(() => {
      this.nextTimer = null;
      this.sendNext();
    }, delayMs);
  }

  private sendNext(): void {
    if (this.stopped || this.outstanding || this.readers.length === 0) return;
    const reader = this.readers[this.turn % this.readers.length]!;
    this.turn++;
    const command = !reader.online || !reader.identified ? { code: CMD.ID, data: Buffer.from([0]) } : !reader.capabilities ? { code: CMD.CAP, data: Buffer.from([0]) } : (reader.queued.shift() ?? { code: CMD.POLL, data: Buffer.alloc(0) });
    this.transmit(reader, { addr: reader.options.address, reply: false, sqn: reader.sqn, crc: true, code: command.code, data: command.data });
  }

  private transmit(reader: ReaderState, packet: Packet): void {
    // Outstanding before the write: a transport may hand the reply back at once.
    const timer = this.options.timers.setTimeout(() => this.timedOut(), this.replyTimeoutMs);
    this.outstanding = { reader, packet, timer };
    this.options.transport.write(Buffer.concat([Buffer.from([0xff]), encodePacket(packet)]));
  }

  private timedOut(): void {
    const pending = this.outstanding;
    this.outstanding = null;
    if (!pending) return;
    const reader = pending.reader;
    // An LED or buzzer command that got no answer goes out again (a poll is simply the next poll).
    const code = pending.packet.code;
    if (code !== CMD.POLL && code !== CMD.ID && code !== CMD.CAP) reader.queued.unshift({ code, data: pending.packet.data });
    if (reader.online && this.options.clock.monoNow() - reader.lastReplyAt > this.offlineAfterMs) this.setOnline(reader, false);
    // Offline: start again from sequence 0, as a PD that restarted expects.
    if (!reader.online) reader.sqn = 0;
    this.schedule(this.pollGapMs);
  }

  private setOnline(reader: ReaderState, online: boolean): void {
    if (reader.online === online) return;
    reader.online = online;
    if (!online) {
      reader.identified = false;
      reader.capabilities = false;
    }
    reader.options.onOnline?.(online);
  }

  private handleReply(reader: ReaderState, sent: Packet, reply: Packet): void {
    reader.lastReplyAt = this.options.clock.monoNow();
    if (reply.code === REPLY.NAK && reply.data[0] === NAK_SEQUENCE) {
      reader.sqn = 0; // the PD lost track: start the sequence again
      return;
    }
    // The sequence advances only on a good reply: a lost reply makes the retry carry the same number.
    reader.sqn = (reader.sqn % 3) + 1;
    this.setOnline(reader, true);
    switch (reply.code) {
      case REPLY.PDID:
        if (sent.code === CMD.ID) reader.identified = true;
        reader.options.onIdentified?.(parsePdid(reply.data));
        return;
      case REPLY.PDCAP:
        reader.capabilities = true;
        return;
      case REPLY.NAK:
        // A PD that does not know ID or CAP still polls.
        if (sent.code === CMD.ID) reader.identified = true;
        if (sent.code === CMD.CAP) reader.capabilities = true;
        return;
      case REPLY.RAW:
        return this.rawCard(reader, reply.data);
      case REPLY.KEYPAD:
        return this.keypad(reader, reply.data);
      case REPLY.LSTATR:
        reader.options.onStatus?.({ tamper: reply.data[0] === 1, powerFailure: reply.data[1] === 1 });
        return;
      default:
        return; // ACK, BUSY: nothing to do
    }
  }

  /** osdp_RAW: reader number, format (0: raw bits, 1: Wiegand), bit count (LE), the bits MSB first. */
  private rawCard(reader: ReaderState, data: Buffer): void {
    if (data.length < 4) return reader.options.onDropped?.('short_raw');
    const bitCount = data.readUInt16LE(2);
    if (data.length < 4 + Math.ceil(bitCount / 8)) return reader.options.onDropped?.('short_raw');
    const bits = Array.from({ length: bitCount }, (_, i) => (data[4 + (i >> 3)]! >> (7 - (i & 7))) & 1);
    const frame = decodeBits(bits, 'auto');
    if (frame.kind !== 'card') return reader.options.onDropped?.(frame.kind === 'dropped' ? frame.reason : 'not_a_card');
    for (const f of reader.keys.cardPresented(cardNumber(frame, reader.options.numbering))) reader.options.onFrame(f);
  }

  /** osdp_KEYPAD: reader number, digit count, the keys as ASCII ('*' as 0x2A or 0x7F, '#' as 0x23 or 0x0D). */
  private keypad(reader: ReaderState, data: Buffer): void {
    const count = data[1] ?? 0;
    const now = this.options.clock.monoNow();
    for (const byte of data.subarray(2, 2 + count)) {
      const key = byte === 0x7f ? '*' : byte === 0x0d ? '#' : String.fromCharCode(byte);
      if (!/^[0-9*#]$/.test(key)) {
        reader.options.onDropped?.('bad_key');
        continue;
      }
      for (const f of reader.keys.keyPressed(key, now)) reader.options.onFrame(f);
    }
  }
}

function parsePdid(data: Buffer): { vendor: string; model: number; version: number; serial: number; firmware: string } {
  if (data.length < 12) return { vendor: '', model: 0, version: 0, serial: 0, firmware: '' };
  return {
    vendor: data.subarray(0, 3).toString('hex'),
    model: data[3]!,
    version: data[4]!,
    serial: data.readUInt32LE(5),
    firmware: `${data[9]}.${data[10]}.${data[11]}`,
  };
}
