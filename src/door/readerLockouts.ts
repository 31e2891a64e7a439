import type { Logger } from 'pino';
import {
  CARD_IDLE,
  MAX_CARD_LOCKOUT_SECONDS,
  cardLockoutEndsAt,
  isCardLockedOut,
  recordCardFailure,
  recordCardRefused,
  type CardLockoutPolicy,
} from '../core/cardLockout.js';
import type { EventType } from '../store/eventLog.js';
import type { Clock, Timers } from '../util/clock.js';
import type { KeypadGuesses } from './keypadGuesses.js';

export type LockoutKind = 'pin' | 'card';

export interface ReaderLockoutsDeps {
  /** The agent's keypad lockout, shared by every door. */
  keypad: KeypadGuesses;
  /** This reader's own card lockout. */
  card: CardLockoutPolicy;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  record: (type: EventType, data: Record<string, unknown>) => void;
}

/**
 * A door's view of the two lockouts: wrong PINs lock every keypad of the agent (KeypadGuesses), refused cards and
 * tokens this reader (a card emulator cannot try numbers at serial speed; physical presence, so one reader's
 * flood never refuses a card at another). Attempts refused during a lockout: the first is recorded by the caller,
 * the rest counted and recorded as one summary (with `count`) when the lockout ends, so a flood cannot fill the
 * audit log.
 */
export class ReaderLockouts {
  private card = CARD_IDLE;
  private readonly refused: Record<LockoutKind, number> = { pin: 0, card: 0 };
  private readonly timers: Record<LockoutKind, unknown> = { pin: null, card: null };

  constructor(private readonly deps: ReaderLockoutsDeps) {}

  isLockedOut(kind: LockoutKind): boolean {
    if (kind === 'pin') return this.deps.keypad.isLockedOut();
    return isCardLockedOut(this.card, this.deps.clock.monoNow(), this.deps.card);
  }

  /** A refused PIN, card or token (see countsAsGuess): counted; the lockout it may start is recorded. */
  failed(kind: LockoutKind): void {
    if (kind === 'pin') {
      const seconds = this.deps.keypad.failed();
      if (seconds === null) return;
      this.deps.record('keypad_locked_out', { seconds, scope: 'agent' });
      this.deps.logger.warn({ seconds }, 'keypads locked out after repeated wrong PINs (every door of this agent)');
      return;
    }
    const { state, lockoutStarted } = recordCardFailure(this.card, this.deps.clock.monoNow(), this.deps.card);
    this.card = state;
    if (!lockoutStarted) return;
    const seconds = Math.min(this.deps.card.lockoutSeconds, MAX_CARD_LOCKOUT_SECONDS);
    this.deps.record('card_locked_out', { seconds, quiet_seconds: this.deps.card.quietSeconds });
    this.deps.logger.warn('reader locked out after repeated refused cards');
  }

  /**
   * An attempt refused for the lockout; true for the first of this lockout (the caller records that one). A card
   * lockout lasts until quietSeconds after the last guess refused (`isGuess`: asked only then, it costs a lookup).
   */
  refusedDuringLockout(kind: LockoutKind, isGuess: () => boolean = () => true): boolean {
    if (kind === 'card' && isGuess()) this.card = recordCardRefused(this.card, this.deps.clock.monoNow(), this.deps.card);
    const first = this.refused[kind]++ === 0;
    if (first) this.armSummary(kind);
    return first;
  }

  stop(): void {
    for (const kind of ['pin', 'card'] as const) {
      if (this.timers[kind] !== null) this.deps.timers.clearTimeout(this.timers[kind]);
      this.timers[kind] = null;
      this.summarize(kind);
    }
  }

  private endsAt(kind: LockoutKind): number | null {
    return kind === 'pin' ? this.deps.keypad.lockedUntil() : cardLockoutEndsAt(this.card, this.deps.card);
  }

  /** The summary goes out when the lockout has ended (a card lockout's end moves with each refused attempt). */
  private armSummary(kind: LockoutKind): void {
    if (this.timers[kind] !== null) return;
    const end = this.endsAt(kind);
    const now = this.deps.clock.monoNow();
    if (end === null || end <= now || !this.isLockedOut(kind)) {
      this.summarize(kind);
      return;
    }
    this.timers[kind] = this.deps.timers.setTimeout(() => {
      this.timers[kind] = null;
      this.armSummary(kind);
    }, end - now);
  }

  private summarize(kind: LockoutKind): void {
    const count = this.refused[kind] - 1; // the first one was recorded on its own
    this.refused[kind] = 0;
    if (count <= 0) return;
    const reason = kind === 'pin' ? 'keypad_locked_out' : 'card_locked_out';
    this.deps.record('access_denied', { kind, hint: kind === 'pin' ? 'PIN' : '…', reason, holders: [], count });
  }
}
