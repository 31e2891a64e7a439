import type { Clock, Timers } from '../../util/clock.js';
import { CMD, NAK_SEQUENCE, REPLY } from './codes.js';
import { PacketParser, encodePacket, type Packet } from './packet.js';
import { INTER_BYTE_TIMEOUT_MS, SECURE_FAILED_POLL_MS, STATUS_RETRY_MS, offlineRetryDelay } from './pacing.js';
import { applyReply, newReaderState, reidentify, reportChannel, type OsdpReaderOptions, type Queued, type ReaderState } from './readerState.js';
import { linkFragmentLimit } from './fileTransfer.js';
import { withProps } from '../../core/objects.js';

export { CMD, REPLY } from './codes.js';
export type { OsdpReaderOptions } from './readerState.js';

/**
 * An OSDP Control Panel on one RS-485 bus (SIA OSDP v2.2), plain mode: it polls each Peripheral Device (reader)
 * in turn, one command outstanding on the bus at a time, identifies it (ID, CAP) when it comes online, and turns
 * its card reads (osdp_RAW) and keys (osdp_KEYPAD) into the same frames as every other reader. A reader that
 * stops answering is reported offline and tried with a reset sequence at a slow rate (pacing.ts) until it answers
 * again; so is one whose secure channel failed. Transport, timers and clock are injected; the secure channel's
 * session is secureSession.ts.
 */

/** LED and buzzer feedback older than this is dropped: shown later, it would answer the wrong tap. */
const FEEDBACK_FRESH_MS = 1000;

export interface OsdpTransport {
  write(bytes: Buffer): void;
}

export interface OsdpBusOptions {
  transport: OsdpTransport;
  clock: Clock;
  timers: Timers;
  readers?: readonly OsdpReaderOptions[];
  /** A reply must start within this (ms); the standard allows a PD 200 ms. */
  replyTimeoutMs?: number;
  /** Quiet between a reply and the next command (ms): the turnaround of a half-duplex line. */
  pollGapMs?: number;
  /** A reader without a good reply for this long is offline (ms); the standard says 8 s, installers want less. */
  offlineAfterMs?: number;
  /** A gap longer than this (ms) inside a packet drops the partial packet (pacing.ts). */
  interByteTimeoutMs?: number;
  /** Random bytes for the handshake (tests give fixed ones). */
  random?: (bytes: number) => Buffer;
}

export class OsdpBus {
  private readonly readers: ReaderState[] = [];
  private readonly parser = new PacketParser();
  private turn = 0;
  private outstanding: { reader: ReaderState; packet: Packet; bytes: Buffer; timer: unknown; waiter?: Queued['waiter'] } | null = null;
  private nextTimer: unknown = null;
  private stopped = true;
  private readonly replyTimeoutMs: number;
  private readonly pollGapMs: number;
  private readonly offlineAfterMs: number;
  private readonly interByteTimeoutMs: number;
  private lastByteAt = -Infinity;

  constructor(private readonly options: OsdpBusOptions) {
    this.replyTimeoutMs = options.replyTimeoutMs ?? 200;
    this.pollGapMs = options.pollGapMs ?? 2;
    this.offlineAfterMs = options.offlineAfterMs ?? 2000;
    this.interByteTimeoutMs = options.interByteTimeoutMs ?? INTER_BYTE_TIMEOUT_MS;
    for (const r of options.readers ?? []) this.readers.push(newReaderState(r, this.options.clock.monoNow(), this.options.random));
  }

  /** A reader joins the bus (doors start one by one; several doors may share one bus). */
  addReader(reader: OsdpReaderOptions): void {
    if (this.readers.some((r) => r.options.address === reader.address)) throw new RangeError(`OSDP address ${reader.address} is already on this bus`);
    this.readers.push(newReaderState(reader, this.options.clock.monoNow(), this.options.random));
    // The bus may be waiting for a slow reader's turn: the new one is polled at once.
    if (!this.outstanding && this.nextTimer !== null) {
      this.options.timers.clearTimeout(this.nextTimer);
      this.nextTimer = null;
      this.schedule(this.pollGapMs);
    }
  }

  removeReader(address: number): void {
    const at = this.readers.findIndex((r) => r.options.address === address);
    if (at >= 0) this.dropQueued(this.readers.splice(at, 1)[0]!, 'the reader was taken off the bus');
    if (this.outstanding?.reader.options.address === address) {
      this.options.timers.clearTimeout(this.outstanding.timer);
      this.outstanding = null;
      this.schedule(this.pollGapMs);
    }
  }

  /** The reader's osdp_PDCAP lists a display (text output). */
  hasTextOutput(address: number): boolean {
    return this.readers.find((r) => r.options.address === address)?.textOutput ?? false;
  }

  /** The reader restarts on its own (a firmware installed): it is identified again, as one that came online. */
  reidentify(address: number): void {
    const reader = this.readers.find((r) => r.options.address === address);
    if (reader) reidentify(reader, this.options.clock.monoNow());
  }

  /** The largest osdp_FILETRANSFER fragment the link to the reader carries (its receive buffer, its secure channel). */
  fragmentLimit(address: number): number {
    const reader = this.readers.find((r) => r.options.address === address);
    return linkFragmentLimit(reader?.receiveBuffer ?? null, Boolean(reader?.sc));
  }

  get readerCount(): number {
    return this.readers.length;
  }

  /** The line went away (a USB adapter unplugged): every reader offline until it answers again. */
  lineLost(): void {
    if (this.outstanding) this.options.timers.clearTimeout(this.outstanding.timer);
    this.outstanding?.waiter?.reject(new Error('the OSDP line went away'));
    this.outstanding = null;
    this.parser.reset();
    for (const reader of this.readers) {
      this.dropQueued(reader, 'the OSDP line went away');
      reader.sqn = 0;
      reader.sc?.reset(this.options.clock.monoNow());
      this.setOnline(reader, false);
      reportChannel(reader);
    }
  }

  /** Queued commands and a pending retry go; requests waiting on them are refused with `why`. */
  private dropQueued(reader: ReaderState, why: string): void {
    for (const queued of reader.queued.splice(0)) queued.waiter?.reject(new Error(why));
    reader.retry?.waiter?.reject(new Error(why));
    reader.retry = null;
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
    // Bytes after a silence are not the rest of a packet: a reply cut short (a collision, a reader reset) must not
    // be completed by whatever comes next.
    const now = this.options.clock.monoNow();
    if (now - this.lastByteAt > this.interByteTimeoutMs) this.parser.reset();
    this.lastByteAt = now;
    for (const parsed of this.parser.push(chunk)) {
      if (parsed.kind !== 'packet') continue; // a corrupted reply is no reply: the timeout retries the command
      const packet = parsed.packet;
      const pending = this.outstanding;
      if (!packet.reply || !pending || packet.addr !== pending.reader.options.address) continue;
      if (packet.sqn !== pending.packet.sqn) continue; // an echo of an earlier exchange
      this.options.timers.clearTimeout(pending.timer);
      this.outstanding = null;
      pending.reader.retry = null;
      this.handleReply(pending.reader, pending.packet, packet, parsed.raw, pending.waiter);
      this.schedule(this.pollGapMs);
    }
  }

  /** Queues a command (LED, buzzer) for a reader; it goes out in place of its next poll. */
  send(address: number, code: number, data: Buffer): void {
    this.readers.find((r) => r.options.address === address)?.queued.push({ code, data, queuedAt: this.options.clock.monoNow() });
  }

  /** Sends a command in place of the reader's next poll and resolves with its reply (refused after 5 timeouts). */
  request(address: number, code: number, data: Buffer): Promise<Packet> {
    const reader = this.readers.find((r) => r.options.address === address);
    if (!reader) return Promise.reject(new Error(`no OSDP reader at address ${address} on this bus`));
    return new Promise((resolve, reject) => reader.queued.push({ code, data, waiter: { resolve, reject, attempts: 0 } }));
  }

  private schedule(delayMs: number): void {
    if (this.stopped || this.nextTimer !== null) return;
    this.nextTimer = this.options.timers.setTimeout(() => {
      this.nextTimer = null;
      this.sendNext();
    }, delayMs);
  }

  /** The next reader whose turn it is and who is due (an offline or failed one waits its paced time). */
  private nextDue(now: number): ReaderState | null {
    for (let i = 0; i < this.readers.length; i++) {
      const at = (this.turn + i) % this.readers.length;
      if (this.readers[at]!.dueAt <= now) {
        this.turn = at + 1;
        return this.readers[at]!;
      }
    }
    return null;
  }

  private sendNext(): void {
    if (this.stopped || this.outstanding || this.readers.length === 0) return;
    const now = this.options.clock.monoNow();
    const reader = this.nextDue(now);
    if (!reader) return this.schedule(Math.min(...this.readers.map((r) => r.dueAt)) - now);
    if (reader.retry) return this.transmitBytes(reader, reader.retry.packet, reader.retry.bytes, reader.retry.waiter);
    const sc = reader.sc;
    if (!reader.online || !reader.identified) return this.transmit(reader, { code: CMD.ID, data: Buffer.from([0]) });
    if (!reader.capabilities) return this.transmit(reader, { code: CMD.CAP, data: Buffer.from([0]) });
    if (sc && !sc.established) {
      const handshake = sc.handshakeCommand(now);
      if (handshake) return this.transmit(reader, handshake);
      // While a failed handshake waits for its next try, the reader stays supervised with osdp_ID, in the clear,
      // at a slow rate: it is still seen going offline, and neither the bus nor the log fills with it.
      reader.dueAt = now + SECURE_FAILED_POLL_MS;
      return this.transmit(reader, { code: CMD.ID, data: Buffer.from([0]) });
    }
    if (!reader.statusKnown && now >= reader.statusAskAt) {
      reader.statusAskAt = now + STATUS_RETRY_MS;
      return this.transmit(reader, { code: CMD.LSTAT, data: Buffer.alloc(0) });
    }
    let next = reader.queued.shift();
    while (next?.queuedAt !== undefined && now - next.queuedAt > FEEDBACK_FRESH_MS) next = reader.queued.shift();
    this.transmit(reader, next ?? { code: CMD.POLL, data: Buffer.alloc(0) });
  }

  private transmit(reader: ReaderState, command: { code: number; data: Buffer; scb?: { type: number; data: Buffer }; waiter?: Queued['waiter'] }): void {
    const crc = !reader.options.checksum;
    const base = { addr: reader.options.address, reply: false, sqn: reader.sqn, crc, code: command.code };
    const packet: Packet = withProps(base, { data: command.data, ...(command.scb ? { scb: command.scb } : {}) });
    const bytes = reader.sc?.established ? reader.sc.seal(packet) : encodePacket(packet);
    this.transmitBytes(reader, packet, bytes, command.waiter);
  }

  private transmitBytes(reader: ReaderState, packet: Packet, bytes: Buffer, waiter?: Queued['waiter']): void {
    // Half duplex: whatever is left of earlier traffic is not an answer to this command.
    this.parser.reset();
    // Outstanding before the write: a transport may hand the reply back at once.
    const timer = this.options.timers.setTimeout(() => this.timedOut(), this.replyTimeoutMs);
    this.outstanding = { reader, packet, bytes, timer, ...(waiter ? { waiter } : {}) };
    this.options.transport.write(Buffer.concat([Buffer.from([0xff]), bytes]));
  }

  private timedOut(): void {
    const pending = this.outstanding;
    this.outstanding = null;
    if (!pending) return;
    const reader = pending.reader;
    const code = pending.packet.code;
    const waiter = pending.waiter;
    if (waiter && ++waiter.attempts >= 5) {
      waiter.reject(new Error(`the reader at address ${reader.options.address} did not answer command 0x${code.toString(16)}`));
      reader.retry = null;
    } else if (code !== CMD.ID && code !== CMD.CAP) {
      // The same bytes again (same sequence number, same MAC): the reader repeats its reply if it sent one.
      reader.retry = { packet: pending.packet, bytes: pending.bytes, ...(waiter ? { waiter } : {}) };
    }
    const now = this.options.clock.monoNow();
    // A reader supervised slowly (its secure channel failed) has its poll interval on top before it is offline.
    const offlineAfter = this.offlineAfterMs + (reader.sc?.failed ? SECURE_FAILED_POLL_MS : 0);
    if (reader.online && now - reader.lastReplyAt > offlineAfter) this.setOnline(reader, false);
    // Offline: start again from sequence 0, as a PD that restarted expects, and with a new handshake; tried again
    // at a slow, growing interval (pacing.ts).
    if (!reader.online) {
      reader.sqn = 0;
      this.dropQueued(reader, `the reader at address ${reader.options.address} went offline`);
      reader.sc?.reset(now);
      reader.dueAt = now + offlineRetryDelay(reader.offlineAttempts++);
      reportChannel(reader);
    }
    this.schedule(this.pollGapMs);
  }

  private setOnline(reader: ReaderState, online: boolean): void {
    if (reader.online === online) return;
    reader.online = online;
    if (!online) {
      reader.identified = false;
      reader.capabilities = false;
      reader.textOutput = false;
      reader.statusKnown = false;
      reader.statusAskAt = 0;
    } else {
      reader.offlineAttempts = 0;
    }
    reader.options.onOnline?.(online);
  }

  private handleReply(reader: ReaderState, sent: Packet, received: Packet, raw: Buffer, waiter?: Queued['waiter']): void {
    // The reader answered this sequence number: the next command takes the next one.
    reader.sqn = (reader.sqn % 3) + 1;
    let result: Packet | 'step' | null = received;
    if (reader.sc) {
      if (sent.code === CMD.ID || sent.code === CMD.CAP) {
        // In the clear, before the handshake (or waiting for the next): the identity, the capabilities or a NAK,
        // nothing else. A card, a key or a status here would be a downgrade anyone on the line could forge.
        const allowed = !received.scb && (received.code === REPLY.PDID || received.code === REPLY.PDCAP || received.code === REPLY.NAK);
        if (!allowed) reader.options.onDropped?.('plain_reply');
        result = allowed ? received : null;
      } else {
        result = reader.sc.open(sent, received, raw, this.options.clock.monoNow());
      }
      reportChannel(reader);
    }
    if (result === null) {
      waiter?.reject(new Error('the reply failed the secure channel'));
      return; // never a sign of life: supervision counts verified replies only
    }
    reader.lastReplyAt = this.options.clock.monoNow();
    if (!reader.sc?.failed) reader.dueAt = 0;
    this.setOnline(reader, true);
    if (result === 'step') return;
    const reply = result;
    if (reply.code === REPLY.NAK && reply.data[0] === NAK_SEQUENCE) {
      reader.sqn = 0; // the PD lost track: start the sequence again
      reader.sc?.end(null, this.options.clock.monoNow());
      if (waiter) reader.queued.unshift({ code: sent.code, data: sent.data, waiter });
      return;
    }
    waiter?.resolve(reply);
    applyReply(reader, sent.code, reply, this.options.clock.monoNow());
  }
}
