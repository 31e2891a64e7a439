import type { Logger } from 'pino';
import type { DoorOptions, FeedbackKind } from './options.js';
import { credentialHint, normalizeCardNumber, type CredentialKind } from '../core/credentials.js';
import { countsAsGuess } from '../core/keypad.js';
import { PinAfterCard } from './pinAfterCard.js';
import { ReaderLockouts } from './readerLockouts.js';
import type { KeypadGuesses } from './keypadGuesses.js';
import type { Credential } from '../readers/reader.js';
import type { EventType } from '../store/eventLog.js';
import type { Clock, Timers } from '../util/clock.js';
import type { AccessChecker, AccessRequest, AccessResult } from './accessChecker.js';
import type { AuditRecorder } from './auditRecorder.js';
import type { GrantSeen } from './doorSupervisionRuntime.js';
import type { LockController } from './lockController.js';
import type { Direction } from '../core/areas.js';
import type { DoorGate, TapOutcome } from './doorGroups.js';
import type { PassageRecord } from '../store/areaFacts.js';
import { withProps } from '../core/objects.js';
import { isCacheDamage } from '../store/cacheDamage.js';

/** The reader shows lockedOut at most this often (a flood must not flood the reader's own line). */
const LOCKED_OUT_FEEDBACK_MS = 500;

/** What the agent's metrics learn of each decision (src/metrics/): never the credential nor its holder. */
export interface DecisionMetrics {
  /** A grant, once the relay has moved: the seconds since the credential arrived. */
  granted(secondsToRelay: number): void;
  /** A refusal, with its reason code. */
  denied(reason: string): void;
}

export interface CredentialFlowDeps {
  controller: LockController;
  checker: AccessChecker;
  recorder: AuditRecorder;
  clock: Clock;
  timers: Timers;
  /** A child logger that already names the door. */
  logger: Logger;
  /** Whether the door is in lockdown now (its own or the agent's). */
  lockdown?: () => boolean;
  /** A member of the door's firstPersonIn was granted (its unlock schedule may start). */
  onFirstPerson?: (holders: ReadonlyArray<Record<string, unknown>>) => void;
  /** The agent's wrong-PIN counter and keypad lockout, shared by all its doors. */
  keypad: KeypadGuesses;
  /** A grant has just unlocked the door (the relay moved, same tick): its supervision expects the door to open. */
  onGranted: (grant: GrantSeen) => void;
  /** The cache is past access.maxCacheAgeHours (door/offlineLimit.ts): only responders and guest links are decided. */
  cacheTooOld?: () => boolean;
  /** Counts the decisions and times tap to relay (with `metrics` configured). */
  metrics?: DecisionMetrics;
  /** The reader this flow serves: its taps are entries or exits (default entry). */
  direction?: Direction;
  /** The door has an exit reader: each decision records its direction. */
  recordsDirection?: boolean;
  /** The door's areas, interlock and two-person rule (docs/areas.md); absent when it is in none. */
  gate?: DoorGate | null;
}

/**
 * The door's credentials, from tap to feedback: the reader's credential (normalized there) is decided with the
 * lockouts in force, card_and_pin waits for the holder's PIN, a duress PIN raises its silent alarm, a grant
 * unlocks the relay, and every decision is recorded (after the relay has acted) and shown at the reader.
 */
export class CredentialFlow {
  private readonly lockouts: ReaderLockouts;
  /** card_and_pin: the card accepted, waiting for a PIN of one of its users or guest links. */
  private readonly pinAfterCard: PinAfterCard;
  /** The reader shows the decision (LED and buzzer lines, a reply line, OSDP); absent for readers without feedback. */
  private feedback: ((kind: FeedbackKind) => void) | null = null;
  /** When the reader last showed lockedOut (monotonic ms): at most one every LOCKED_OUT_FEEDBACK_MS. */
  private lockedOutShownAt = Number.NEGATIVE_INFINITY;
  /** When the credential being decided arrived (monotonic ms), for tap to relay; read only with metrics. */
  private arrivedAt = 0;

  constructor(
    private readonly door: DoorOptions,
    private readonly deps: CredentialFlowDeps,
  ) {
    this.lockouts = new ReaderLockouts({
      keypad: deps.keypad,
      card: door.cardLockout,
      clock: deps.clock,
      timers: deps.timers,
      logger: deps.logger,
      record: (type, data) => this.record(type, data),
    });
    this.pinAfterCard = new PinAfterCard({
      clock: deps.clock,
      timers: deps.timers,
      onExpired: (card) => this.deny(withProps(card, { granted: false, reason: 'not_authorized' }), { factor: 'pin_timeout' }),
    });
  }

  private record(type: EventType, data: Record<string, unknown> = {}): void {
    this.deps.recorder.record(type, data);
  }

  private get direction(): Direction {
    return this.deps.direction ?? 'entry';
  }

  private decisionData(result: AccessResult, extra: Record<string, unknown> = {}) {
    return withProps(this.deps.recordsDirection ? { direction: this.direction } : {}, {
      kind: result.kind,
      hint: result.hint,
      reason: result.reason,
      ...(result.matchedBy ? { card_matched: result.matchedBy } : {}),
      holders: result.holders.map((h) => withProps(h.holder, { reason: h.reason })),
      ...(result.level !== undefined ? { level: result.level } : {}),
      ...(result.who !== undefined ? { who: result.who } : {}),
      ...extra,
    });
  }

  setFeedback(feedback: ((kind: FeedbackKind) => void) | null): void {
    this.feedback = feedback;
  }

  /**
   * A granted credential: the door's groups have their say first (docs/areas.md, "At a tap": the area, the
   * two-person rule, the interlock), then the relay moves.
   */
  private grant(result: AccessResult, extra: Record<string, unknown> = {}): void {
    const gate = this.deps.gate;
    if (!gate) return this.unlock(result, extra, null);
    // The holders granted; a responder or a grant under duress is exempt from anti-passback and the maximum.
    const parties = result.holders.filter((h) => h.reason === null).map((h) => ({ ref: h.holder, exempt: result.duress === true || h.responder === true }));
    const outcome = gate.tap(this.direction, parties);
    if (outcome.outcome === 'refused') return this.deny(withProps(result, { granted: false, reason: outcome.reason }), withProps(extra, outcome.detail));
    if (outcome.outcome === 'awaiting') return this.awaitSecondPerson(result, extra, outcome);
    this.unlock(result, outcome.firstPerson ? withProps(extra, { first_person: outcome.firstPerson }) : extra, outcome);
  }

  private unlock(result: AccessResult, extra: Record<string, unknown>, outcome: Extract<TapOutcome, { outcome: 'unlock' }> | null): void {
    // Logged once the relay has moved but before the lock change is announced: a log reads "granted", then "unlocked".
    // Who it was is looked up then too (a query the relay need not wait for), and the door's supervision told to
    // expect the door to open (in the same tick as the relay's move: no input is read in between).
    this.deps.controller.unlock(this.door.unlockSeconds, `${result.kind} ${result.hint}`, () => {
      this.deps.metrics?.granted((this.deps.clock.monoNow() - this.arrivedAt) / 1000);
      this.deps.onGranted({
        kind: typeof extra.kind === 'string' ? extra.kind : result.kind,
        hint: result.hint,
        ...(typeof extra.card_hint === 'string' ? { card_hint: extra.card_hint } : {}),
      });
      this.deps.checker.name(result);
      // An area's passages now (no contact, or the door open already) go with the grant, synced at once.
      const passages = outcome ? this.passagesOf(outcome) : [];
      this.deps.recorder.record('access_granted', this.decisionData(result, passages.length > 0 ? withProps(extra, { passages }) : extra), {
        durable: passages.length > 0,
      });
      if (outcome && outcome.violations.length > 0) {
        this.record('passback_violation', { area: outcome.area?.id, direction: this.direction, holders: outcome.violations, hint: result.hint });
        this.deps.logger.warn({ area: outcome.area?.id, holders: outcome.violations }, 'anti-passback violation (soft: granted)');
      }
      this.deps.logger.info({ kind: result.kind, hint: result.hint }, 'access granted');
    });
    // Under duress the door behaves exactly as usual: the alarm is silent.
    this.feedback?.('grant');
    const holders = result.holders.filter((h) => h.reason === null).map((h) => ({ ...h.holder }));
    if (result.firstPerson) this.deps.onFirstPerson?.(holders);
  }

  /** The area's passages of a grant whose relay has moved; never throws (the grant's record must follow). */
  private passagesOf(outcome: Extract<TapOutcome, { outcome: 'unlock' }>): PassageRecord[] {
    try {
      return this.deps.gate?.unlocked(outcome, this.direction) ?? [];
    } catch (err) {
      this.deps.logger.error({ err }, 'cannot count the passage in its area');
      return [];
    }
  }

  /** A two-person door's first person: acknowledged at the reader and audited; the door stays locked. */
  private awaitSecondPerson(result: AccessResult, extra: Record<string, unknown>, outcome: Extract<TapOutcome, { outcome: 'awaiting' }>): void {
    this.deps.checker.name(result);
    this.record('awaiting_second_person', this.decisionData(result, withProps(extra, { window_seconds: outcome.windowSeconds, restarted: outcome.restarted })));
    this.deps.logger.info({ kind: result.kind, hint: result.hint, windowSeconds: outcome.windowSeconds }, 'two-person door: waiting for a second person');
    this.feedback?.('awaiting');
  }

  /** A duress PIN: the alarm (audit event and the alarm topic) names the PIN's holders, never the digits. */
  private raiseDuress(result: AccessResult): void {
    const holders = result.duressHolders ?? [];
    this.record('duress', { kind: result.kind, hint: result.hint, holders });
    this.deps.logger.warn({ holders }, 'duress PIN used');
  }

  private deny(result: AccessResult, extra: Record<string, unknown> = {}): void {
    this.deps.metrics?.denied(result.reason ?? 'not_authorized');
    this.record('access_denied', this.decisionData(result, extra));
    this.deps.logger.info({ kind: result.kind, hint: result.hint, reason: result.reason }, 'access denied');
    const reason = result.reason;
    if (reason === 'keypad_locked_out' || reason === 'card_locked_out') this.showLockedOut();
    else this.feedback?.(reason === 'lockdown' ? 'lockdown' : 'deny');
  }

  /**
   * Every attempt refused for a lockout or the pace is shown, so a valid user never meets a dead reader; at most
   * once every LOCKED_OUT_FEEDBACK_MS, so a flood does not flood the reader's own line (a pattern still playing
   * shows it meanwhile).
   */
  private showLockedOut(): void {
    const now = this.deps.clock.monoNow();
    if (now - this.lockedOutShownAt < LOCKED_OUT_FEEDBACK_MS) return;
    this.lockedOutShownAt = now;
    this.feedback?.('lockedOut');
  }

  private check(kind: CredentialKind, credential: string, printed?: string): AccessResult | null {
    try {
      const request: AccessRequest = {
        door: this.door,
        kind,
        credential,
        now: this.deps.clock.wallNow(),
        lockdown: this.deps.lockdown?.() ?? false,
        cacheTooOld: this.deps.cacheTooOld?.() ?? false,
      };
      // Set, not spread in: a spread within the literal is a call into V8's runtime for each property after it.
      if (printed !== undefined) request.printed = printed;
      return this.deps.checker.checkPresented(request, { name: false });
    } catch (err) {
      // The door stays locked and the daemon keeps running (a restart would not mend the file; a damaged one is rebuilt).
      const reason = isCacheDamage(err) ? 'cache_damaged' : 'cache_unreadable';
      this.deps.logger.error({ err, kind }, err instanceof Error ? err.message : 'the cache cannot be read');
      this.deps.metrics?.denied(reason);
      this.record('access_denied', withProps(this.deps.recordsDirection ? { direction: this.direction } : {}, { kind, reason, holders: [] }));
      return null;
    }
  }

  /** A credential from the door's reader, normalized there (src/readers/reader.ts). */
  onCredential(credential: Credential): void {
    if (this.deps.metrics) this.arrivedAt = this.deps.clock.monoNow();
    // A lockout refuses before anything is looked up: during a keypad lockout not even a duress PIN is recognized
    // (anyone at the wire could otherwise raise a duress alarm for every PIN user in seconds).
    const lockout = credential.kind === 'pin' ? 'pin' : 'card';
    if (this.lockouts.isLockedOut(lockout)) return this.refuseForLockout(credential);
    // Cards and tokens are decided at the reader's pace (core/readerPace.ts); PINs have the keypad lockout.
    if (lockout === 'card' && !this.lockouts.takeDecision()) return this.refuseForPace();
    const result = this.check(credential.kind, credential.value, credential.printed);
    if (result === null) return;
    // The silent alarm first, whatever the decision, before anything that may fail (the relay, the other events).
    if (result.duress) this.raiseDuress(result);
    if (credential.kind === 'pin') return this.onPin(result, credential.value);
    // A card_and_pin door takes a card or a guest's QR token as the first factor; the holder's PIN must follow.
    if (this.door.mode === 'card_and_pin') this.onCardNeedingPin(result, credential.kind === 'card' ? credential.value : null);
    else if (result.granted) this.grant(result);
    else this.deny(result);
    // A refused card or token, known or not, is a guess (see countsAsGuess): counted after its denial is recorded.
    if (countsAsGuess(result)) this.lockouts.failed('card');
  }

  /** Refused for the lockout in force, without a decision: the first is recorded, the rest summarized (ReaderLockouts). */
  private refuseForLockout(credential: Credential): void {
    const { kind, value } = credential;
    const reason = kind === 'pin' ? 'keypad_locked_out' : 'card_locked_out';
    if (this.lockouts.refusedDuringLockout(kind === 'pin' ? 'pin' : 'card', () => this.isGuess(kind, value))) {
      this.deny({ granted: false, reason, holders: [], door: this.door.uuid, kind, hint: credentialHint(value, kind) });
      return;
    }
    this.deps.metrics?.denied(reason); // recorded in the lockout's summary, counted one by one here
    this.showLockedOut();
  }

  /** A card or token past the reader's pace: refused as during a card lockout, without a lookup, and only counted. */
  private refuseForPace(): void {
    this.lockouts.refusedByPace();
    this.deps.metrics?.denied('card_locked_out');
    this.showLockedOut();
  }

  /**
   * Whether a card refused for the reader's lockout would have been refused anyway (a guess): only guesses keep
   * the lockout going, so a valid card tapped again and again during it never prolongs it (issue 32).
   */
  private isGuess(kind: CredentialKind, credential: string): boolean {
    try {
      return countsAsGuess(
        this.deps.checker.checkPresented(
          {
            door: this.door,
            kind,
            credential,
            now: this.deps.clock.wallNow(),
            lockdown: this.deps.lockdown?.() ?? false,
            cacheTooOld: this.deps.cacheTooOld?.() ?? false,
          },
          { name: false },
        ),
      );
    } catch {
      return true; // the cache cannot be read: the lockout runs its course
    }
  }

  private onCardNeedingPin(result: AccessResult, number: string | null): void {
    this.pinAfterCard.clear();
    if (!result.granted) return this.deny(result);
    this.pinAfterCard.begin(result, number);
    this.deps.logger.info({ hint: result.hint }, 'card accepted, waiting for PIN');
  }

  private onPin(result: AccessResult, pinDigits: string): void {
    if (this.door.mode === 'card_and_pin') {
      const waiting = this.pinAfterCard.take();
      if (!waiting) {
        return this.deny(withProps(result, { granted: false, reason: result.reason ?? 'not_authorized' }), { factor: 'card_first' });
      }
      const cardHint = waiting.card.hint;
      // The card's own number typed on the keypad is not a second factor (cards and PINs share one table).
      const matches =
        normalizeCardNumber(pinDigits, 'decimal') !== waiting.number &&
        result.holders.some(
          (h) =>
            h.reason === null && ('email_id' in h.holder ? waiting.emailIds.includes(h.holder.email_id) : waiting.linkIds.includes(h.holder.magic_link_id)),
        );
      if (matches) return this.grant(result, { kind: 'card_and_pin', card_hint: cardHint });
      this.lockouts.failed('pin');
      return this.deny(withProps(result, { granted: false, reason: result.reason ?? 'not_authorized' }), { factor: 'pin_mismatch', card_hint: cardHint });
    }
    if (result.granted) return this.grant(result);
    // A refused PIN, known or not, is a guess; one refused only for the lockdown or the clock is not (countsAsGuess).
    if (countsAsGuess(result)) this.lockouts.failed('pin');
    this.deny(result);
  }

  stop(): void {
    this.pinAfterCard.clear();
    this.lockouts.stop();
  }
}
