import { fullJitterDelay } from './backoff.js';

/**
 * When the daemon asks the service next: its syncs (docs/sync.md, "Schedule") and its fleet exchange
 * (docs/fleet.md). Pure, every random draw from the injected `random` ([0, 1)), so the tests choose the draws.
 */

/** The first retry after a failure waits up to this (full jitter); each further failure doubles it, up to the cap. */
const INITIAL_BACKOFF_MS = 5000;

/** The first sync after start: uniformly between 0 and `service.startDelaySeconds`, so doors started together (a power cut) do not ask together. */
export function firstSyncDelay(startDelayMs: number, random: () => number): number {
  return Math.round(startDelayMs * random());
}

/** After a sync that succeeded (or was refused for good: the key, a mass removal): the interval ±10 %. */
export function intervalDelay(intervalMs: number, random: () => number): number {
  return Math.round(intervalMs * (0.9 + 0.2 * random()));
}

/**
 * After failure number `attempt` (0: the first in a row): full jitter between 0 and the exponential delay capped at
 * `maxMs` (the interval). With a Retry-After (a 503 or 429 that said when to come back) the wait is that delay plus
 * the jittered share, so doors the service sent away together do not come back together; never past `maxMs`,
 * so a Retry-After of a year waits `maxMs`.
 */
export function retryDelay(attempt: number, retryAfterMs: number | null, maxMs: number, random: () => number): number {
  const jittered = fullJitterDelay(attempt, { initialMs: Math.min(INITIAL_BACKOFF_MS, maxMs), maxMs }, random);
  if (retryAfterMs === null) return jittered;
  return Math.min(maxMs, Math.round(retryAfterMs) + jittered);
}
