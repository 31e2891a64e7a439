/**
 * A reader's pace for its card and token decisions: a token bucket of `perSecond` decisions a second with a
 * burst of `burst`. The card lockout (cardLockout.ts) counts guesses between its lockouts, but while the reader
 * is open it would decide every frame the line delivers (a serial line carries 90 to 950 a second): the pace is
 * what bounds an attacker at the wire. A person tapping (a few cards a second at most) never meets it.
 * Pure: times (monotonic ms) are passed in.
 */
export interface ReaderPacePolicy {
  perSecond: number;
  burst: number;
}

export const READER_PACE: ReaderPacePolicy = { perSecond: 5, burst: 5 };

export interface ReaderPaceState {
  /** The time saved up for decisions (ms; one decision costs 1000 / perSecond), at most `burst` decisions' worth. */
  credit: number;
  /** When the credit was last brought up to date (monotonic ms): the latest time seen. */
  at: number;
}

/** A reader that has decided nothing yet: its whole burst. */
export const PACE_FULL: ReaderPaceState = { credit: Number.POSITIVE_INFINITY, at: Number.NEGATIVE_INFINITY };

const costMs = (policy: ReaderPacePolicy): number => 1000 / policy.perSecond;

/** The credit at `now`. A time before the latest seen adds nothing (a clock that steps back earns no decisions). */
function creditAt(state: ReaderPaceState, now: number, policy: ReaderPacePolicy): number {
  const elapsed = now > state.at ? now - state.at : 0;
  return Math.min(state.credit + elapsed, policy.burst * costMs(policy));
}

/** How many decisions the reader may make at `now` (0 to burst). @internal */
export function paceAvailable(state: ReaderPaceState, now: number, policy: ReaderPacePolicy): number {
  return Math.floor(creditAt(state, now, policy) / costMs(policy));
}

/**
 * A card or token frame at `now`: `allowed` when the bucket holds a decision (taken). A frame refused leaves the
 * credit as it was: a flood never runs it below empty, so the pace refills at its rate as soon as the flood stops.
 */
export function takePace(state: ReaderPaceState, now: number, policy: ReaderPacePolicy): { state: ReaderPaceState; allowed: boolean } {
  const credit = creditAt(state, now, policy);
  const at = Math.max(now, state.at);
  const cost = costMs(policy);
  if (credit < cost) return { state: { credit, at }, allowed: false };
  return { state: { credit: credit - cost, at }, allowed: true };
}
