import type { EventType } from '../store/eventLog.js';
import { BurstSummarizer } from '../util/burstSummarizer.js';
import type { Timers } from '../util/clock.js';
import { withProps } from '../core/objects.js';

/** A flood's interval: at most one summary per event type and door per minute. */
const FLOOD_INTERVAL_MS = 60_000;
/** Events of one type a door records one by one per interval before the rest are summarized (a busy door's passages stay exact). @internal */
export const FLOOD_BURST = 10;

/**
 * The door events an attacker (or a bad wire) can repeat at will: a magnet on the reed switch, a hand on the
 * tamper switch, a device answering the reader's polls, a reader unplugged and plugged again. Never the
 * decisions, and never `duress`: a duress alarm is always recorded and published on its own.
 */
const FLOODABLE: ReadonlySet<EventType> = new Set<EventType>([
  'door_opened',
  'door_closed',
  'door_forced',
  'door_held_open',
  'tamper',
  'reader_noise',
  'reader_tamper',
  'reader_power',
  'reader_online',
  'reader_offline',
]);

const sum = (a: unknown, b: unknown) => (typeof a === 'number' ? a : 0) + (typeof b === 'number' ? b : 0);

/** reader_noise summaries add up the frames, bits and reasons; other types keep the last occurrence's data. */
function fold(key: string, summary: Record<string, unknown>, data: Record<string, unknown>): Record<string, unknown> {
  if (key !== 'reader_noise') return data;
  const reasons = { ...(summary.reasons as Record<string, number> | undefined) };
  for (const [reason, n] of Object.entries((data.reasons as Record<string, number> | undefined) ?? {})) reasons[reason] = (reasons[reason] ?? 0) + n;
  return withProps(data, { frames: sum(summary.frames, data.frames), bits: sum(summary.bits, data.bits), reasons });
}

/**
 * One door's flood guard over its audit events (and so its alarms, which are raised from them): the first
 * FLOOD_BURST events of a type in a minute are recorded at once, the rest of the minute becomes one event of the
 * same type with `summary: true`, `count`, `first_at`, `last_at`, the last occurrence's fields (reader noise:
 * the totals) and the door's state at the end (`current`).
 */
export class InputFloods {
  private readonly summarizer: BurstSummarizer;

  constructor(deps: {
    timers: Timers;
    /** Records a summary as an event of `type` (an alarm type is published as an alarm too). */
    record: (type: EventType, data: Record<string, unknown>) => void;
    /** The door's state now, carried in each summary: the last state is never left to a guess. */
    current: () => Record<string, unknown>;
  }) {
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

  /** True: record this event now; false: it is counted in the next summary of its type. */
  admit(type: EventType, at: number, data: Record<string, unknown>): boolean {
    return !FLOODABLE.has(type) || this.summarizer.admit(type, at, data);
  }

  /** Records the summaries still counting (at stop). */
  flush(): void {
    this.summarizer.flush();
  }
}
