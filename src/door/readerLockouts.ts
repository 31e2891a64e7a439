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
import { PACE_FULL, READER_PACE, takePace } from '../core/readerPace.js';
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

/** Refusals by the pace outside a lockout are summarized once it has refused nothing for this long (a flood's end). */
const PACE_SUMMARY_AFTER_MS = 1_000;

/**
 * A reader's view of the two lockouts and its pace: wrong PINs lock every keypad of the agent (KeypadGuesses),
 * refused cards and tokens this reader (physical presence, so one reader's flood never refuses a card at
 * another), and the pace (core/readerPace.ts) bounds the reader's card and token decisions while it is open.
 * Attempts refused during a lockout: the first is recorded by the caller, the rest counted; those the pace
 * refused are only counted. The count is recorded as one summary (with `count`) once the lockout has ended and
 * the pace has refused nothing for a second, so a flood cannot fill the audit log.
 */
export class ReaderLockouts {
  private card = CARD_IDLE;
  private pace = PACE_FULL;
  /** Refused attempts not recorded on their own, waiting for the summary. */
  private readonly unrecorded: Record<LockoutKind, number> = { pin: 0, card: 0 };
  /** Whether the caller recorded this lockout's first refused attempt. */
  private readonly firstRecorded: Record<LockoutKind, boolean> = { pin: false, card: false };
  /** The last card or token the pace refused (monotonic ms) since the last summary; null: none. */
  private pacedAt: number | null = null;
  private readonly timers: Record<LockoutKind, unknown> = { pin: null, card: null };

  constructor(private readonly deps: ReaderLockoutsDeps) {}

  isLockedOut(kind: LockoutKind): boolean {
    if (kind === 'pin') return this.deps.keypad.isLockedOut();
    return isCardLockedOut(this.card, this.deps.clock.monoNow(), this.deps.card);
  }

  /** Whether the reader may decide a card or token now (its pace); takes one decision when it may. */
  takeDecision(): boolean {
    const { state, allowed } = takePace(this.pace, this.deps.clock.monoNow(), READER_PACE);
    this.pace = state;
    return allowed;
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
    const first = !this.firstRecorded[kind];
    if (first) this.firstRecorded[kind] = true;
    else this.unrecorded[kind]++;
    this.armSummary(kind);
    return first;
  }

  /**
   * A card or token the pace refused, without a lookup: a guess, as one refused during a lockout is (the flow asks
   * the pace only while the reader is open, so it prolongs no lockout), counted for the summary, never recorded alone.
   */
  refusedByPace(): void {
    const now = this.deps.clock.monoNow();
    this.card = recordCardRefused(this.card, now, this.deps.card);
    this.unrecorded.card++;
    this.pacedAt = now;
    this.armSummary('card');
  }

  stop(): void {
    for (const kind of ['pin', 'card'] as const) {
      if (this.timers[kind] !== null) this.deps.timers.clearTimeout(this.timers[kind]);
      this.timers[kind] = null;
      this.summarize(kind);
    }
  }

  /** When the summary is due (monotonic ms): the lockout's end, and a second after the pace's last refusal. */
  private summaryDue(kind: LockoutKind): number | null {
    const lockoutEnd = !this.isLockedOut(kind) ? null : kind === 'pin' ? this.deps.keypad.lockedUntil() : cardLockoutEndsAt(this.card, this.deps.card);
    const paceEnd = kind === 'card' && this.pacedAt !== null ? this.pacedAt + PACE_SUMMARY_AFTER_MS : null;
    if (lockoutEnd === null) return paceEnd;
    return paceEnd === null ? lockoutEnd : Math.max(lockoutEnd, paceEnd);
  }

  /** The summary goes out when it is due (a card lockout's end moves with each refused attempt: looked at again then). */
  private armSummary(kind: LockoutKind): void {
    if (this.timers[kind] !== null) return;
    const due = this.summaryDue(kind);
    const now = this.deps.clock.monoNow();
    if (due === null || due <= now) {
      this.summarize(kind);
      return;
    }
    this.timers[kind] = this.deps.timers.setTimeout(() => {
      this.timers[kind] = null;
      this.armSummary(kind);
    }, due - now);
  }

  private summarize(kind: LockoutKind): void {
    const count = this.unrecorded[kind];
    this.unrecorded[kind] = 0;
    this.firstRecorded[kind] = false;
    if (kind === 'card') this.pacedAt = null;
    if (count <= 0) return;
    const reason = kind === 'pin' ? 'keypad_locked_out' : 'card_locked_out';
    this.deps.record('access_denied', { kind, hint: kind === 'pin' ? 'PIN' : '…', reason, holders: [], count });
  }
}
