import { withProps } from './objects.js';
/**
 * One link's outages (the broker, the service): failed attempts and the successes that end them, turned into one
 * link_lost per outage and one link_restored after it, never one per retry. A blip is not an outage: it counts
 * once it has lasted `graceMs` with at least `minFailures` failed attempts in a row. Pure: the caller feeds the
 * attempts and, for a time-only grace, a tick at `lostDueAt`.
 */
export interface OutagePolicy {
  graceMs: number;
  minFailures: number;
}

export interface OutageState {
  /** The first failed attempt of the outage (wall ms), null while the link is up. */
  since: number | null;
  /** The monotonic time of that attempt (the grace and the length are measured on it). */
  sinceMono: number;
  failures: number;
  /** link_lost was raised for this outage. */
  reported: boolean;
}

export type OutageEvent = { type: 'link_lost'; since: number } | { type: 'link_restored'; since: number; seconds: number };

export const LINK_UP: OutageState = { since: null, sinceMono: 0, failures: 0, reported: false };

export interface OutageTime {
  wall: number;
  mono: number;
}

function lostIfDue(state: OutageState, now: OutageTime, policy: OutagePolicy): { state: OutageState; events: OutageEvent[] } {
  if (state.since === null || state.reported) return { state, events: [] };
  if (state.failures < policy.minFailures || now.mono - state.sinceMono < policy.graceMs) return { state, events: [] };
  return { state: withProps(state, { reported: true }), events: [{ type: 'link_lost', since: state.since }] };
}

/** An attempt failed (a refused connection, a dropped one, a sync without an answer). */
export function attemptFailed(state: OutageState, now: OutageTime, policy: OutagePolicy): { state: OutageState; events: OutageEvent[] } {
  const next =
    state.since === null ? { since: now.wall, sinceMono: now.mono, failures: 1, reported: false } : withProps(state, { failures: state.failures + 1 });
  return lostIfDue(next, now, policy);
}

/** An attempt succeeded: the outage is over (link_restored only when it was reported). */
export function attemptSucceeded(state: OutageState, now: OutageTime): { state: OutageState; events: OutageEvent[] } {
  if (state.since === null) return { state, events: [] };
  const events: OutageEvent[] = state.reported
    ? [{ type: 'link_restored', since: state.since, seconds: Math.round(Math.max(0, now.mono - state.sinceMono) / 1000) }]
    : [];
  return { state: LINK_UP, events };
}

/** When the grace ends (monotonic ms), for a timer; null when nothing is pending. */
export function lostDueAt(state: OutageState, policy: OutagePolicy): number | null {
  if (state.since === null || state.reported || state.failures < policy.minFailures) return null;
  return state.sinceMono + policy.graceMs;
}

/** The grace's timer fired. */
export function outageTick(state: OutageState, now: OutageTime, policy: OutagePolicy): { state: OutageState; events: OutageEvent[] } {
  return lostIfDue(state, now, policy);
}
