import { describe, expect, it } from 'vitest';
import { LINK_UP, attemptFailed, attemptSucceeded, lostDueAt, outageTick, type OutagePolicy, type OutageState } from '../../src/core/linkOutage.js';

const WALL0 = Date.parse('2026-11-24T09:00:00Z');
const at = (s: number) => ({ wall: WALL0 + s * 1000, mono: 1_000 + s * 1000 });
const BROKER: OutagePolicy = { graceMs: 30_000, minFailures: 1 };
const SERVICE: OutagePolicy = { graceMs: 30_000, minFailures: 2 };

describe('link outages (issue 30 item 3)', () => {
  it('a blip shorter than the grace is no outage: no event either way', () => {
    const down = attemptFailed(LINK_UP, at(0), BROKER);
    expect(down.events).toEqual([]);
    expect(lostDueAt(down.state, BROKER)).toBe(at(30).mono);
    expect(attemptSucceeded(down.state, at(10))).toEqual({ state: LINK_UP, events: [] });
  });

  it('one link_lost per outage with its start, however many retries; link_restored with start and length', () => {
    let s: OutageState = attemptFailed(LINK_UP, at(0), BROKER).state;
    for (let t = 1; t < 30; t += 3) s = attemptFailed(s, at(t), BROKER).state;
    const lost = outageTick(s, at(30), BROKER);
    expect(lost.events).toEqual([{ type: 'link_lost', since: WALL0 }]);
    s = lost.state;
    expect(lostDueAt(s, BROKER)).toBeNull();
    for (let t = 31; t < 100; t += 7) expect(attemptFailed(s, at(t), BROKER).events).toEqual([]);
    s = attemptFailed(s, at(99), BROKER).state;
    expect(attemptSucceeded(s, at(125))).toEqual({ state: LINK_UP, events: [{ type: 'link_restored', since: WALL0, seconds: 125 }] });
  });

  it('the service: two failed syncs in a row, 30 s or more after the first', () => {
    const first = attemptFailed(LINK_UP, at(0), SERVICE);
    expect(lostDueAt(first.state, SERVICE)).toBeNull(); // one failure: no timer, whatever the time
    expect(outageTick(first.state, at(600), SERVICE).events).toEqual([]);
    const second = attemptFailed(first.state, at(4), SERVICE);
    expect(second.events).toEqual([]); // too soon: a retry of the backoff
    const third = attemptFailed(second.state, at(35), SERVICE);
    expect(third.events).toEqual([{ type: 'link_lost', since: WALL0 }]);
    // Or two failures and the grace ending between them (the timer).
    expect(outageTick(second.state, at(30), SERVICE).events).toEqual([{ type: 'link_lost', since: WALL0 }]);
  });

  it('a new outage after a restore starts afresh', () => {
    let s = outageTick(attemptFailed(LINK_UP, at(0), BROKER).state, at(30), BROKER).state;
    s = attemptSucceeded(s, at(40)).state;
    s = attemptFailed(s, at(100), BROKER).state;
    expect(outageTick(s, at(130), BROKER).events).toEqual([{ type: 'link_lost', since: WALL0 + 100_000 }]);
  });
});
