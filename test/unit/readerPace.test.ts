import { describe, expect, it } from 'vitest';
import { PACE_FULL, READER_PACE, paceAvailable, takePace, type ReaderPaceState } from '../../src/core/readerPace.js';

const T0 = 1_000_000;

/** Frames at the given times: how many the pace let through, and the state after. */
function frames(times: readonly number[], from: ReaderPaceState = PACE_FULL) {
  let state = from;
  let allowed = 0;
  for (const t of times) {
    const r = takePace(state, t, READER_PACE);
    state = r.state;
    if (r.allowed) allowed++;
  }
  return { state, allowed };
}

const at = (start: number, n: number, everyMs: number) => Array.from({ length: n }, (_, i) => start + i * everyMs);

describe('a reader pace: 5 card or token decisions a second, a burst of 5', () => {
  it('a fresh reader decides a burst of 5 at once, then nothing more in that instant', () => {
    expect(paceAvailable(PACE_FULL, T0, READER_PACE)).toBe(5);
    expect(frames(at(T0, 500, 0)).allowed).toBe(5);
  });

  it('refills one decision per 200 ms, up to the burst', () => {
    const { state } = frames(at(T0, 5, 0));
    expect(paceAvailable(state, T0 + 199, READER_PACE)).toBe(0);
    expect(paceAvailable(state, T0 + 200, READER_PACE)).toBe(1);
    expect(paceAvailable(state, T0 + 600, READER_PACE)).toBe(3);
    expect(paceAvailable(state, T0 + 60_000, READER_PACE)).toBe(5);
  });

  it('a flood at wire speed gets the burst plus 5 a second, however fast it is', () => {
    // 945 frames a second (a 115200-baud serial line) and 93 (9600 baud), for 10 s: 5 at once, then one per 200 ms.
    for (const perSecond of [945, 93]) {
      const { allowed } = frames(at(T0, perSecond * 10, 1000 / perSecond));
      expect(allowed).toBeLessThanOrEqual(5 + 50);
      expect(allowed).toBeGreaterThanOrEqual(5 + 49);
    }
  });

  it('a person tapping, even 4 cards a second for a minute, never meets it', () => {
    expect(frames(at(T0, 240, 250)).allowed).toBe(240);
  });

  it('never goes below empty: refused frames cost nothing, the burst is back a second after a flood stops', () => {
    const flood = frames(at(T0, 10_000, 0.1));
    expect(flood.state.credit).toBeGreaterThanOrEqual(0);
    expect(paceAvailable(flood.state, T0 + 1_000, READER_PACE)).toBeGreaterThanOrEqual(0);
    const end = T0 + 10_000 * 0.1;
    expect(paceAvailable(flood.state, end + 1_000, READER_PACE)).toBe(5);
  });

  it('a monotonic time that goes backwards earns nothing and breaks nothing', () => {
    const { state } = frames(at(T0, 5, 0));
    // Earlier than the last frame: refused, and the pace does not count that time again when the clock comes back.
    const back = takePace(state, T0 - 60_000, READER_PACE);
    expect(back.allowed).toBe(false);
    expect(back.state.credit).toBeGreaterThanOrEqual(0);
    expect(paceAvailable(back.state, T0 + 199, READER_PACE)).toBe(0);
    expect(paceAvailable(back.state, T0 + 200, READER_PACE)).toBe(1);
    // From a reader never used, a time far in the past is still just the burst.
    expect(frames(at(-1e12, 10, 0)).allowed).toBe(5);
  });
});
