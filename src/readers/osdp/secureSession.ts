import { randomBytes, timingSafeEqual } from 'node:crypto';
import { finishPacket, packetHead, type Packet } from './packet.js';
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
  type SessionKeys,
} from './secureChannel.js';
import { handshakeRetryDelay } from './pacing.js';
import { withProps } from '../../core/objects.js';

/** The command and reply codes of the handshake (the rest of the protocol is the control panel's). */
const CHLNG = 0x76;
const SCRYPT = 0x77;
const CCRYPT = 0x76;
const RMAC_I = 0x78;
/** Security block types: the handshake (0x11-0x14), then MAC only (0x15 commands, 0x16 replies) or MAC and data encryption (0x17, 0x18). */
const SCS = { CHLNG: 0x11, CCRYPT: 0x12, SCRYPT: 0x13, RMAC_I: 0x14, CMD_MAC: 0x15, REPLY_MAC: 0x16, CMD_ENC: 0x17, REPLY_ENC: 0x18 } as const;

export interface SecureCommand {
  code: number;
  data: Buffer;
  scb?: { type: number; data: Buffer };
}

/**
 * One reader's secure channel session (SIA OSDP v2.2, annex D), for the control panel: the handshake's commands
 * and the checks of its replies, then every command sealed (encrypted, MACed) and every reply opened (MAC checked,
 * decrypted). The crypto is secureChannel.ts; the bus, sequence numbers and retries are the control panel's.
 */
export class SecureSession {
  private phase: 'off' | 'challenge' | 'scrypt' | 'established' = 'off';
  private keys: SessionKeys | null = null;
  private rndA: Buffer = Buffer.alloc(8);
  private rndB: Buffer = Buffer.alloc(8);
  /** The last command MAC and reply MAC (16 bytes each): each side's next MAC chains from the other's. */
  private cmac: Buffer = Buffer.alloc(16);
  private rmac: Buffer = Buffer.alloc(16);
  private retryAt = 0;
  /** Failed handshakes in a row: the next waits longer (pacing.ts), and only the first is reported. */
  private failures = 0;
  private quirkReported = false;

  constructor(
    private readonly options: {
      /** The reader's key; absent in install mode (SCBK-D). */
      scbk?: Buffer;
      installMode?: boolean;
      random?: (bytes: number) => Buffer;
      onError?: (message: string) => void;
      onSecure?: (established: boolean) => void;
      /** A reply that departs from the standard but verifies (an LSTATR in block 0x15, as issue 32 reported of libosdp): said once. */
      onQuirk?: (message: string) => void;
    },
  ) {}

  get established(): boolean {
    return this.phase === 'established';
  }

  /** The last handshake failed and the next waits (a reader with another key, or without the secure channel). */
  get failed(): boolean {
    return this.failures > 0 && this.phase !== 'established';
  }

  /** The reader went away: whatever it is when it is back (another reader, a new key), the handshake starts at once. */
  reset(now: number): void {
    this.end(null, now);
    this.failures = 0;
    this.retryAt = 0;
  }

  /** The handshake's next command; null while a failed handshake waits for its next try. */
  handshakeCommand(now: number): SecureCommand | null {
    if (this.phase === 'off') {
      if (now < this.retryAt) return null;
      this.rndA = (this.options.random ?? randomBytes)(8);
      this.phase = 'challenge';
    }
    // The challenge (our random number), then our cryptogram once the reader has proved its key.
    const keyType = Buffer.from([this.options.installMode ? 0x00 : 0x01]);
    if (this.phase === 'challenge') return { code: CHLNG, data: this.rndA, scb: { type: SCS.CHLNG, data: keyType } };
    return { code: SCRYPT, data: serverCryptogram(this.keys!, this.rndA, this.rndB), scb: { type: SCS.SCRYPT, data: keyType } };
  }

  /**
   * A command on the established channel: its data encrypted with the reply MAC's complement as IV, then MACed
   * from that MAC. `packet` keeps the plain data.
   */
  seal(packet: Packet): Buffer {
    const keys = this.keys!;
    const encrypted = packet.data.length > 0;
    const sealed: Packet = withProps(packet, {
      data: encrypted ? encryptData(keys, this.rmac, packet.data) : packet.data,
      scb: { type: encrypted ? SCS.CMD_ENC : SCS.CMD_MAC, data: Buffer.alloc(0) },
    });
    const head = packetHead(sealed, 4);
    this.cmac = computeMac(keys, this.rmac, head);
    return finishPacket(head, packet.crc, this.cmac.subarray(0, 4));
  }

  /**
   * The channel ends. A failed handshake (another key) waits before the next, longer each time (pacing.ts), and
   * only the first of a series is reported; a broken packet on an established channel (a MAC, a plain reply)
   * starts a new handshake at once.
   */
  end(error: string | null, now: number, backoff = false): void {
    const was = this.phase === 'established';
    this.phase = 'off';
    this.keys = null;
    if (backoff) this.retryAt = now + handshakeRetryDelay(++this.failures);
    if (error && (!backoff || this.failures === 1)) this.options.onError?.(error);
    if (was) this.options.onSecure?.(false);
  }

  /**
   * A reply to `sent`: the verified (and decrypted) reply, 'step' for a handshake step that went well, null for
   * anything that failed (never acted on; the session has ended and says why).
   */
  open(sent: Packet, reply: Packet, raw: Buffer, now: number): Packet | 'step' | null {
    if (this.phase === 'challenge' && sent.code === CHLNG) {
      if (reply.code !== CCRYPT || reply.scb?.type !== SCS.CCRYPT || reply.data.length !== 32) {
        this.end('the reader did not answer the secure channel challenge (does it support it, is it in secure mode?)', now, true);
        return null;
      }
      this.rndB = reply.data.subarray(8, 16);
      this.keys = deriveSessionKeys(this.options.installMode ? SCBK_D : this.options.scbk!, this.rndA);
      if (!timingSafeEqual(clientCryptogram(this.keys, this.rndA, this.rndB), reply.data.subarray(16, 32))) {
        this.end('the reader holds another secure channel key than scbkFile: no card or key from it is used', now, true);
        return null;
      }
      this.phase = 'scrypt';
      return 'step';
    }
    if (this.phase === 'scrypt' && sent.code === SCRYPT) {
      if (reply.code !== RMAC_I || reply.scb?.type !== SCS.RMAC_I || reply.scb.data[0] !== 0x01 || reply.data.length !== 16) {
        this.end('the reader refused our cryptogram (its key differs from scbkFile)', now, true);
        return null;
      }
      const expected = initialRmac(this.keys!, serverCryptogram(this.keys!, this.rndA, this.rndB));
      if (!timingSafeEqual(expected, reply.data)) {
        this.end("the reader's initial MAC does not verify: the secure channel is not established", now, true);
        return null;
      }
      this.rmac = expected;
      this.phase = 'established';
      this.failures = 0;
      this.options.onSecure?.(true);
      return 'step';
    }
    if (this.phase !== 'established' || !this.keys) return null;
    // Every reply must be MACed, chained from our command's MAC; anything else is refused and the channel restarts.
    const type = reply.scb?.type;
    // 0x15 is the command's MAC-only type; a reply in it is taken only if its MAC verifies (below), as a MAC-only
    // reply: its data was never encrypted, so nothing but the block type departs from the standard.
    if ((type !== SCS.REPLY_MAC && type !== SCS.REPLY_ENC && type !== SCS.CMD_MAC) || !reply.mac) {
      this.end('a plain reply on the secure channel: dropped, the channel restarts', now);
      return null;
    }
    const mac = computeMac(this.keys, this.cmac, raw.subarray(0, raw.length - (reply.crc ? 2 : 1) - 4));
    if (!macMatches(mac, reply.mac)) {
      this.end('a reply whose MAC does not verify: dropped, the channel restarts', now);
      return null;
    }
    const cmac = this.cmac;
    this.rmac = mac;
    if (type === SCS.CMD_MAC && !this.quirkReported) {
      this.quirkReported = true;
      this.options.onQuirk?.(
        `the reader answered command 0x${sent.code.toString(16)} with security block type 0x15 where the standard says 0x16; accepted, its MAC verifies`,
      );
    }
    if (type === SCS.REPLY_MAC || type === SCS.CMD_MAC) return reply;
    const data = decryptData(this.keys, cmac, reply.data);
    if (!data) {
      this.end('a reply that does not decrypt: dropped, the channel restarts', now);
      return null;
    }
    return withProps(reply, { data });
  }
}
