import type { Logger } from 'pino';
import type { DoorOptions, FeedbackKind } from './options.js';
import type { KeypadGuesses } from './keypadGuesses.js';
import type { NoiseSummary } from '../readers/noiseReporter.js';
import { READER_AUDIT_TYPES, type Credential, type ReaderAuditType } from '../readers/reader.js';
import type { EventLog, EventType } from '../store/eventLog.js';
import type { Clock, Timers } from '../util/clock.js';
import type { AccessChecker } from './accessChecker.js';
import { AuditRecorder, type AlarmType } from './auditRecorder.js';
import { CredentialFlow, type DecisionMetrics } from './credentialFlow.js';
import { CONTACT_EVENTS, DoorSupervisionRuntime } from './doorSupervisionRuntime.js';
import type { InputRecorder } from './inputFloods.js';
import type { LockController } from './lockController.js';
import type { ScheduleEventType } from './unlockScheduler.js';
import { EMERGENCY_EVENT_TYPES, type EmergencyEventType } from '../core/emergencyRelease.js';
import type { Direction } from '../core/areas.js';
import type { DoorGate } from './doorGroups.js';

export type { AlarmType } from './auditRecorder.js';

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
  /** The cache is past access.maxCacheAgeHours (asked at each decision); absent: no offline limit. */
  cacheTooOld?: () => boolean;
  /** The agent's metrics of this door's decisions (with `metrics` configured). */
  metrics?: DecisionMetrics;
  /** The door's areas, interlock and two-person rule (docs/areas.md); absent when it is in none. */
  gate?: DoorGate | null;
}

/**
 * One door at work, in two parts sharing one audit recorder: the credential flow (credentials become decisions,
 * grants unlock the relay, the reader shows the outcome) and the supervision (exit button, contact, tamper).
 */
export class DoorRuntime {
  private readonly recorder: AuditRecorder;
  /** The door's readers' own state (online, offline, tamper, power): a reader can be unplugged and plugged at will. */
  readonly readerStatus: InputRecorder<ReaderAuditType>;
  /** The agent's fire alarm input at this door (door.ts), and its wiring. */
  readonly emergency: InputRecorder<EmergencyEventType>;
  private readonly readerNoise: InputRecorder<'reader_noise'>;
  /** One credential flow per reader (entry, exit): each its own card lockout, card_and_pin wait and feedback. */
  private readonly credentials = new Map<Direction, CredentialFlow>();
  private readonly supervision: DoorSupervisionRuntime;

  constructor(door: DoorOptions, deps: DoorRuntimeDeps) {
    this.recorder = new AuditRecorder({
      door: door.uuid,
      events: deps.events,
      clock: deps.clock,
      timers: deps.timers,
      logger: deps.logger,
      onAlarm: deps.onAlarm,
      current: () => ({ door: this.contactState(), tamper: this.tamperState() }),
    });
    // Every input an attacker (or a bad wire) can toggle at this door declares itself to the door's flood guard here.
    const input = <T extends EventType>(name: string, events: readonly T[]) => this.recorder.input(name, events);
    this.readerStatus = input('reader status', READER_AUDIT_TYPES);
    this.readerNoise = input('reader noise', ['reader_noise']);
    this.emergency = input('emergency input', EMERGENCY_EVENT_TYPES);
    const { controller, clock, timers, logger } = deps;
    this.supervision = new DoorSupervisionRuntime(door, {
      controller,
      recorder: this.recorder,
      inputs: { contact: input('contact', CONTACT_EVENTS), tamper: input('tamper switch', ['tamper']), exitButton: input('exit button', ['exit_request']) },
      clock,
      timers,
      logger,
      onDoorChange: deps.onDoorChange,
      onTamperChange: deps.onTamperChange,
      gate: deps.gate,
    });
    const directions: Direction[] = door.exitReader ? ['entry', 'exit'] : ['entry'];
    for (const direction of directions) {
      this.credentials.set(
        direction,
        new CredentialFlow(door, {
          controller,
          checker: deps.checker,
          recorder: this.recorder,
          clock,
          timers,
          logger: door.exitReader ? logger.child({ reader: direction }) : logger,
          lockdown: deps.lockdown,
          onFirstPerson: deps.onFirstPerson,
          keypad: deps.keypad,
          cacheTooOld: deps.cacheTooOld,
          onGranted: (grant) => this.supervision.granted(grant),
          metrics: deps.metrics,
          direction,
          recordsDirection: door.exitReader !== undefined,
          gate: deps.gate,
        }),
      );
    }
  }

  /** A credential from one of the door's readers (the entry reader unless said), normalized there (src/readers/reader.ts). */
  onCredential(credential: Credential, direction: Direction = 'entry'): void {
    this.credentials.get(direction)?.onCredential(credential);
  }

  /** How the reader of `direction` shows a decision. */
  setFeedback(feedback: ((kind: FeedbackKind) => void) | null, direction: Direction = 'entry'): void {
    this.credentials.get(direction)?.setFeedback(feedback);
  }

  /**
   * Something else about this door for the audit log (the unlock schedule's), recorded as the door's own events
   * are: a failing disk is logged, never thrown at the caller.
   */
  audit(type: ScheduleEventType, data: Record<string, unknown> = {}): void {
    this.recorder.record(type, data);
  }

  /** Frames the reader dropped (noise, parity, a bounce), summed: audited, never decided. */
  onReaderNoise(summary: NoiseSummary): void {
    this.readerNoise('reader_noise', { frames: summary.count, bits: summary.units, reasons: summary.reasons });
  }

  onExitButton(pressed: boolean): void {
    this.supervision.onExitButton(pressed);
  }

  /** The tamper switch: recorded and raised as an alarm when it opens, recorded when it closes again. */
  onTamper(active: boolean, atStart = false): void {
    this.supervision.onTamper(active, atStart);
  }

  tamperState(): 'ON' | 'OFF' | null {
    return this.supervision.tamperState();
  }

  contactState(): 'OPEN' | 'CLOSED' | null {
    return this.supervision.contactState();
  }

  /** The contact's first reading at start: no events, but a door already open is timed for held-open. */
  initialContact(open: boolean): void {
    this.supervision.initialContact(open);
  }

  onContact(open: boolean): void {
    this.supervision.onContact(open);
  }

  stop(): void {
    for (const flow of this.credentials.values()) flow.stop();
    this.recorder.flush();
    this.supervision.stop();
  }
}
