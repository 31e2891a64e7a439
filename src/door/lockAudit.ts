import type { Logger } from 'pino';
import { type ToggledLockInput, toggledLockInput } from '../core/toggledLockMoves.js';
import type { Component } from '../lifecycle.js';
import type { NewEvent } from '../store/eventLog.js';
import type { Clock, Timers } from '../util/clock.js';
import type { DoorEvents } from './doorEvents.js';
import { InputFloods, type InputRecorder } from './inputFloods.js';

type LockEventType = 'unlocked' | 'locked';

interface Guard {
  floods: InputFloods;
  record: InputRecorder<LockEventType>;
}

/**
 * Each lock change that moved a relay goes into the audit log (unlocked / locked, with the cause). The moves an
 * input an attacker can toggle makes (core/toggledLockMoves.ts: the fire alarm input, the exit button, the
 * contact's relock on close) pass a flood guard of that input at each door, as the input's own events do: the
 * relay follows every toggle, the log keeps the first ten of a minute and a summary. The rest is recorded one by one.
 */
export class LockAudit implements Component {
  readonly name = 'lock audit';
  private readonly guards = new Map<string, Guard>();
  private readonly states = new Map<string, string>();
  /** Per door, the cause of the unlock in force (what its relock timer ends). */
  private readonly unlockCauses = new Map<string, string>();
  private stopListening: (() => void) | null = null;

  constructor(private readonly deps: { doorEvents: DoorEvents; append: (event: NewEvent) => void; clock: Clock; timers: Timers; logger: Logger }) {}

  start(): void {
    this.stopListening = this.deps.doorEvents.on('lock', (door, snapshot, previous) => {
      const ended = this.unlockCauses.get(door) ?? null;
      if (snapshot.state === 'UNLOCKED') this.unlockCauses.set(door, snapshot.cause);
      else this.unlockCauses.delete(door);
      if (snapshot.state === previous) return;
      this.states.set(door, snapshot.state);
      const relockAt = snapshot.relockAt === null ? null : new Date(snapshot.relockAt).toISOString();
      const type: LockEventType = snapshot.state === 'UNLOCKED' ? 'unlocked' : 'locked';
      const data = snapshot.state === 'UNLOCKED' ? { cause: snapshot.cause, relock_at: relockAt } : { cause: snapshot.cause };
      const input = toggledLockInput(snapshot.cause, ended);
      if (input !== null) this.guard(door, input).record(type, data);
      else this.deps.append({ type, door, at: snapshot.changedAt, data });
      this.deps.logger.info({ door, state: snapshot.state, cause: snapshot.cause, relockAt }, snapshot.state === 'UNLOCKED' ? 'unlocked' : 'locked');
    });
  }

  stop(): void {
    this.stopListening?.();
    this.stopListening = null;
    for (const guard of this.guards.values()) guard.floods.flush();
  }

  /** One input's moves at one door, declared to a flood guard of their own (the door's lock state in its summaries). */
  private guard(door: string, input: ToggledLockInput): Guard {
    const key = `${door} ${input}`;
    let guard = this.guards.get(key);
    if (!guard) {
      const { clock, timers } = this.deps;
      const floods = new InputFloods({
        clock,
        timers,
        record: (type, data) => this.deps.append({ type, door, at: clock.wallNow(), data }),
        current: () => ({ lock: this.states.get(door) ?? null }),
      });
      guard = { floods, record: floods.input(input, ['unlocked', 'locked']) };
      this.guards.set(key, guard);
    }
    return guard;
  }
}
