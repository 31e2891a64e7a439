import type { ReaderFrame } from './frame.js';

/** The longest PIN kept: past it, typing is not keypad entry and only the latest digits count. */
export const MAX_PIN_DIGITS = 16;

/**
 * Keypad entry, whatever the reader: digits typed one key at a time become a PIN when `#` is pressed; `*` (or a
 * card presented, which starts a new interaction) clears them, and a pause longer than keyTimeoutMs between keys
 * starts over (10 s, docs/hardware.md). Pure: time comes in with each call.
 */
export class KeypadEntry {
  private keys = '';
  private lastKeyAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly keyTimeoutMs = 10_000) {}

  /** One digit typed at `now`. */
  digit(digit: string, now: number): void {
    if (now - this.lastKeyAt > this.keyTimeoutMs) this.keys = '';
    this.lastKeyAt = now;
    // Past the longest PIN this is not keypad entry: keep only the latest digits.
    this.keys = (this.keys + digit).slice(-MAX_PIN_DIGITS);
  }

  /** `#`: the PIN typed so far, or null when nothing was typed or the last key is too long ago. Starts over. */
  submit(now: number): string | null {
    const pin = this.keys;
    this.keys = '';
    return pin !== '' && now - this.lastKeyAt <= this.keyTimeoutMs ? pin : null;
  }

  /** `*`, or a card presented: the digits typed so far are dropped. */
  clear(): void {
    this.keys = '';
  }

  /**
   * One key from a reader that sends keys as frames rather than bytes (Wiegand and OSDP keypads): `#` submits,
   * `*` clears, a digit is typed, anything else is ignored.
   */
  press(key: string, now: number): ReaderFrame[] {
    if (key === '*') {
      this.clear();
      return [{ kind: 'keypad_cleared' }];
    }
    if (key === '#') {
      const pin = this.submit(now);
      return pin === null ? [] : [{ kind: 'pin', value: pin }];
    }
    if (key.length === 1 && key >= '0' && key <= '9') this.digit(key, now);
    return [];
  }
}
