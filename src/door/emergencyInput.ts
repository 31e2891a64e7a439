import type { Logger } from 'pino';
import { readEmergency, releases, wiringFault, type EmergencyEventType, type EmergencyReading } from '../core/emergencyRelease.js';
import type { Level } from '../core/relay.js';
import type { GpioDriver } from '../hardware/gpio.js';
import type { Component } from '../lifecycle.js';
import type { EmergencyRuntime } from '../store/runtimeStatus.js';
import type { Clock, Timers } from '../util/clock.js';
import { DebouncedInput } from './debouncedInput.js';
import type { EmergencyOptions } from './options.js';

/** A door the input releases (door.ts: the doors listed in emergency.doors). */
export interface ReleasedDoor {
  emergencyChanged(active: boolean, atStart?: boolean): void;
  recordEmergency(type: EmergencyEventType, data?: Record<string, unknown>): void;
}

/**
 * How long the two contacts must disagree before it is a wiring fault: a form-C relay passes through "both open"
 * as it changes over, and each input settles on its own debounce. The doors are released at once meanwhile.
 * @internal
 */
export const WIRING_SETTLE_MS = 1000;

/** The log lines of the input's changes (the demo's narrator tells them). */
export const EMERGENCY_ACTIVE_LOG = 'emergency input active: its doors are released';
export const EMERGENCY_NORMAL_LOG = 'emergency input back to normal: its doors went back to what they should be now';

export interface EmergencyInputDeps {
  options: EmergencyOptions;
  gpio: GpioDriver;
  /** The doors it releases (started before this component). */
  doors: readonly ReleasedDoor[];
  clock: Clock;
  timers: Timers;
  logger: Logger;
  /** The input's state changed (for `door-agent status`). */
  onStatus?: (status: EmergencyRuntime) => void;
}

/**
 * The agent's fire alarm input (issue 30 item 1): read once the inputs are set up (a start during a fire releases
 * at once), then on every settled change. Any reading but normal releases the listed doors; normal again sends
 * each back to what it should be now (door.ts). With a confirm input, contacts that disagree for WIRING_SETTLE_MS
 * are reported once as emergency_wiring, and emergency_wiring_cleared once they agree again.
 */
export class EmergencyInput implements Component {
  readonly name = 'emergency input';
  private pin: DebouncedInput | null = null;
  private confirm: DebouncedInput | null = null;
  private reading: EmergencyReading = 'normal';
  private active = false;
  private since = 0;
  private reported: 'open' | 'short' | null = null;
  private pending: { fault: 'open' | 'short' | null; timer: unknown } | null = null;

  constructor(private readonly deps: EmergencyInputDeps) {}

  start(): void {
    const { options, gpio, timers } = this.deps;
    const open = (pin: number, idleLevel: Level) =>
      new DebouncedInput(gpio, { pin, pull: options.pull, debounceMs: options.debounceMs, timers, idleLevel, onLevel: () => this.evaluate(false) });
    // Normal: the loop closed (the level that is not the alarm's), the confirm contact open (the alarm's level).
    this.pin = open(options.pin, options.activeLevel === 1 ? 0 : 1);
    if (options.confirmPin !== null) this.confirm = open(options.confirmPin, options.activeLevel);
    this.evaluate(true);
  }

  stop(): void {
    this.clearPending();
    this.pin?.close();
    this.confirm?.close();
    this.pin = this.confirm = null;
  }

  private evaluate(atStart: boolean): void {
    if (!this.pin) return;
    const { logger, clock } = this.deps;
    const reading = readEmergency({ pin: this.pin.level, confirm: this.confirm?.level ?? null }, this.deps.options.activeLevel);
    const changed = atStart || reading !== this.reading;
    if (changed) {
      this.reading = reading;
      this.since = clock.wallNow();
    }
    const active = releases(reading);
    if (atStart || active !== this.active) {
      this.active = active;
      for (const door of this.deps.doors) door.emergencyChanged(active, atStart);
      if (active) logger.warn({ reading, doors: this.deps.doors.length }, EMERGENCY_ACTIVE_LOG);
      else if (!atStart) logger.warn(EMERGENCY_NORMAL_LOG);
    }
    this.watchWiring();
    if (changed) this.publish();
  }

  /** A fault (or its end) counts once it has held WIRING_SETTLE_MS; the release does not wait for it. */
  private watchWiring(): void {
    const fault = wiringFault(this.reading);
    if (fault === this.reported) return this.clearPending();
    if (this.pending?.fault === fault) return;
    this.clearPending();
    const timer = this.deps.timers.setTimeout(() => {
      this.pending = null;
      this.settleWiring();
    }, WIRING_SETTLE_MS);
    this.pending = { fault, timer };
  }

  private settleWiring(): void {
    const fault = wiringFault(this.reading);
    if (fault === this.reported) return;
    const { logger } = this.deps;
    const was = this.reported;
    this.reported = fault;
    if (fault === null) {
      logger.info({ fault: was }, 'emergency input wiring consistent again');
      for (const door of this.deps.doors) door.recordEmergency('emergency_wiring_cleared', { fault: was });
    } else {
      logger.error(
        { fault },
        fault === 'open'
          ? 'emergency input wiring fault: both contacts read open (the common wire cut?); the doors stay released'
          : 'emergency input wiring fault: both contacts read closed (a short, or a welded contact?); the doors stay released',
      );
      for (const door of this.deps.doors) door.recordEmergency('emergency_wiring', { fault });
    }
    this.publish();
  }

  private clearPending(): void {
    if (this.pending) this.deps.timers.clearTimeout(this.pending.timer);
    this.pending = null;
  }

  private publish(): void {
    this.deps.onStatus?.({
      reading: this.reading,
      active: this.active,
      since: new Date(this.since).toISOString(),
      wiringFault: this.reported,
    });
  }
}
