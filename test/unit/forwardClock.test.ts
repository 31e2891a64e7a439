import { describe, expect, it } from 'vitest';
import { CLOCK_TRUSTED_FROM } from '../../src/core/decision.js';
import { ForwardClock } from '../../src/util/forwardClock.js';

describe('ForwardClock', () => {
  it('returns whole ms that never go back, whatever the fractions of the monotonic clock', () => {
    const system = { wall: Date.parse('2026-11-24T12:00:00Z'), mono: 1000.25 };
    const clock = new ForwardClock({ wallNow: () => system.wall, monoNow: () => system.mono }, { skewMs: 300_000, trustedFrom: CLOCK_TRUSTED_FROM });
    const steps: number[] = [clock.wallNow()];
    system.mono += 0.9; // the monotonic clock ran a little faster than the wall clock
    steps.push(clock.wallNow());
    system.mono += 0.9;
    steps.push(clock.wallNow());
    system.wall -= 2; // a small step back (within the skew): held, not reported
    steps.push(clock.wallNow());
    for (const at of steps) expect(Number.isInteger(at)).toBe(true);
    expect([...steps].sort((a, b) => a - b)).toEqual(steps);
    expect(steps.at(-1)).toBe(Date.parse('2026-11-24T12:00:00Z'));
  });

  it('reports a step back beyond the skew once, and follows the system clock again once it catches up', () => {
    const system = { wall: Date.parse('2026-11-24T12:00:00Z'), mono: 0 };
    const clock = new ForwardClock({ wallNow: () => system.wall, monoNow: () => system.mono }, { skewMs: 300_000, trustedFrom: CLOCK_TRUSTED_FROM });
    const reported: number[] = [];
    clock.onStepBack = (behindMs) => void reported.push(behindMs);
    clock.wallNow();
    system.wall -= 3600_000;
    expect(clock.wallNow()).toBe(Date.parse('2026-11-24T12:00:00Z'));
    system.mono += 1000;
    system.wall += 1000;
    expect(clock.wallNow()).toBe(Date.parse('2026-11-24T12:00:01Z'));
    expect(reported).toEqual([3600_000]);
    system.wall += 3600_000; // NTP puts it right: the system clock is followed again
    expect(clock.wallNow()).toBe(Date.parse('2026-11-24T12:00:01Z'));
    system.wall += 5;
    expect(clock.wallNow()).toBe(Date.parse('2026-11-24T12:00:01.005Z'));
    system.wall -= 3600_000; // and a second step back is a second report
    clock.wallNow();
    expect(reported).toHaveLength(2);
  });
});
