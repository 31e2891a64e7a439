import type { Logger } from 'pino';
import type { EventLog, EventType } from '../store/eventLog.js';
import { ALARM_TYPES } from '../store/eviction.js';
import type { Clock, Timers } from '../util/clock.js';
import { InputFloods } from './inputFloods.js';
import { withProps } from '../core/objects.js';

/** The event types raised as alarms: one list (store/eviction.ts), which eviction also keeps the last of. */
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
 * One door's audit log writer, shared by its credential flow and its supervision: floods of the inputs an attacker
 * can repeat pass the door's flood guard, alarms go out at once, and a failing disk is logged, never thrown (the
 * door has acted already).
 */
export class AuditRecorder {
  private readonly floods: InputFloods;

  constructor(private readonly deps: AuditRecorderDeps) {
    this.floods = new InputFloods({
      timers: deps.timers,
      record: (type, data) => this.write(type, data, deps.clock.wallNow()),
      current: deps.current,
    });
  }

  /**
   * `durable`: an event carrying an area's passages (docs/areas.md): synced at once, as an alarm is, and never
   * summarized into a flood's count (a muster list needs each one, after a power cut too).
   */
  record(type: EventType, data: Record<string, unknown> = {}, options: { durable?: boolean } = {}): void {
    const at = this.deps.clock.wallNow();
    const durable = options.durable === true;
    if (!durable && !this.floods.admit(type, at, data)) return; // a flood (contact, tamper, reader): counted in its next summary
    this.write(type, data, at, durable);
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
