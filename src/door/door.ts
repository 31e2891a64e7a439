import type { Logger } from 'pino';
import type { GpioDriver, GpioOutput } from '../hardware/gpio.js';
import type { ReaderFrame } from '../hardware/readerFrames.js';
import { SerialReader, type PortFactory } from '../hardware/serialReader.js';
import { WiegandReader } from '../hardware/wiegandReader.js';
import { inputDevicePorts } from '../hardware/inputDevicePort.js';
import type { OsdpBuses } from '../hardware/osdp/osdpBuses.js';
import { OsdpDoorReader } from './osdpDoorReader.js';
import type { Component } from '../lifecycle.js';
import type { EventLog } from '../store/eventLog.js';
import type { Clock, Timers } from '../util/clock.js';
import type { AccessChecker } from './accessChecker.js';
import { DebouncedInput } from './debouncedInput.js';
import type { DoorEvents } from './doorEvents.js';
import { DoorRuntime } from './doorRuntime.js';
import { LockController, type LockSnapshot, type LockStatePersistence } from './lockController.js';
import type { DoorOptions } from './options.js';

export interface DoorDeps {
  gpio: GpioDriver;
  /** The door's relay, already at its locked level. */
  relay: GpioOutput;
  persistence: LockStatePersistence;
  /** Available once the store has started. */
  events: () => EventLog;
  checker: () => AccessChecker;
  doorEvents: DoorEvents;
  clock: Clock;
  timers: Timers;
  clockSynchronized: () => boolean;
  logger: Logger;
  openPort?: PortFactory;
  /** Opens keyboard readers (input devices); tests give a fake of the system. */
  openInputDevice?: PortFactory;
  /** The agent's OSDP buses (shared by the doors whose readers are on one line). */
  osdp?: OsdpBuses;
  onReaderConnection: (connected: boolean) => void;
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
  private reader: SerialReader | WiegandReader | OsdpDoorReader | null = null;

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
      onChange: (snapshot, previous) => deps.doorEvents.emit('lock', door.uuid, snapshot, previous),
    });
    const resumed = this.controller.resume();
    if (resumed.state === 'UNLOCKED') log.info({ relockAt: resumed.relockAt }, 'resumed an unlock from before the restart');
    const runtime = new DoorRuntime(door, {
      controller: this.controller,
      checker: deps.checker(),
      events: deps.events(),
      clock: deps.clock,
      timers: deps.timers,
      logger: log,
      onDoorChange: () => deps.doorEvents.emit('position', door.uuid),
    });
    this.runtime = runtime;
    if (door.contact) {
      const { openLevel, pin, debounceMs, pull } = door.contact;
      const contact = new DebouncedInput(deps.gpio, {
        pin,
        pull,
        debounceMs,
        timers: deps.timers,
        idleLevel: openLevel === 1 ? 0 : 1,
        onLevel: (level) => runtime.onContact(level === openLevel),
      });
      this.inputs.push(contact);
      runtime.initialContact(contact.level === openLevel);
    }
    if (door.exitButton) {
      const { activeLevel, pin, debounceMs, pull } = door.exitButton;
      this.inputs.push(
        new DebouncedInput(deps.gpio, {
          pin,
          pull,
          debounceMs,
          timers: deps.timers,
          idleLevel: activeLevel === 1 ? 0 : 1,
          onLevel: (level) => runtime.onExitButton(level === activeLevel),
        }),
      );
    }
    if (door.reader) {
      deps.onReaderConnection(false);
      const common = {
        logger: log,
        clock: deps.clock,
        timers: deps.timers,
        onFrame: (frame: ReaderFrame) => runtime.onReaderFrame(frame),
        onConnectionChange: deps.onReaderConnection,
      };
      const reader = door.reader;
      if (reader.type === 'serial') this.reader = new SerialReader({ ...reader, ...common, openPort: deps.openPort });
      else if (reader.type === 'keyboard') {
        // A keyboard reader types lines as a serial one sends them: the same framing and reopening.
        this.reader = new SerialReader({ ...reader, ...common, baudRate: 0, format: 'lines', openPort: deps.openInputDevice ?? inputDevicePorts() });
      } else if (reader.type === 'wiegand') {
        this.reader = new WiegandReader({ ...reader, ...common, gpio: deps.gpio, onNoise: (summary) => runtime.onReaderNoise(summary) });
      } else {
        if (!deps.osdp) throw new Error('an OSDP reader needs the agent\'s OSDP buses');
        this.reader = new OsdpDoorReader(reader, deps.osdp, runtime, log, deps.onReaderConnection);
      }
      this.reader.start();
    }
  }

  /** Ends the timers and drives the relay locked, at once (the first step of every stop). */
  halt(): void {
    this.runtime?.stop();
    this.controller?.shutdown();
  }

  async stop(): Promise<void> {
    this.halt();
    await this.reader?.stop();
    for (const input of this.inputs.splice(0)) input.close();
  }

  lockState(): LockSnapshot | undefined {
    return this.controller?.snapshot();
  }

  contactState(): 'OPEN' | 'CLOSED' | null {
    return this.runtime?.contactState() ?? null;
  }

  /** The lock controller, for remote commands (MQTT). */
  get lock(): LockController {
    if (!this.controller) throw new Error(`${this.name} is not started`);
    return this.controller;
  }
}
