import type { EventType } from '../store/eventLog.js';
import { BurstSummarizer } from '../util/burstSummarizer.js';
import type { Clock, Timers } from '../util/clock.js';
import { withProps } from '../core/objects.js';

/** A flood's interval: at most one summary per event type and door per minute. */
const FLOOD_INTERVAL_MS = 60_000;
/** Events of one type a door records one by one per interval before the rest are summarized (a busy door's passages stay exact). @internal */
export const FLOOD_BURST = 10;

declare const declared: unique symbol;

/**
 * How an input an attacker (or a bad wire) can toggle at will records its events: made only by
 * `InputFloods.input`, so an input module that asks for one cannot be wired past the flood guard.
 */
export type InputRecorder<T extends EventType> = ((type: T, data?: Record<string, unknown>) => void) & {
  /** The input's name and events, as it declared itself. */
  readonly input: string;
  readonly events: readonly T[];
  readonly [declared]: true;
};

const sum = (a: unknown, b: unknown) => (typeof a === 'number' ? a : 0) + (typeof b === 'number' ? b : 0);

/** reader_noise summaries add up the frames, bits and reasons; other types keep the last occurrence's data. */
function fold(key: string, summary: Record<string, unknown>, data: Record<string, unknown>): Record<string, unknown> {
  if (key !== 'reader_noise') return data;
  const reasons = Object.assign({}, summary.reasons as Record<string, number> | undefined);
  for (const [reason, n] of Object.entries((data.reasons as Record<string, number> | undefined) ?? {})) reasons[reason] = (reasons[reason] ?? 0) + n;
  return withProps(data, { frames: sum(summary.frames, data.frames), bits: sum(summary.bits, data.bits), reasons });
}

/**
 * The flood guard of one place that records events (a door's audit recorder, the agent's own events): every input
 * an attacker (or a bad wire) can toggle declares itself here where it is wired (`input`: a magnet on the reed
 * switch, a hand on the tamper switch or the exit button, the fire alarm input and its wiring, the power inputs,
 * a device answering the reader's polls, a reader unplugged and plugged again) and records through what it gets
 * back. Per event type, the first FLOOD_BURST events of a minute are recorded at once, the rest of the minute
 * become one event of the same type with `summary: true`, `count`, `first_at`, `last_at`, the last occurrence's
 * fields (reader noise: the totals) and the state at the end (`current`). What does not come from such an input
 * (decisions, duress, an area's passages) is recorded past it, never summarized.
 */
export class InputFloods {
  private readonly summarizer: BurstSummarizer;

  constructor(
    private readonly deps: {
      clock: Clock;
      timers: Timers;
      /** Records an event, or a summary as an event of `type` (an alarm type is published as an alarm too). */
      record: (type: EventType, data: Record<string, unknown>) => void;
      /** The state now, carried in each summary: the last state is never left to a guess. */
      current: () => Record<string, unknown>;
    },
  ) {
    this.summarizer = new BurstSummarizer({
      timers: deps.timers,
      intervalMs: FLOOD_INTERVAL_MS,
      burst: FLOOD_BURST,
      fold,
      report: (key, s) =>
        deps.record(
          key as EventType,
          withProps(s.data, {
            summary: true,
            count: s.count,
            first_at: new Date(s.firstAt).toISOString(),
            last_at: new Date(s.lastAt).toISOString(),
            current: deps.current(),
          }),
        ),
    });
  }

  /** An input declares itself with the events it records: they pass the guard. */
  input<T extends EventType>(name: string, events: readonly T[]): InputRecorder<T> {
    const record = (type: T, data: Record<string, unknown> = {}) => {
      if (this.summarizer.admit(type, this.deps.clock.wallNow(), data)) this.deps.record(type, data);
    };
    return Object.assign(record, { input: name, events }) as unknown as InputRecorder<T>;
  }

  /** Records the summaries still counting (at stop). */
  flush(): void {
    this.summarizer.flush();
  }
}
