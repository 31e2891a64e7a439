import type { Logger } from 'pino';
import type { DoorOptions, FeedbackKind } from './options.js';
import { normalizeCardNumber, type CredentialKind } from '../core/credentials.js';
import * as supervision from '../core/doorSupervision.js';
import { PIN_AFTER_CARD_MS, countsAsGuess, type PendingCard } from '../core/keypad.js';
import { ReaderLockouts } from './readerLockouts.js';
import type { KeypadGuesses } from './keypadGuesses.js';
import { InputFloods } from './inputFloods.js';
import type { NoiseSummary } from '../readers/noiseReporter.js';
import type { Credential } from '../readers/reader.js';
import type { EventLog, EventType } from '../store/eventLog.js';
import { ALARM_TYPES } from '../store/eviction.js';
import type { Clock, Timers } from '../util/clock.js';
import type { AccessChecker, AccessResult } from './accessChecker.js';
import type { LockController } from './lockController.js';
import type { ScheduleEventType } from './unlockScheduler.js';

export interface DoorRuntimeDeps {
  controller: LockController;
  checker: AccessChecker;
  events: EventLog;
  clock: Clock;
  timers: Timers;
  /** A child logger that already names the door. */
  logger: Logger;
  /** The contact changed (for the published door state). */
  onDoorChange?: () => void;
  /** Whether the door is in lockdown now (its own or the agent's). */
  lockdown?: () => boolean;
  /** A member of the door's firstPersonIn was granted (its unlock schedule may start). */
  onFirstPerson?: (holders: ReadonlyArray<Record<string, unknown>>) => void;
  /** An alarm was recorded (duress, tamper, forced, held open): published at once, beside the outbox. */
  onAlarm?: (type: AlarmType, data: Record<string, unknown>, at: number) => void;
  /** The tamper input changed (for the published door state). */
  onTamperChange?: () => void;
  /** The agent's wrong-PIN counter and keypad lockout, shared by all its doors. */
  keypad: KeypadGuesses;
}

/** Events that also go out at once on the door's alarm topic. */
/** The event types raised as alarms: one list (store/eviction.ts), which eviction also keeps the last of. */
export type AlarmType = (typeof ALARM_TYPES)[number];
const ALARMS: ReadonlySet<string> = new Set<string>(ALARM_TYPES);

/**
 * One door at work: reader frames become decisions, grants unlock the relay, the exit button and the door
 * contact are supervised, and every decision and door event is recorded (after the relay has acted).
 */
export class DoorRuntime {
  private readonly lockouts: ReaderLockouts;
  /** card_and_pin: the card accepted, waiting for a PIN of one of its users or guest links. */
  private pending: (PendingCard & { linkIds: readonly string[] }) | null = null;
  private pendingTimer: unknown = null;
  private pendingCard: AccessResult | null = null;
  private pendingNumber: string | null = null;
  private door_ = supervision.SUPERVISION_START;
  private heldTimer: unknown = null;
  private openedWhileUnlocked = false;
  private readonly settings: supervision.SupervisionSettings;
  /** The reader shows the decision (LED and buzzer lines, a reply line, OSDP); absent for readers without feedback. */
  private feedback: ((kind: FeedbackKind) => void) | null = null;
  private tamper_: boolean | null = null;
  private readonly floods: InputFloods;

  constructor(
    private readonly door: DoorOptions,
    private readonly deps: DoorRuntimeDeps,
  ) {
    this.settings = { unlockWindowMs: door.unlockSeconds * 1000, heldOpenMs: door.heldOpenSeconds * 1000 };
    this.lockouts = new ReaderLockouts({
      keypad: deps.keypad,
      card: door.cardLockout,
      clock: deps.clock,
      timers: deps.timers,
      logger: deps.logger,
      record: (type, data) => this.record(type, data),
    });
    this.floods = new InputFloods({
      timers: deps.timers,
      record: (type, data) => this.write(type, data, deps.clock.wallNow()),
      current: () => ({ door: this.contactState(), tamper: this.tamperState() }),
    });
  }

  private record(type: EventType, data: Record<string, unknown> = {}): void {
    const at = this.deps.clock.wallNow();
    if (!this.floods.admit(type, at, data)) return; // a flood (contact, tamper, reader): counted in its next summary
    this.write(type, data, at);
  }

  private write(type: EventType, data: Record<string, unknown>, at: number): void {
    let written: { id: string; seq: number } | null = null;
    try {
      written = this.deps.events.append({ type, door: this.door.uuid, at, data });
    } catch (err) {
      // The door has already acted; a failing disk must not stop it. The log line keeps the trace.
      this.deps.logger.error({ err, type }, 'cannot record event');
    }
    // The alarm names its audit event when it was written at once (a busy database writes it a little later).
    if (ALARMS.has(type)) this.deps.onAlarm?.(type as AlarmType, written ? { ...data, id: written.id, seq: written.seq } : data, at);
  }

  private decisionData(result: AccessResult, extra: Record<string, unknown> = {}) {
    return {
      kind: result.kind,
      hint: result.hint,
      reason: result.reason,
      holders: result.holders.map((h) => ({ ...h.holder, reason: h.reason })),
      ...(result.level !== undefined ? { level: result.level } : {}),
      ...(result.who !== undefined ? { who: result.who } : {}),
      ...extra,
    };
  }

  setFeedback(feedback: ((kind: FeedbackKind) => void) | null): void {
    this.feedback = feedback;
  }

  /**
   * Something else about this door for the audit log (a reader's own state, the unlock schedule's first person
   * in), recorded as the door's own events are: a failing disk is logged, never thrown at the caller.
   */
  audit(type: 'reader_online' | 'reader_offline' | 'reader_tamper' | 'reader_power' | ScheduleEventType, data: Record<string, unknown> = {}): void {
    this.record(type, data);
  }

  private grant(result: AccessResult, extra: Record<string, unknown> = {}): void {
    const now = this.deps.clock.monoNow();
    this.door_ = supervision.authorized(this.door_, now);
    // Logged once the relay has moved but before the lock change is announced: a log reads "granted", then "unlocked".
    this.deps.controller.unlock(this.door.unlockSeconds, `${result.kind} ${result.hint}`, () => {
      this.record('access_granted', this.decisionData(result, extra));
      this.deps.logger.info({ kind: result.kind, hint: result.hint }, 'access granted');
    });
    // Under duress the door behaves exactly as usual: the alarm is silent.
    this.feedback?.('grant');
    const holders = result.holders.filter((h) => h.reason === null).map((h) => ({ ...h.holder }));
    if (result.firstPerson) this.deps.onFirstPerson?.(holders);
  }

  /** A duress PIN: the alarm (audit event and the alarm topic) names the PIN's holders, never the digits. */
  private raiseDuress(result: AccessResult): void {
    const holders = result.duressHolders ?? [];
    this.record('duress', { kind: result.kind, hint: result.hint, holders });
    this.deps.logger.warn({ holders }, 'duress PIN used');
  }

  private deny(result: AccessResult, extra: Record<string, unknown> = {}): void {
    this.record('access_denied', this.decisionData(result, extra));
    this.deps.logger.info({ kind: result.kind, hint: result.hint, reason: result.reason }, 'access denied');
    const reason = result.reason;
    this.feedback?.(reason === 'lockdown' ? 'lockdown' : reason === 'keypad_locked_out' || reason === 'card_locked_out' ? 'lockedOut' : 'deny');
  }

  private check(kind: CredentialKind, credential: string): AccessResult | null {
    try {
      return this.deps.checker.checkPresented({
        door: this.door,
        kind,
        credential,
        now: this.deps.clock.wallNow(),
        keypadLockedOut: this.lockouts.isLockedOut('pin'),
        cardLockedOut: this.lockouts.isLockedOut('card'),
        lockdown: this.deps.lockdown?.() ?? false,
      });
    } catch (err) {
      // The door stays locked and the daemon keeps running (a restart would not mend the file).
      this.deps.logger.error({ err, kind }, err instanceof Error ? err.message : 'the cache cannot be read');
      this.record('access_denied', { kind, reason: 'cache_unreadable', holders: [] });
      return null;
    }
  }

  /** A credential from the door's reader, normalized there (src/readers/reader.ts). */
  onCredential(credential: Credential): void {
    const result = this.check(credential.kind, credential.value);
    if (result === null) return;
    // The silent alarm first, whatever the decision, before anything that may fail (the relay, the other events).
    if (result.duress) this.raiseDuress(result);
    if (result.reason === 'keypad_locked_out' || result.reason === 'card_locked_out') {
      const which = result.reason === 'keypad_locked_out' ? 'pin' : 'card';
      if (this.lockouts.refusedDuringLockout(which, () => this.isGuess(credential.kind, credential.value))) this.deny(result);
      return;
    }
    if (credential.kind === 'pin') return this.onPin(result, credential.value);
    // A card_and_pin door takes a card or a guest's QR token as the first factor; the holder's PIN must follow.
    if (this.door.mode === 'card_and_pin') {
      this.onCardNeedingPin(result);
      if (this.pending) this.pendingNumber = credential.kind === 'card' ? credential.value : null;
    } else if (result.granted) this.grant(result);
    else this.deny(result);
    // A refused card or token, known or not, is a guess (see countsAsGuess): counted after its denial is recorded.
    if (countsAsGuess(result)) this.lockouts.failed('card');
  }

  /**
   * Whether a card refused for the reader's lockout would have been refused anyway (a guess): only guesses keep
   * the lockout going, so a valid card tapped again and again during it never prolongs it (issue 32).
   */
  private isGuess(kind: CredentialKind, credential: string): boolean {
    try {
      return countsAsGuess(this.deps.checker.checkPresented({ door: this.door, kind, credential, now: this.deps.clock.wallNow(), lockdown: this.deps.lockdown?.() ?? false }));
    } catch {
      return true; // the cache cannot be read: the lockout runs its course
    }
  }

  private onCardNeedingPin(result: AccessResult): void {
    this.clearPending();
    if (!result.granted) return this.deny(result);
    // Users and guest links alike must add their PIN (a link without one was refused: no_second_factor).
    const emailIds = result.holders.flatMap((h) => ('email_id' in h.holder && h.reason === null ? [h.holder.email_id] : []));
    const linkIds = result.holders.flatMap((h) => ('magic_link_id' in h.holder && h.reason === null ? [h.holder.magic_link_id] : []));
    this.pending = { emailIds, linkIds, hint: result.hint, expiresAt: this.deps.clock.monoNow() + PIN_AFTER_CARD_MS };
    this.pendingCard = result;
    this.pendingTimer = this.deps.timers.setTimeout(() => this.expirePending(), PIN_AFTER_CARD_MS);
    this.deps.logger.info({ hint: result.hint }, 'card accepted, waiting for PIN');
  }

  /** The card's wait for its PIN is over: recorded once, whether the timer or a late PIN noticed first. */
  private expirePending(): void {
    const card = this.pendingCard;
    this.clearPending();
    if (card) this.deny({ ...card, granted: false, reason: 'not_authorized' }, { factor: 'pin_timeout' });
  }

  private onPin(result: AccessResult, pinDigits: string): void {
    if (this.pending && this.deps.clock.monoNow() >= this.pending.expiresAt) this.expirePending();
    const pending = this.pending;
    if (this.door.mode === 'card_and_pin') {
      if (!pending) {
        return this.deny({ ...result, granted: false, reason: result.reason ?? 'not_authorized' }, { factor: 'card_first' });
      }
      const cardNumber = this.pendingNumber;
      this.clearPending();
      // The card's own number typed on the keypad is not a second factor (cards and PINs share one table).
      const matches =
        normalizeCardNumber(pinDigits, 'decimal') !== cardNumber &&
        result.holders.some(
          (h) => h.reason === null && ('email_id' in h.holder ? pending.emailIds.includes(h.holder.email_id) : pending.linkIds.includes(h.holder.magic_link_id)),
        );
      if (matches) return this.grant(result, { kind: 'card_and_pin', card_hint: pending.hint });
      this.lockouts.failed('pin');
      return this.deny({ ...result, granted: false, reason: result.reason ?? 'not_authorized' }, { factor: 'pin_mismatch', card_hint: pending.hint });
    }
    if (result.granted) return this.grant(result);
    // A refused PIN, known or not, is a guess; one refused only for the lockdown or the clock is not (countsAsGuess).
    if (countsAsGuess(result)) this.lockouts.failed('pin');
    this.deny(result);
  }

  private clearPending(): void {
    if (this.pendingTimer !== null) this.deps.timers.clearTimeout(this.pendingTimer);
    this.pendingTimer = null;
    this.pending = null;
    this.pendingCard = null;
    this.pendingNumber = null;
  }

  /** Frames the reader dropped (noise, parity, a bounce), summed over a minute at most: audited, never decided. */
  onReaderNoise(summary: NoiseSummary): void {
    this.record('reader_noise', { frames: summary.count, bits: summary.units, reasons: summary.reasons });
  }

  onExitButton(pressed: boolean): void {
    if (!pressed) return;
    this.door_ = supervision.authorized(this.door_, this.deps.clock.monoNow());
    this.deps.controller.unlock(this.door.unlockSeconds, 'exit button', () => this.record('exit_request'));
  }

  /** The tamper switch: recorded and raised as an alarm when it opens, recorded when it closes again. */
  onTamper(active: boolean, atStart = false): void {
    if (active === this.tamper_) return;
    const first = this.tamper_ === null;
    this.tamper_ = active;
    this.deps.onTamperChange?.();
    if (first && !active) return; // closed at start: nothing to say
    this.record('tamper', { state: active ? 'active' : 'cleared', ...(atStart ? { at_start: true } : {}) });
    if (active) this.deps.logger.warn('tamper switch open');
    else this.deps.logger.info('tamper switch closed again');
  }

  /** The tamper switch, null without one (or before its first reading). */
  tamperState(): 'ON' | 'OFF' | null {
    return this.tamper_ === null ? null : this.tamper_ ? 'ON' : 'OFF';
  }

  /** The door position from the contact, null without a contact (or before its first reading). */
  contactState(): 'OPEN' | 'CLOSED' | null {
    return this.door_.open === null ? null : this.door_.open ? 'OPEN' : 'CLOSED';
  }

  /** The contact's first reading at start: no events, but a door already open is timed for held-open. */
  initialContact(open: boolean): void {
    this.door_ = supervision.initialContact(this.door_, open, this.deps.clock.monoNow());
    this.scheduleHeldOpen();
  }

  onContact(open: boolean): void {
    const lock = this.deps.controller.snapshot();
    const { state, events } = supervision.contactChanged(
      this.door_,
      open,
      { now: this.deps.clock.monoNow(), lock: lock.state },
      this.settings,
    );
    this.door_ = state;
    for (const type of events) this.record(type);
    if (events.length > 0) this.deps.onDoorChange?.();
    if (events.includes('door_forced')) this.deps.logger.warn('door forced open');
    // Relock on close ends the unlocks this door granted itself (card, PIN, token, exit button): one passage per
    // release. A remote unlock_time was asked for explicitly by an operator and runs its course; holds stay.
    const timedUnlock = lock.state === 'UNLOCKED' && !lock.heldOpen && !lock.cause.startsWith('remote command');
    if (open) this.openedWhileUnlocked = timedUnlock;
    else if (this.openedWhileUnlocked && this.door.relockOnClose && timedUnlock) {
      // Someone went through: relock now rather than leaving the door unlocked behind them.
      this.openedWhileUnlocked = false;
      this.deps.controller.lock('door closed');
    }
    this.scheduleHeldOpen();
  }

  private scheduleHeldOpen(): void {
    if (this.heldTimer !== null) this.deps.timers.clearTimeout(this.heldTimer);
    this.heldTimer = null;
    const due = supervision.heldOpenDueAt(this.door_, this.settings);
    if (due === null) return;
    this.heldTimer = this.deps.timers.setTimeout(() => {
      this.heldTimer = null;
      const { state, events } = supervision.tick(this.door_, this.deps.clock.monoNow(), this.settings);
      this.door_ = state;
      for (const type of events) this.record(type, { seconds: this.door.heldOpenSeconds });
      if (events.length > 0) this.deps.logger.warn('door held open');
      this.scheduleHeldOpen();
    }, Math.max(0, due - this.deps.clock.monoNow()));
  }

  stop(): void {
    this.clearPending();
    this.lockouts.stop();
    this.floods.flush();
    if (this.heldTimer !== null) this.deps.timers.clearTimeout(this.heldTimer);
    this.heldTimer = null;
  }
}
