import { haLockState, type HaLockState, type LockFacts } from '../../core/haLockState.js';
import { systemTimers, type Clock, type Timers } from '../../util/clock.js';
import type { MqttDoor } from './mqttDoor.js';

interface DoorFacts {
  door: MqttDoor;
  /** When the relay was last driven (monotonic ms; the start for the relay's first state). */
  drivenAt: number;
  contact: LockFacts['contact'];
  timer: unknown;
}

/**
 * Each door's lock as Home Assistant's lock shows it (`ha_state` of `P/doors/<uuid>/state`): the facts the decision
 * (core/haLockState.ts) needs, kept from the doors' events (when the relay was last driven, since when the contact
 * reads as it does), and one timer per door for the moment its state changes by itself (OPEN turning JAMMED), when
 * `onDue` is called so that the state is published again. Times on the monotonic clock.
 */
export class HomeAssistantLock {
  private readonly byUuid = new Map<string, DoorFacts>();
  private readonly timers: Timers;

  constructor(private readonly deps: { doors: readonly MqttDoor[]; clock: Clock; timers?: Timers; onDue: (uuid: string) => void }) {
    this.timers = deps.timers ?? systemTimers;
    const now = deps.clock.monoNow();
    // What happened before the start is not known: the relay was driven locked (or resumed) and the contact read now.
    for (const door of deps.doors) this.byUuid.set(door.door.uuid, { door, drivenAt: now, contact: contactOf(door, now, null), timer: null });
  }

  /** The relay was driven (a lock change, announced right after the relay moved). */
  lockChanged(uuid: string): void {
    const facts = this.byUuid.get(uuid);
    if (facts) facts.drivenAt = this.deps.clock.monoNow();
  }

  /** A part of the door's published state changed: its contact may have. */
  positionChanged(uuid: string): void {
    const facts = this.byUuid.get(uuid);
    if (facts) facts.contact = contactOf(facts.door, this.deps.clock.monoNow(), facts.contact);
  }

  /** The state now; when it will change by itself, `onDue` is called then. */
  state(uuid: string): HaLockState {
    const facts = this.byUuid.get(uuid);
    if (!facts) throw new Error(`no door ${uuid}`);
    const { door } = facts;
    const now = this.deps.clock.monoNow();
    const report = haLockState(
      { relay: door.controller.snapshot().state, drivenAt: facts.drivenAt, writeFailed: door.controller.relayWriteFailed, contact: facts.contact },
      now,
      door.door.jammedAfterSeconds * 1000,
    );
    this.clearTimer(facts);
    if (report.changesAt !== null) {
      facts.timer = this.timers.setTimeout(
        () => {
          facts.timer = null;
          this.deps.onDue(uuid);
        },
        Math.max(0, report.changesAt - now),
      );
    }
    return report.state;
  }

  stop(): void {
    for (const facts of this.byUuid.values()) this.clearTimer(facts);
  }

  private clearTimer(facts: DoorFacts): void {
    if (facts.timer !== null) this.timers.clearTimeout(facts.timer);
    facts.timer = null;
  }
}

/** The contact now, keeping `held`'s since while it reads the same. */
function contactOf(door: MqttDoor, now: number, held: LockFacts['contact']): LockFacts['contact'] {
  const reading = door.contact();
  if (reading === null) return null;
  const open = reading === 'OPEN';
  return held !== null && held.open === open ? held : { open, since: now };
}
