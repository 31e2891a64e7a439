import type { Logger } from 'pino';
import type { GpioDriver, GpioOutput, Pull } from '../hardware/gpio.js';
import { relayLevel, type Level } from '../core/relay.js';
import type { PortFactory } from '../readers/serial/port.js';
import type { OsdpBuses } from '../readers/osdp/osdpBuses.js';
import type { Reader } from '../readers/reader.js';
import type { FileTransferOutcome, TransferProgress } from '../readers/reader.js';
import { createReader } from '../readers/registry.js';
import type { Component } from '../lifecycle.js';
import type { EventLog } from '../store/eventLog.js';
import type { Clock, Timers } from '../util/clock.js';
import type { AccessChecker } from './accessChecker.js';
import { DebouncedInput } from './debouncedInput.js';
import { DoorEmergency } from './doorEmergency.js';
import type { DoorEvents } from './doorEvents.js';
import { DoorRuntime } from './doorRuntime.js';
import { LockController, type LockSnapshot, type LockStatePersistence } from './lockController.js';
import type { DoorOptions } from './options.js';
import { localTimeIn } from '../core/schedule.js';
import type { ScheduleMemory, ScheduleState } from '../core/unlockSchedule.js';
import { SCHEDULE_UNLOCK_CAUSE, UnlockScheduler } from './unlockScheduler.js';
import { readerFeedback, type ReaderFeedbackHandle } from '../readers/readerFeedback.js';
import { EMERGENCY_CAUSE, type EmergencyEventType } from '../core/emergencyRelease.js';
import type { ChannelState } from '../readers/osdp/pacing.js';
import type { KeypadGuesses } from './keypadGuesses.js';
import type { DecisionMetrics } from './credentialFlow.js';
import type { Direction } from '../core/areas.js';
import type { ReaderOptions } from './options.js';
import type { DoorGate } from './doorGroups.js';
import { withProps } from '../core/objects.js';
import type { CommandTarget } from './doorCommand.js';
import { LearnSessions, type LearnListener } from './learnSessions.js';
import { DoorAgentError } from '../util/errors.js';

export interface DoorDeps {
  gpio: GpioDriver;
  /** The door's relay, already at its locked level. */
  relay: GpioOutput;
  persistence: LockStatePersistence;
  /** Available once the store has started. */
  events: () => EventLog;
  checker: () => AccessChecker;
  /** The agent's keypad lockout, shared by every door (available once the store has started). */
  keypad: () => KeypadGuesses;
  doorEvents: DoorEvents;
  clock: Clock;
  timers: Timers;
  clockSynchronized: () => boolean;
  /** `listener` runs when a clock that was not synchronized at start becomes so (the unlock schedule looks again). */
  onClockSynchronized?: (listener: () => void) => void;
  logger: Logger;
  openPort?: PortFactory;
  /** Opens keyboard readers (input devices); tests give a fake of the system. */
  openInputDevice?: PortFactory;
  /** The agent's OSDP buses (shared by the doors whose readers are on one line). */
  osdp?: OsdpBuses;
  /** A reader of the door came or went (`exit`: its exit reader). */
  onReaderConnection: (connected: boolean, direction: Direction) => void;
  /** An OSDP reader's secure channel as it is now (plain, pending, secure, failed), for status. */
  onReaderChannel?: (state: ChannelState, direction: Direction) => void;
  /** What a reader says it is (a PN532's firmware version), for status. */
  onReaderIdentity?: (text: string, direction: Direction) => void;
  /** Whether this door is in lockdown now (its own or the agent's). */
  lockdown?: () => boolean;
  /** Whether the cache is past access.maxCacheAgeHours now (the offline limit); absent: no limit. */
  cacheTooOld?: () => boolean;
  /** The holidays in force (configured and published). */
  holidays?: () => ReadonlySet<string>;
  /** agent.timezone: the unlock schedule's hours are local hours. */
  timezone?: string;
  /** Where the unlock schedule keeps its memory (first person in, a suspended run) across restarts. */
  scheduleMemory?: { load: () => ScheduleMemory | undefined; save: (memory: ScheduleMemory) => void };
  /** The agent's metrics of this door's decisions (with `metrics` configured). */
  metrics?: DecisionMetrics;
  /** The door's areas, interlock and two-person rule (door/doorGroups.ts); absent when it is in none. */
  gate?: DoorGate | null;
}

/**
 * One configured door at work: its lock controller (resuming a saved unlock), its runtime (decisions,
 * supervision), its inputs (contact, exit button) and its reader. Lock and position changes go out as
 * DoorEvents. Stopping ends the timers and drives the relay locked; the saved state stays for the next start.
 */
export class Door implements Component {
  readonly name: string;
  private controller: LockController | null = null;
  private runtime: DoorRuntime | null = null;
  private readonly inputs: DebouncedInput[] = [];
  /** The entry reader, and the exit reader of a door with one. */
  private readonly readers = new Map<Direction, Reader>();
  private scheduler: UnlockScheduler | null = null;
  private stopListening: (() => void) | null = null;
  private readonly feedback: ReaderFeedbackHandle[] = [];
  private halted = false;
  private emergency: DoorEmergency | null = null;
  /** Learn sessions of the control socket: a reader's taps shown to an installer, not decided. */
  private readonly learning = new LearnSessions();

  constructor(
    readonly options: DoorOptions,
    private readonly deps: DoorDeps,
  ) {
    this.name = `door ${options.uuid}`;
  }

  start(): void {
    const { options: door, deps } = this;
    const log = deps.logger;
    this.controller = new LockController(door, deps.relay, {
      clock: deps.clock,
      timers: deps.timers,
      persistence: deps.persistence,
      clockSynchronized: deps.clockSynchronized,
      onPersistError: (err) => log.error({ err }, 'cannot save the lock state: retrying (the relay has moved)'),
      onPersistRecovered: () => log.info('lock state saved again'),
      // A failed relay write is part of the published state (Home Assistant's JAMMED).
      onRelayFault: () => deps.doorEvents.emit('position', door.uuid),
      onChange: (snapshot, previous) => deps.doorEvents.emit('lock', door.uuid, snapshot, previous),
    });
    const controller = this.controller;
    const emergency = new DoorEmergency({
      controller,
      clock: deps.clock,
      logger: log,
      // Held by its schedule again only when its interlock allows it; else locked, and the schedule waits for the
      // gate (afterCleared).
      holdCause: () => (this.scheduler?.state().state === 'unlocked' && (deps.gate?.scheduleBlocker() ?? null) === null ? SCHEDULE_UNLOCK_CAUSE : null),
      afterCleared: () => this.scheduler?.evaluate(),
      record: (type, data) => this.recordEmergency(type, data),
      events: deps.events,
      doorUuid: door.uuid,
    });
    this.emergency = emergency;
    const lockdown = deps.lockdown ?? (() => false);
    // The schedule's own hold is not resumed: the schedule decides at its start (after the restart, maybe outside
    // its hours), so the relay never moves to unlocked only to be locked again. Nor is a release by the emergency
    // input: the input is read once the doors have started, and releases again if it is still active.
    const resumed = this.controller.resume(lockdown() ? 'lockdown' : null, (persisted) => {
      if (persisted.cause === EMERGENCY_CAUSE) {
        emergency.savedAtStop();
        return 'emergency release decided again at start';
      }
      return door.unlockSchedule && persisted.cause === SCHEDULE_UNLOCK_CAUSE ? 'unlock schedule decided again at start' : null;
    });
    if (resumed.state === 'UNLOCKED') log.info({ relockAt: resumed.relockAt }, 'resumed an unlock from before the restart');
    const runtime = new DoorRuntime(door, {
      controller: this.controller,
      checker: deps.checker(),
      keypad: deps.keypad(),
      events: deps.events(),
      clock: deps.clock,
      timers: deps.timers,
      logger: log,
      onDoorChange: () => deps.doorEvents.emit('position', door.uuid),
      onTamperChange: () => deps.doorEvents.emit('position', door.uuid),
      lockdown,
      cacheTooOld: deps.cacheTooOld,
      onFirstPerson: (holders) => this.scheduler?.onFirstPerson(holders),
      onAlarm: (type, data, at) => deps.doorEvents.emit('alarm', door.uuid, type, data, at),
      metrics: deps.metrics,
      gate: deps.gate,
    });
    this.runtime = runtime;
    if (door.unlockSchedule) {
      const scheduler = new UnlockScheduler({
        hours: door.unlockSchedule,
        firstPersonIn: door.firstPersonIn !== undefined,
        holidays: deps.holidays ?? (() => new Set()),
        lockdown,
        controller,
        localTime: localTimeIn(deps.timezone ?? 'UTC'),
        clock: deps.clock,
        clockSynchronized: deps.clockSynchronized,
        timers: deps.timers,
        logger: log.child({ part: 'unlock schedule' }),
        loadMemory: () => deps.scheduleMemory?.load(),
        saveMemory: (memory) => deps.scheduleMemory?.save(memory),
        record: (type, data) => runtime.audit(type, data),
        onStateChange: () => deps.doorEvents.emit('position', door.uuid),
        ...(deps.gate ? { interlockBlocker: () => deps.gate?.scheduleBlocker() ?? null } : {}),
      });
      this.scheduler = scheduler;
      deps.onClockSynchronized?.(() => scheduler.evaluate());
      this.stopListening = deps.doorEvents.on('lock', (uuid, snapshot) => {
        if (uuid === door.uuid) scheduler.onLockChange(snapshot);
      });
    }
    // Each input reports whether it is active (the door open, the button pressed, the enclosure open).
    const watch = (input: { pin: number; debounceMs: number; pull: Pull }, activeLevel: Level, onActive: (active: boolean) => void): boolean => {
      const debounced = new DebouncedInput(deps.gpio, {
        pin: input.pin,
        pull: input.pull,
        debounceMs: input.debounceMs,
        timers: deps.timers,
        idleLevel: activeLevel === 1 ? 0 : 1,
        onLevel: (level) => onActive(level === activeLevel),
      });
      this.inputs.push(debounced);
      return debounced.level === activeLevel;
    };
    if (door.contact) runtime.initialContact(watch(door.contact, door.contact.openLevel, (open) => runtime.onContact(open)));
    if (door.exitButton) watch(door.exitButton, door.exitButton.activeLevel, (pressed) => runtime.onExitButton(pressed));
    if (door.tamper)
      runtime.onTamper(
        watch(door.tamper, door.tamper.activeLevel, (open) => runtime.onTamper(open)),
        true,
      );
    // After the inputs: the schedule may unlock the door at once, and the exit button and contact must be watched.
    // In an interlock, once every door of it has started (a door not started blocks: its state is not known); then
    // it looks again whenever another door of the interlock changes (it waits for the gate as any unlock does).
    const gate = deps.gate;
    const scheduler = this.scheduler;
    if (gate) {
      if (scheduler)
        gate.whenInterlockStarted(() => {
          scheduler.start();
          gate.onPartnerChange(() => scheduler.evaluate());
        });
      gate.started();
    } else scheduler?.start();
    if (door.reader) this.startReader(door.reader, 'entry', runtime);
    if (door.exitReader) this.startReader(door.exitReader, 'exit', runtime);
  }

  /** One reader of the door: its taps go to the runtime in its direction, the decisions shown on it. */
  private startReader(options: ReaderOptions, direction: Direction, runtime: DoorRuntime): void {
    const { deps } = this;
    const door = this.options;
    const log = door.exitReader ? deps.logger.child({ reader: direction }) : deps.logger;
    deps.onReaderConnection(false, direction);
    // The reader type's one line in the registry (src/readers/registry.ts) makes it.
    const reader = createReader(options, {
      logger: log,
      clock: deps.clock,
      timers: deps.timers,
      gpio: deps.gpio,
      openPort: deps.openPort,
      openInputDevice: deps.openInputDevice,
      osdp: deps.osdp,
      events: {
        credential: (credential) => {
          if (!this.learning.take(credential, direction)) runtime.onCredential(credential, direction);
        },
        connection: (connected) => {
          deps.onReaderConnection(connected, direction);
          deps.doorEvents.emit('reader', door.uuid, this.readerConnected() === true);
        },
        noise: (summary) => runtime.onReaderNoise(summary),
        audit: (type, data) => runtime.readerStatus(type, door.exitReader ? withProps(data, { reader: direction }) : data),
        // Status shows each reader's secure channel.
        channel: (state) => deps.onReaderChannel?.(state, direction),
        identity: (text) => deps.onReaderIdentity?.(text, direction),
      },
    });
    this.readers.set(direction, reader);
    // The decision shown at the reader: its LED and buzzer lines (driven by the agent), then the device's own
    // feedback (a serial reader's reply line, an OSDP reader's LED and beeper over its bus).
    const lines = readerFeedback({ reader: options }, { gpio: deps.gpio, timers: deps.timers, logger: log });
    if (lines) this.feedback.push(lines);
    if (lines || reader.feedback) {
      runtime.setFeedback((kind) => {
        lines?.signal(kind);
        reader.feedback?.(kind);
      }, direction);
    }
    reader.start();
  }

  /**
   * The agent's emergency input (a door listed in `emergency.doors`): released while active; cleared, back to what
   * the door should be now: held by its unlock schedule when the schedule says so (its hours, holidays, lockdown,
   * first person in, a lock by hand), else locked (door/doorEmergency.ts). `atStart`: the input's first reading,
   * once the inputs are set up.
   */
  emergencyChanged(active: boolean, atStart = false): void {
    if (this.halted || !this.emergency) return; // stopping: the relay stays locked
    if (this.emergency.changed(active, atStart)) this.deps.doorEvents.emit('position', this.options.uuid);
  }

  /** An event of the emergency input at this door (an alarm: published at once on its alarm topic; a flood summarized). */
  recordEmergency(type: EmergencyEventType, data: Record<string, unknown> = {}): void {
    this.runtime?.emergency(type, data);
  }

  /** Whether the emergency input holds this door released now. */
  emergencyReleased(): boolean {
    return this.controller?.released ?? false;
  }

  /** The door's lockdown began or ended: an unlock in progress ends at once; the schedule pauses or resumes. */
  lockdownChanged(lockedDown: boolean): void {
    if (this.controller?.released) this.deps.logger.warn({ lockdown: lockedDown }, 'lockdown changed: the door stays released by the emergency input');
    else if (lockedDown && this.controller?.snapshot().state === 'UNLOCKED') this.controller.lock('lockdown');
    this.scheduler?.evaluate();
    this.deps.doorEvents.emit('position', this.options.uuid);
  }

  /** The holidays changed (published by the service): the schedule looks again. */
  holidaysChanged(): void {
    this.scheduler?.evaluate();
  }

  /** The unlock schedule's state now, null without a schedule. */
  scheduleState(): ScheduleState | null {
    return this.scheduler?.state() ?? null;
  }

  tamperState(): 'ON' | 'OFF' | null {
    return this.runtime?.tamperState() ?? null;
  }

  /** Ends the timers and drives the relay locked, at once (the first step of every stop). */
  halt(): void {
    this.halted = true;
    this.learning.clear();
    this.scheduler?.stop();
    for (const lines of this.feedback) lines.close();
    this.runtime?.stop();
    this.controller?.shutdown();
  }

  async stop(): Promise<void> {
    this.halt();
    this.stopListening?.();
    for (const reader of this.readers.values()) await reader.stop();
    for (const input of this.inputs.splice(0)) input.close();
  }

  lockState(): LockSnapshot | undefined {
    return this.controller?.snapshot();
  }

  /** The relay as it reads now, beside the level its lock state drives (an update's health check); null before start. */
  relayReading(): { level: Level; expected: Level } | null {
    const lock = this.controller?.snapshot();
    if (!lock) return null;
    return { level: this.deps.relay.read(), expected: relayLevel(lock.state, this.options.failMode, this.options.relay.activeLow) };
  }

  contactState(): 'OPEN' | 'CLOSED' | null {
    return this.runtime?.contactState() ?? null;
  }

  /** Whether the door's readers are all there now (opened, online on their bus); null for a door without a reader. */
  readerConnected(): boolean | null {
    if (!this.options.reader && !this.options.exitReader) return null;
    const wanted = (this.options.reader ? 1 : 0) + (this.options.exitReader ? 1 : 0);
    return this.readers.size === wanted && [...this.readers.values()].every((r) => r.connected);
  }

  /** The door of its interlock that keeps it from unlocking now (a remote unlock asks), or null. */
  interlockBlocker(): string | null {
    return this.deps.gate?.blocker() ?? null;
  }

  /** The door as a lock or unlock from outside sees it (door/doorCommand.ts): the control socket's commands. */
  commandTarget(): CommandTarget {
    return {
      door: this.options,
      controller: this.lock,
      lockdown: () => this.deps.lockdown?.() ?? false,
      interlock: () => this.interlockBlocker(),
      emergency: () => this.emergencyReleased(),
    };
  }

  /**
   * Opens a learn session on one of its readers: until the returned close, that reader's credentials go to
   * `listener` instead of the decision (the door's other reader decides as ever). Throws when the door has no such
   * reader, or a session is open on it already.
   */
  learn(direction: Direction, owner: string, listener: LearnListener): () => void {
    const name = `${this.options.name}'s ${direction} reader`;
    if (!this.readers.has(direction)) throw new DoorAgentError(`${this.options.name} has no ${direction} reader`);
    return this.learning.start(direction, owner, listener, name);
  }

  /**
   * Sends one of its readers a firmware file and confirms it installed (door/readerFirmware.ts): meanwhile that
   * reader is busy (shown offline, its taps not taken); the door's other reader decides as ever, the lock stays as it is.
   */
  transferReaderFile(
    direction: Direction,
    file: Buffer,
    options: { expectVersion?: string },
    onProgress: (progress: TransferProgress) => void,
  ): Promise<FileTransferOutcome> {
    const reader = this.readers.get(direction);
    const refused = (reason: string): Promise<FileTransferOutcome> => Promise.resolve({ ok: false, reason, version: null });
    if (!reader) return refused(`${this.options.name} has no ${direction} reader`);
    if (!reader.transferFile) return refused(`${this.options.name}'s ${direction} reader is not an OSDP reader: a reader's firmware goes over OSDP only`);
    return reader.transferFile(file, options, onProgress);
  }

  /** The lock controller, for remote commands (MQTT). */
  get lock(): LockController {
    if (!this.controller) throw new Error(`${this.name} is not started`);
    return this.controller;
  }
}
