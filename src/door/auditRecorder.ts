import type { Logger } from 'pino';
import type { EventLog, EventType } from '../store/eventLog.js';
import { ALARM_TYPES } from '../api/eventTypes.js';
import type { Clock, Timers } from '../util/clock.js';
import { InputFloods, type InputRecorder } from './inputFloods.js';
import { withProps } from '../core/objects.js';

/** The event types raised as alarms: one list (store/eviction.ts). */
export type AlarmType = (typeof ALARM_TYPES)[number];
const ALARMS: ReadonlySet<string> = new Set<string>(ALARM_TYPES);

export interface AuditRecorderDeps {
  /** The door's uuid, on every event. */
  door: string;
  events: EventLog;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  /** An alarm was recorded (duress, tamper, forced, held open): published at once, beside the outbox. */
  onAlarm?: (type: AlarmType, data: Record<string, unknown>, at: number) => void;
  /** The door's position and tamper switch now (a flood's summary names them). */
  current: () => { door: 'OPEN' | 'CLOSED' | null; tamper: 'ON' | 'OFF' | null };
}

/**
 * One door's audit log writer, shared by its credential flow and its supervision: each input an attacker can
 * repeat declares itself to the door's flood guard (`input`) and records through it, alarms go out at once, and a
 * failing disk is logged, never thrown (the door has acted already).
 */
export class AuditRecorder {
  private readonly floods: InputFloods;

  constructor(private readonly deps: AuditRecorderDeps) {
    this.floods = new InputFloods({
      clock: deps.clock,
      timers: deps.timers,
      record: (type, data) => this.write(type, data, deps.clock.wallNow()),
      current: deps.current,
    });
  }

  /** An input an attacker (or a bad wire) can toggle declares itself: what it records passes the door's flood guard. */
  input<T extends EventType>(name: string, events: readonly T[]): InputRecorder<T> {
    return this.floods.input(name, events);
  }

  /**
   * An event that is not an input's (a decision, duress, a schedule's), recorded as it comes. `durable`: an event
   * carrying an area's passages (docs/areas.md): synced at once, as an alarm is (a muster list needs each one,
   * after a power cut too).
   */
  record(type: EventType, data: Record<string, unknown> = {}, options: { durable?: boolean } = {}): void {
    this.write(type, data, this.deps.clock.wallNow(), options.durable === true);
  }

  private write(type: EventType, data: Record<string, unknown>, at: number, durable = false): void {
    let written: { id: string; seq: number } | null = null;
    try {
      written = this.deps.events.append({ type, door: this.deps.door, at, data, ...(durable ? { durable } : {}) });
    } catch (err) {
      // The door has already acted; a failing disk must not stop it. The log line keeps the trace.
      this.deps.logger.error({ err, type }, 'cannot record event');
    }
    // The alarm names its audit event when it was written at once (a busy database writes it a little later).
    if (ALARMS.has(type)) this.deps.onAlarm?.(type as AlarmType, written ? withProps(data, { id: written.id, seq: written.seq }) : data, at);
  }

  /** The summaries still pending go out now (at stop: nothing is lost). */
  flush(): void {
    this.floods.flush();
  }
}
