/** Wall-clock time for timestamps and schedules, monotonic time for timers and deadlines. */
export interface Clock {
  wallNow(): number;
  monoNow(): number;
}

export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  wallNow: () => Date.now(),
  monoNow: () => performance.now(),
};

export const systemTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
