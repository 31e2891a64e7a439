export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** Share of each delay that is randomized (0..1), so that many agents do not retry in step. */
  jitter: number;
}

/** Delay before retry number `attempt` (0 = first retry): exponential, capped, with jitter taken off the top. */
export function backoffDelay(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const base = Math.min(options.maxMs, options.initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(base * (1 - options.jitter * random()));
}

/**
 * "Full jitter" (Brooker, AWS Architecture Blog, 2015): a delay drawn uniformly between 0 and the capped
 * exponential one, so that clients failing together spread their retries over the whole window instead of
 * coming back in step. `random` returns [0, 1) (injected by the tests).
 */
export function fullJitterDelay(attempt: number, options: Omit<BackoffOptions, 'jitter'>, random: () => number): number {
  const ceiling = Math.min(options.maxMs, options.initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling * random());
}
