import type { Logger } from 'pino';
import type { Level } from '../core/relay.js';
import type { GpioDriver } from '../hardware/gpio.js';
import type { Component } from '../lifecycle.js';
import type { Timers } from '../util/clock.js';
import { DebouncedInput } from './debouncedInput.js';
import type { InputRecorder } from './inputFloods.js';
import type { PowerOptions } from './options.js';

export const POWER_EVENT_TYPES = ['power_lost', 'power_restored', 'battery_low', 'battery_ok'] as const;
export type PowerEventType = (typeof POWER_EVENT_TYPES)[number];

/** What `door-agent status` shows: null for an input that is not configured. */
export interface PowerState {
  mains: 'present' | 'lost' | null;
  battery: 'ok' | 'low' | null;
}

export interface PowerSupervisionDeps {
  gpio: GpioDriver;
  timers: Timers;
  logger: Logger;
  /** Records an agent-level audit event (no door), through the agent's flood guard (a mains line switched at will). */
  record: InputRecorder<PowerEventType>;
  /** The state changed (for door-agent status). */
  onState: (state: PowerState) => void;
}

/**
 * The agent's power inputs (docs/operations.md, "Supervision"): mains lost or restored, battery low or ok, each change one audit
 * event. A condition already present at start (the agent started on battery) is recorded with `at_start`.
 */
export class PowerSupervision implements Component {
  readonly name = 'power';
  private readonly inputs: DebouncedInput[] = [];
  private readonly state: PowerState = { mains: null, battery: null };

  constructor(
    private readonly options: PowerOptions,
    private readonly deps: PowerSupervisionDeps,
  ) {}

  start(): void {
    const { options } = this;
    if (options.mainsPin !== undefined) {
      // Idle (a simulated pin's first level): mains present, battery ok.
      const present = this.watch(options.mainsPin, options.mainsPresentLevel, options.mainsPresentLevel, (on) => this.mains(on, false));
      this.mains(present, true);
    }
    if (options.batteryLowPin !== undefined) {
      const low = this.watch(options.batteryLowPin, options.batteryLowLevel, options.batteryLowLevel === 1 ? 0 : 1, (on) => this.battery(on, false));
      this.battery(low, true);
    }
  }

  stop(): void {
    for (const input of this.inputs.splice(0)) input.close();
  }

  /** Opens a debounced input; returns whether it is at `activeLevel` now, and reports each settled change. */
  private watch(pin: number, activeLevel: Level, idleLevel: Level, onChange: (active: boolean) => void): boolean {
    const input = new DebouncedInput(this.deps.gpio, {
      pin,
      pull: this.options.pull,
      debounceMs: this.options.debounceMs,
      timers: this.deps.timers,
      idleLevel,
      onLevel: (level) => onChange(level === activeLevel),
    });
    this.inputs.push(input);
    return input.level === activeLevel;
  }

  private mains(present: boolean, atStart: boolean): void {
    this.state.mains = present ? 'present' : 'lost';
    this.deps.onState({ ...this.state });
    if (atStart && present) return; // the normal state at start: nothing to say
    this.deps.record(present ? 'power_restored' : 'power_lost', atStart ? { at_start: true } : {});
    if (present) this.deps.logger.info('mains power restored');
    else this.deps.logger.warn('mains power lost: running on battery');
  }

  private battery(low: boolean, atStart: boolean): void {
    this.state.battery = low ? 'low' : 'ok';
    this.deps.onState({ ...this.state });
    if (atStart && !low) return;
    this.deps.record(low ? 'battery_low' : 'battery_ok', atStart ? { at_start: true } : {});
    if (low) this.deps.logger.warn('battery low');
    else this.deps.logger.info('battery ok again');
  }
}
