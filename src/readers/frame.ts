import type { WiegandCardFrame } from '../core/wiegand.js';

/**
 * What a door reader sent, framed: a card line, a keypad PIN, a QR token, a keypad clear, or a burst of noise
 * that was dropped (reported once per burst, never per byte). Its own module: the frame parsers and the keypad
 * entry both speak it.
 */
export type ReaderFrame =
  /**
   * `printed`: the card's facility:card too, when its format has a facility (Wiegand, OSDP; docs/hardware.md);
   * `decoded`: the card's bits as decoded (Wiegand, OSDP), for a learn session's every numbering.
   */
  | { kind: 'card'; value: string; printed?: string; decoded?: WiegandCardFrame }
  | { kind: 'pin'; value: string }
  | { kind: 'token'; value: string }
  | { kind: 'keypad_cleared' }
  | { kind: 'noise'; bytes: number; reasons: NoiseReason[] };

export type NoiseReason = 'binary' | 'too_long' | 'unrecognized' | 'checksum';
