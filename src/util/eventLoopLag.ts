import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

/** How often the event loop is sampled (ms): each sample is a libuv timer, never work on the event loop's callers. */
const RESOLUTION_MS = 20;

/** The event loop's delay, sampled by Node itself (perf_hooks.monitorEventLoopDelay), read and reset by period. */
export interface EventLoopLag {
  /** The 99th percentile of the delay since the last reset (ms), null before any sample. */
  p99Ms(): number | null;
  reset(): void;
  stop(): void;
}

export function eventLoopLag(): EventLoopLag {
  const histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  return {
    p99Ms: () => {
      if (histogram.count === 0) return null;
      // A sample is the time between two ticks of the sampling timer: its resolution is not lag.
      return Math.max(0, Math.round((histogram.percentile(99) / 1e6 - RESOLUTION_MS) * 10) / 10);
    },
    reset: () => histogram.reset(),
    stop: () => histogram.disable(),
  };
}
