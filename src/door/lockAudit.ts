import type { Logger } from 'pino';
import { EMERGENCY_LOCK_CAUSES } from '../core/emergencyRelease.js';
import type { Component } from '../lifecycle.js';
import type { NewEvent } from '../store/eventLog.js';
import type { Clock, Timers } from '../util/clock.js';
import type { DoorEvents } from './doorEvents.js';
import { InputFloods, type InputRecorder } from './inputFloods.js';

type LockEventType = 'unlocked' | 'locked';

/**
 * Each lock change that moved a relay goes into the audit log (unlocked / locked, with the cause). The moves of
 * the fire alarm input (its release and its end, as often as the input flaps) pass that input's flood guard at
 * each door, as its emergency_release and emergency_cleared do: the relay follows every flap, the log keeps the
 * first ten of a minute and a summary.
 */
export class LockAudit implements Component {
  readonly name = 'lock audit';
  private readonly guards = new Map<string, { floods: InputFloods; record: InputRecorder<LockEventType> }>();
  private readonly states = new Map<string, string>();
  private stopListening: (() => void) | null = null;

  constructor(private readonly deps: { doorEvents: DoorEvents; append: (event: NewEvent) => void; clock: Clock; timers: Timers; logger: Logger }) {}

  start(): void {
    this.stopListening = this.deps.doorEvents.on('lock', (door, snapshot, previous) => {
      if (snapshot.state === previous) return;
      this.states.set(door, snapshot.state);
      const relockAt = snapshot.relockAt === null ? null : new Date(snapshot.relockAt).toISOString();
      const type: LockEventType = snapshot.state === 'UNLOCKED' ? 'unlocked' : 'locked';
      const data = snapshot.state === 'UNLOCKED' ? { cause: snapshot.cause, relock_at: relockAt } : { cause: snapshot.cause };
      if (EMERGENCY_LOCK_CAUSES.includes(snapshot.cause)) this.emergencyMoves(door).record(type, data);
      else this.deps.append({ type, door, at: snapshot.changedAt, data });
      this.deps.logger.info({ door, state: snapshot.state, cause: snapshot.cause, relockAt }, snapshot.state === 'UNLOCKED' ? 'unlocked' : 'locked');
    });
  }

  stop(): void {
    this.stopListening?.();
    this.stopListening = null;
    for (const guard of this.guards.values()) guard.floods.flush();
  }

  /** The fire alarm input's moves of one door, declared to a flood guard of their own (the door's lock state in its summaries). */
  private emergencyMoves(door: string): { floods: InputFloods; record: InputRecorder<LockEventType> } {
    let guard = this.guards.get(door);
    if (!guard) {
      const { clock, timers } = this.deps;
      const floods = new InputFloods({
        clock,
        timers,
        record: (type, data) => this.deps.append({ type, door, at: clock.wallNow(), data }),
        current: () => ({ lock: this.states.get(door) ?? null }),
      });
      guard = { floods, record: floods.input('emergency input', ['unlocked', 'locked']) };
      this.guards.set(door, guard);
    }
    return guard;
  }
}
