import type { Logger } from 'pino';
import { relayLevel, type Level } from '../core/relay.js';
import type { GpioDriver, GpioOutput } from '../hardware/gpio.js';
import type { DoorOptions } from './options.js';

const lockedLevel = (door: DoorOptions): Level => relayLevel('LOCKED', door.failMode, door.relay.activeLow);

/**
 * Every door's relay. Opened first thing at start, each already at its locked level; `lockAll` drives them
 * all locked again (first at every stop, on every failure path). One error policy: a relay write that fails on
 * any path (reader, exit button, timer, MQTT, resume) drives every relay locked and calls `onFailure`, whose
 * job is to end the process so that systemd restarts the agent.
 */
export class RelayBank {
  private readonly relays: Array<{ door: DoorOptions; raw: GpioOutput; guarded: GpioOutput }> = [];

  constructor(
    private readonly gpio: GpioDriver,
    private readonly logger: Logger,
    private readonly onFailure: (err: unknown) => void,
  ) {}

  /** Claims each door's relay at its locked level, in configuration order. */
  open(doors: readonly DoorOptions[]): void {
    for (const door of doors) {
      const raw = this.gpio.openOutput(door.relay.pin, lockedLevel(door));
      this.relays.push({ door, raw, guarded: this.guard(door, raw) });
    }
  }

  /** The relay a door drives (guarded by the error policy). */
  relayOf(doorUuid: string): GpioOutput {
    const relay = this.relays.find((r) => r.door.uuid === doorUuid);
    if (!relay) throw new Error(`no relay for door ${doorUuid}`);
    return relay.guarded;
  }

  /** Every relay to its locked level, synchronously; a failing one is logged and the others still locked. */
  lockAll(): void {
    for (const { door, raw } of this.relays) {
      try {
        raw.write(lockedLevel(door));
      } catch (err) {
        this.logger.error({ err, door: door.uuid }, 'cannot drive relay to locked');
      }
    }
  }

  private guard(door: DoorOptions, raw: GpioOutput): GpioOutput {
    return {
      pin: raw.pin,
      read: () => raw.read(),
      write: (level) => {
        try {
          raw.write(level);
        } catch (err) {
          this.logger.fatal({ err, door: door.uuid, pin: raw.pin }, 'relay write failed: locking every relay and stopping the agent');
          this.lockAll();
          this.onFailure(err);
          throw err;
        }
      },
    };
  }
}
