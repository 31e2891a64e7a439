/**
 * The two-person rule (issue 26; Mercury's "two-card" reader mode): a door that opens only for two different
 * authorized holders within `windowSeconds`. The first tap is acknowledged (`awaiting_second_person`), the second
 * unlocks. Kept in memory per door, not across a restart (someone who tapped in those seconds taps again). Times
 * are monotonic ms: a wall-clock step must not stretch or cut the window. See docs/areas.md.
 */

/** The first person, waiting at the door: the holders their credential was granted for, and when. */
export interface TwoPersonWaiting {
  holders: readonly string[];
  /** Monotonic ms. */
  at: number;
}

export type TwoPersonOutcome =
  /** The first person (again, when `restarted`): acknowledge at the reader, audit, do not unlock. */
  | { outcome: 'awaiting_second_person'; waiting: TwoPersonWaiting; restarted: boolean }
  /** A different holder within the window: unlock for both. */
  | { outcome: 'complete'; first: readonly string[]; waiting: null };

/** The first person still waiting at `now`, or null once their window has passed. @internal */
export function stillWaiting(waiting: TwoPersonWaiting | null, now: number, windowSeconds: number): TwoPersonWaiting | null {
  return waiting !== null && now - waiting.at < windowSeconds * 1000 ? waiting : null;
}

/**
 * A granted tap at a two-person door (a refused tap is not passed here: it leaves the first person waiting). The
 * same holder again restarts their window: they are still at the door, and a second person is still needed.
 * Holders are the same person when their credential's holders overlap (one card can name a user and a guest link).
 */
export function twoPersonTap(waiting: TwoPersonWaiting | null, holders: readonly string[], now: number, windowSeconds: number): TwoPersonOutcome {
  const first = stillWaiting(waiting, now, windowSeconds);
  if (first === null) return { outcome: 'awaiting_second_person', waiting: { holders, at: now }, restarted: false };
  if (holders.some((h) => first.holders.includes(h)))
    return { outcome: 'awaiting_second_person', waiting: { holders: first.holders, at: now }, restarted: true };
  return { outcome: 'complete', first: first.holders, waiting: null };
}
