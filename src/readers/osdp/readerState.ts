import type { FormatSet } from '../../core/wiegand.js';
import type { WiegandNumbering } from '../../core/wiegandFormats.js';
import { KeypadEntry } from '../keypadEntry.js';
import type { ReaderFrame } from '../readerFrames.js';
import { CMD, REPLY, describeNak } from './codes.js';
import type { Packet } from './packet.js';
import type { ChannelState } from './pacing.js';
import { decodeCardBits, decodeKeys, parsePdid, rawCardBits, receiveBufferSize } from './replyData.js';
import { SecureSession } from './secureSession.js';
import { hasTextOutput, type OsdpTextOptions } from './textOutput.js';

/**
 * One reader on an OSDP bus as the control panel keeps it: its options, where it stands (online, identified,
 * secure channel, status, paced tries), and what a verified reply means for it. The bus mechanics (turns,
 * timeouts, retries) are controlPanel.ts.
 */

export interface OsdpReaderOptions {
  address: number;
  numbering: WiegandNumbering;
  /** The formats osdp_RAW card data is decoded by (default: the built-ins). */
  formats?: FormatSet;
  onFrame: (frame: ReaderFrame) => void;
  /** Each osdp_RAW card's bits as the reader sent them, before any decoding (`reader learn` shows every numbering). */
  onRawCard?: (bits: number[]) => void;
  onOnline?: (online: boolean) => void;
  /** osdp_LSTATR: the reader's tamper switch and power. */
  onStatus?: (status: { tamper: boolean; powerFailure: boolean }) => void;
  onIdentified?: (id: { vendor: string; model: number; version: number; serial: number; firmware: string }) => void;
  /** A card frame whose bits failed their parity, a key the reader should not send: never decided. */
  onDropped?: (reason: string) => void;
  /**
   * The secure channel's key (16 bytes): every exchange after the handshake is MACed and its data encrypted;
   * nothing the reader sends is decided before the handshake has succeeded.
   */
  scbk?: Buffer;
  /** Install mode: the handshake uses the standard's default key SCBK-D (a new reader, before its key is set). */
  installMode?: boolean;
  /** Packets with the 8-bit checksum instead of the CRC-16, for a reader that offers only that. */
  checksum?: boolean;
  /** The secure channel failed: a wrong key, a MAC that does not verify. Said once per failure, never the key. */
  onSecureError?: (message: string) => void;
  onSecure?: (established: boolean) => void;
  /** The secure channel the reader has now (plain, pending, secure, failed): on each change only. */
  onChannel?: (state: ChannelState) => void;
  /** A reply that departs from the standard but verifies (said once per reader). */
  onQuirk?: (message: string) => void;
  /** The decision's text on the reader's display (osdp_TEXT), when it has one; absent: none is sent. */
  text?: OsdpTextOptions;
  /** What osdp_PDCAP said, each time the reader comes online. */
  onCapabilities?: (capabilities: { textOutput: boolean }) => void;
  /** The reader refused a text (osdp_NAK to osdp_TEXT), with the NAK's reason. */
  onTextRefused?: (reason: string) => void;
}

export interface Queued {
  code: number;
  data: Buffer;
  /** Feedback (LED, buzzer) is dropped when it could no longer be seen as the answer to a tap. */
  queuedAt?: number;
  /** A request waiting for its reply (KEYSET): settled with the reply, or refused after `attempts` timeouts. */
  waiter?: { resolve: (reply: Packet) => void; reject: (err: Error) => void; attempts: number };
}

export interface ReaderState {
  options: OsdpReaderOptions;
  sqn: number;
  online: boolean;
  identified: boolean;
  capabilities: boolean;
  /** Its osdp_PDCAP lists text output: it is sent osdp_TEXT. */
  textOutput: boolean;
  /** The longest message it receives (osdp_PDCAP function 10), null when it does not say. */
  receiveBuffer: number | null;
  /**
   * A tamper and power report came back since the reader came online (a tamper present at start is seen); until
   * then osdp_LSTAT is asked again, at most every STATUS_RETRY_MS (a dropped reply must not lose it).
   */
  statusKnown: boolean;
  statusAskAt: number;
  /** Not tried before this (monotonic ms): an offline reader, or one whose secure channel failed, is paced. */
  dueAt: number;
  offlineAttempts: number;
  channel: ChannelState;
  lastReplyAt: number;
  queued: Queued[];
  keys: KeypadEntry;
  sc: SecureSession | null;
  /**
   * The command whose reply was lost, exactly as sent: it goes out again, byte for byte, before anything else, so
   * the reader can repeat its reply (same sequence number, same MAC chain) and no card in it is lost.
   */
  retry: { packet: Packet; bytes: Buffer; waiter?: Queued['waiter'] } | null;
}

/** The reader's secure channel, given only the options it has (exact optional properties). */
function secureSessionFor(r: OsdpReaderOptions, random?: (bytes: number) => Buffer): SecureSession {
  const options: ConstructorParameters<typeof SecureSession>[0] = {};
  if (r.scbk) options.scbk = r.scbk;
  if (r.installMode) options.installMode = true;
  if (random) options.random = random;
  if (r.onSecureError) options.onError = r.onSecureError;
  if (r.onSecure) options.onSecure = r.onSecure;
  if (r.onQuirk) options.onQuirk = r.onQuirk;
  return new SecureSession(options);
}

export function newReaderState(r: OsdpReaderOptions, now: number, random?: (bytes: number) => Buffer): ReaderState {
  return {
    options: r,
    sqn: 0,
    online: false,
    identified: false,
    capabilities: false,
    textOutput: false,
    receiveBuffer: null,
    statusKnown: false,
    statusAskAt: 0,
    dueAt: 0,
    offlineAttempts: 0,
    channel: r.scbk || r.installMode ? 'pending' : 'plain',
    lastReplyAt: now,
    queued: [],
    keys: new KeypadEntry(),
    sc: r.scbk || r.installMode ? secureSessionFor(r, random) : null,
    retry: null,
  };
}

/** The secure channel actually in use, handed on when it changes. */
export function reportChannel(reader: ReaderState): void {
  const sc = reader.sc;
  const state: ChannelState = !sc ? 'plain' : sc.established ? 'secure' : sc.failed ? 'failed' : 'pending';
  if (state === reader.channel) return;
  reader.channel = state;
  reader.options.onChannel?.(state);
}

/**
 * The reader restarts on its own (it installed a firmware): it is asked who it is again (osdp_ID, osdp_CAP,
 * osdp_LSTAT), from sequence number 0 and with a new handshake, as a reader that came online.
 */
export function reidentify(reader: ReaderState, now: number): void {
  reader.sqn = 0;
  reader.identified = false;
  reader.capabilities = false;
  reader.statusKnown = false;
  reader.statusAskAt = 0;
  reader.sc?.reset(now);
  reportChannel(reader);
}

/** What a verified reply to `sentCode` tells of the reader: its identity, capabilities, a card, keys, its status. */
export function applyReply(reader: ReaderState, sentCode: number, reply: Packet, now: number): void {
  switch (reply.code) {
    case REPLY.PDID:
      // Once each time it comes online: the slow supervision of a failed secure channel asks again and again.
      if (sentCode !== CMD.ID || reader.identified) return;
      reader.identified = true;
      reader.options.onIdentified?.(parsePdid(reply.data));
      return;
    case REPLY.PDCAP:
      reader.capabilities = true;
      reader.textOutput = hasTextOutput(reply.data);
      reader.receiveBuffer = receiveBufferSize(reply.data);
      reader.options.onCapabilities?.({ textOutput: reader.textOutput });
      return;
    case REPLY.NAK:
      // A PD that does not know ID or CAP still polls.
      if (sentCode === CMD.ID) reader.identified = true;
      if (sentCode === CMD.CAP) reader.capabilities = true;
      if (sentCode === CMD.LSTAT) reader.statusKnown = true; // a reader without tamper and power reports
      if (sentCode === CMD.TEXT) reader.options.onTextRefused?.(describeNak(reply.data));
      return;
    case REPLY.RAW:
      return rawCard(reader, reply.data);
    case REPLY.KEYPAD:
      return keypad(reader, reply.data, now);
    case REPLY.LSTATR:
      reader.statusKnown = true;
      reader.options.onStatus?.({ tamper: reply.data[0] === 1, powerFailure: reply.data[1] === 1 });
      return;
    default:
      return; // ACK, BUSY: nothing to do
  }
}

function rawCard(reader: ReaderState, data: Buffer): void {
  const bits = rawCardBits(data);
  if (bits === null) return reader.options.onDropped?.('short_raw');
  reader.options.onRawCard?.(bits);
  const decoded = decodeCardBits(bits, reader.options.numbering, reader.options.formats);
  if ('dropped' in decoded) return reader.options.onDropped?.(decoded.dropped);
  reader.keys.clear(); // a card starts a new interaction
  reader.options.onFrame({ kind: 'card', value: decoded.card, ...(decoded.printed !== undefined ? { printed: decoded.printed } : {}), decoded: decoded.frame });
}

function keypad(reader: ReaderState, data: Buffer, now: number): void {
  for (const key of decodeKeys(data)) {
    if (key === null) reader.options.onDropped?.('bad_key');
    else for (const f of reader.keys.press(key, now)) reader.options.onFrame(f);
  }
}
