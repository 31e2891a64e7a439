import { PIN_AFTER_CARD_MS } from '../core/keypad.js';
import type { Clock, Timers } from '../util/clock.js';
import type { AccessResult } from './accessChecker.js';

/** The first factor of a card_and_pin door, accepted and waiting for its PIN. */
export interface WaitingCard {
  /** The decision that accepted it (recorded as refused if no PIN follows in time). */
  card: AccessResult;
  /** Its holders granted: a PIN of one of them completes it. */
  emailIds: readonly number[];
  linkIds: readonly string[];
  /** The card's number as the reader gave it (typed on the keypad, it is no second factor); null for a QR token. */
  number: string | null;
}

/**
 * card_and_pin: the card (or a guest's QR token) accepted, waiting PIN_AFTER_CARD_MS for the PIN of one of its
 * holders, users and guest links alike. One wait at a time: a new card replaces it. When the wait runs out, by its
 * timer or noticed by a late PIN, `onExpired` hears of it once.
 */
export class PinAfterCard {
  private waiting: (WaitingCard & { expiresAt: number; timer: unknown }) | null = null;

  constructor(private readonly deps: { clock: Clock; timers: Timers; onExpired: (card: AccessResult) => void }) {}

  /** A granted first factor: its holders must now add their PIN. */
  begin(card: AccessResult, number: string | null): void {
    this.clear();
    const granted = card.holders.filter((h) => h.reason === null).map((h) => h.holder);
    const emailIds = granted.flatMap((h) => ('email_id' in h ? [h.email_id] : []));
    const linkIds = granted.flatMap((h) => ('magic_link_id' in h ? [h.magic_link_id] : []));
    const timer = this.deps.timers.setTimeout(() => this.expire(), PIN_AFTER_CARD_MS);
    this.waiting = { card, emailIds, linkIds, number, expiresAt: this.deps.clock.monoNow() + PIN_AFTER_CARD_MS, timer };
  }

  /** A PIN came: the card it may complete, taken (the wait ends either way); null when none waits in time. */
  take(): WaitingCard | null {
    if (this.waiting && this.deps.clock.monoNow() >= this.waiting.expiresAt) this.expire();
    const waiting = this.waiting;
    this.clear();
    return waiting;
  }

  /** Ends the wait without a word (a new card, the door stopping). */
  clear(): void {
    if (this.waiting) this.deps.timers.clearTimeout(this.waiting.timer);
    this.waiting = null;
  }

  private expire(): void {
    const card = this.waiting?.card;
    this.clear();
    if (card) this.deps.onExpired(card);
  }
}
