import type { Logger } from 'pino';
import type { DoorOptions } from './options.js';
import * as supervision from '../core/doorSupervision.js';
import type { Clock, Timers } from '../util/clock.js';
import type { AuditRecorder } from './auditRecorder.js';
import type { InputRecorder } from './inputFloods.js';
import type { LockController } from './lockController.js';
import type { DoorGate } from './doorGroups.js';
import type { PassageRecord } from '../store/areaFacts.js';
import { withProps } from '../core/objects.js';

/** The contact's events (door_held_open too: a door held open is as repeatable as its opening). */
export const CONTACT_EVENTS = ['door_opened', 'door_closed', 'door_forced', 'door_held_open'] as const;

/** The inputs the supervision watches, each declared to the door's flood guard where the door is composed. */
export interface SupervisedInputs {
  contact: InputRecorder<(typeof CONTACT_EVENTS)[number]>;
  tamper: InputRecorder<'tamper'>;
  exitButton: InputRecorder<'exit_request'>;
}

export interface DoorSupervisionDeps {
  controller: LockController;
  /** What is not an input's: granted_not_opened, and an opening that carries an area's passages (never summarized). */
  recorder: AuditRecorder;
  inputs: SupervisedInputs;
  clock: Clock;
  timers: Timers;
  /** A child logger that already names the door. */
  logger: Logger;
  /** The contact changed (for the published door state). */
  onDoorChange?: () => void;
  /** The tamper input changed (for the published door state). */
  onTamperChange?: () => void;
  /** The door's areas and interlock (docs/areas.md): the exit button asks the interlock; an opening may be a passage. */
  gate?: DoorGate | null;
}

/** What granted_not_opened names of the grant: as access_granted does (kind and masked hint, never the number). */
export interface GrantSeen {
  kind: string;
  hint: string;
  card_hint?: string;
}

/**
 * The door's supervision: the exit button unlocks, the contact tells open from closed (forced, held open and
 * granted-but-not-opened raised, a door closed behind someone relocked), the tamper switch is watched; each
 * records its events.
 */
export class DoorSupervisionRuntime {
  private door_ = supervision.SUPERVISION_START;
  private timer: unknown = null;
  /** The grant granted_not_opened would name. */
  private lastGrant: GrantSeen | null = null;
  private openedWhileUnlocked = false;
  /** Read from the door's options each time: a change made at run time (fleet/liveApply.ts) holds from then on. */
  private get settings(): supervision.SupervisionSettings {
    return { unlockWindowMs: this.door.unlockSeconds * 1000, heldOpenMs: this.door.heldOpenSeconds * 1000 };
  }
  private tamper_: boolean | null = null;

  constructor(
    private readonly door: DoorOptions,
    private readonly deps: DoorSupervisionDeps,
  ) {}

  /** A grant is unlocking the door: its opening within the unlock window is not forced, and is expected. */
  granted(grant: GrantSeen): void {
    this.door_ = supervision.granted(this.door_, this.deps.clock.monoNow());
    this.lastGrant = grant;
    this.schedule();
  }

  onExitButton(pressed: boolean): void {
    if (!pressed) return;
    // A mantrap's exit button waits for the other door like a card does (the emergency release overrides it).
    const blocker = this.deps.gate?.blocker() ?? null;
    if (blocker !== null) {
      this.deps.inputs.exitButton('exit_request', { refused: 'interlock', blocked_by: blocker });
      this.deps.logger.info({ blockedBy: blocker }, 'exit button refused: another door of the interlock is unlocked or open');
      return;
    }
    this.door_ = supervision.authorized(this.door_, this.deps.clock.monoNow());
    this.deps.controller.unlock(this.door.unlockSeconds, supervision.EXIT_BUTTON_CAUSE, () => this.deps.inputs.exitButton('exit_request'));
  }

  /** The tamper switch: recorded and raised as an alarm when it opens, recorded when it closes again. */
  onTamper(active: boolean, atStart = false): void {
    if (active === this.tamper_) return;
    const first = this.tamper_ === null;
    this.tamper_ = active;
    this.deps.onTamperChange?.();
    if (first && !active) return; // closed at start: nothing to say
    this.deps.inputs.tamper('tamper', { state: active ? 'active' : 'cleared', ...(atStart ? { at_start: true } : {}) });
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
    this.schedule();
  }

  onContact(open: boolean): void {
    const lock = this.deps.controller.snapshot();
    const { state, events } = supervision.contactChanged(this.door_, open, { now: this.deps.clock.monoNow(), lock: lock.state }, this.settings);
    this.door_ = state;
    // Relock on close ends the unlocks this door granted itself (card, PIN, token, exit button): one passage per
    // release. A remote unlock_time was asked for explicitly by an operator and runs its course; holds stay.
    const timedUnlock = lock.state === 'UNLOCKED' && !lock.heldOpen && !lock.cause.startsWith('remote command');
    const relock = !open && this.openedWhileUnlocked && this.door.relockOnClose && timedUnlock;
    // The grants waiting for this opening pass now (an area's passages, recorded with the opening and synced at once).
    const passages = open && events.includes('door_opened') ? this.passages() : [];
    const record = () => {
      for (const type of events) {
        if (type === 'door_opened' && passages.length > 0) this.deps.recorder.record(type, { passages }, { durable: true });
        else if (type === 'granted_not_opened') this.deps.recorder.record(type);
        else this.deps.inputs.contact(type);
      }
    };
    if (!relock) record();
    if (events.length > 0) this.deps.onDoorChange?.();
    if (events.includes('door_forced')) this.deps.logger.warn('door forced open');
    if (open) this.openedWhileUnlocked = timedUnlock;
    else if (relock) {
      // Someone went through: relock now rather than leaving the door unlocked behind them. The relay first: the
      // door's events are recorded right after it has moved, before the lock change (door_closed, then locked).
      this.openedWhileUnlocked = false;
      this.deps.controller.lock(supervision.CLOSE_RELOCK_CAUSE, record);
    }
    this.schedule();
  }

  /** The passages of the grants that waited for this opening; never throws (the door's supervision goes on). */
  private passages(): PassageRecord[] {
    try {
      return this.deps.gate?.opened() ?? [];
    } catch (err) {
      this.deps.logger.error({ err }, 'cannot count the passages of this opening in its area');
      return [];
    }
  }

  /** One timer for whatever falls due next: door_held_open, granted_not_opened. */
  private schedule(): void {
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
    const due = supervision.nextDueAt(this.door_, this.settings);
    if (due === null) return;
    this.timer = this.deps.timers.setTimeout(
      () => {
        this.timer = null;
        const { state, events } = supervision.tick(this.door_, this.deps.clock.monoNow(), this.settings);
        this.door_ = state;
        for (const type of events) {
          if (type === 'door_held_open') {
            this.deps.inputs.contact(type, { seconds: this.door.heldOpenSeconds });
            this.deps.logger.warn('door held open');
          } else if (type === 'granted_not_opened') {
            this.deps.recorder.record(type, withProps(this.lastGrant ?? {}, { seconds: this.door.unlockSeconds }));
            this.deps.logger.info({ kind: this.lastGrant?.kind, hint: this.lastGrant?.hint }, 'access granted, but the door was not opened');
          }
        }
        this.schedule();
      },
      Math.max(0, due - this.deps.clock.monoNow()),
    );
  }

  stop(): void {
    if (this.timer !== null) this.deps.timers.clearTimeout(this.timer);
    this.timer = null;
  }
}
