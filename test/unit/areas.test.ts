import { describe, expect, it } from 'vitest';
import {
  type AreaFact,
  type AreaPolicy,
  type AreasState,
  type Direction,
  NO_AREAS,
  applyFacts,
  checkpoint,
  decidePassage,
  granted,
  holderKey,
  holderRefOf,
  occupancy,
  occupants,
  opened,
  relocked,
  replay,
  reset,
  resetDue,
} from '../../src/core/areas.js';

const T0 = Date.parse('2026-06-10T08:00:00Z');
const s = (seconds: number) => T0 + seconds * 1000;
const ANNA = holderKey({ email_id: 1 });
const BEN = holderKey({ email_id: 2 });
const GUEST = holderKey({ magic_link_id: 'ml-9' });

function policy(over: Partial<AreaPolicy['antiPassback']> = {}, maxOccupancy: number | null = null): AreaPolicy {
  return { id: 'lab', antiPassback: { mode: 'hard', rule: 'inout', seconds: null, ...over }, maxOccupancy };
}

/** A passage through a door without a contact (the grant is the passage); returns the state after it. */
function pass(state: AreasState, holder: string, direction: Direction, at: number, door = 'd1', area = 'lab'): AreasState {
  return granted(state, { door, area, direction, holders: [holder], at, passesNow: true }).state;
}

const ask = (state: AreasState, p: AreaPolicy, holder: string, direction: Direction, now: number, exempt = false, door = 'd2') =>
  decidePassage(state, p, { door, direction, holders: [{ holder, exempt }], now });

describe('holder keys', () => {
  it('name the user or the guest link, and turn back into the reference', () => {
    expect(ANNA).toBe('user:1');
    expect(GUEST).toBe('link:ml-9');
    expect(holderRefOf(ANNA)).toEqual({ email_id: 1 });
    expect(holderRefOf(GUEST)).toEqual({ magic_link_id: 'ml-9' });
  });
});

describe('anti-passback, inout rule', () => {
  const hard = policy({ mode: 'hard', rule: 'inout' });
  const soft = policy({ mode: 'soft', rule: 'inout' });
  const inside = pass(NO_AREAS, ANNA, 'entry', s(0));
  const outside = pass(inside, ANNA, 'exit', s(60));

  it.each([
    ['unknown (never seen since the reset) may enter', NO_AREAS, 'entry', { allowed: true, violations: [] }],
    ['unknown may leave (no lock-out after a reset)', NO_AREAS, 'exit', { allowed: true, violations: [] }],
    ['inside may leave', inside, 'exit', { allowed: true, violations: [] }],
    ['inside may not enter again', inside, 'entry', { allowed: false, reason: 'passback', holders: [ANNA] }],
    ['outside may enter', outside, 'entry', { allowed: true, violations: [] }],
    ['outside may not leave again', outside, 'exit', { allowed: false, reason: 'passback', holders: [ANNA] }],
  ] as const)('hard: %s', (_what, state, direction, verdict) => {
    expect(ask(state, hard, ANNA, direction, s(120))).toEqual(verdict);
  });

  it('soft lets the violation through and names it', () => {
    expect(ask(inside, soft, ANNA, 'entry', s(120))).toEqual({ allowed: true, violations: [ANNA] });
    expect(ask(outside, soft, ANNA, 'exit', s(120))).toEqual({ allowed: true, violations: [ANNA] });
  });

  it('off never finds a violation', () => {
    expect(ask(inside, policy({ mode: 'off' }), ANNA, 'entry', s(120))).toEqual({ allowed: true, violations: [] });
  });

  it('another holder, another area: not affected', () => {
    expect(ask(inside, hard, BEN, 'entry', s(120))).toEqual({ allowed: true, violations: [] });
    expect(ask(inside, { ...hard, id: 'vault' }, ANNA, 'entry', s(120))).toEqual({ allowed: true, violations: [] });
  });

  it('a responder or a duress grant (exempt) is never refused, and is still counted', () => {
    expect(ask(inside, hard, ANNA, 'entry', s(120), true)).toEqual({ allowed: true, violations: [] });
    const inAgain = pass(inside, ANNA, 'entry', s(120));
    expect(occupancy(inAgain, 'lab')).toBe(1);
  });

  it('a reset makes everyone unknown again: the holder inside may enter', () => {
    const after = reset(inside, 'lab', s(100)).state;
    expect(ask(after, hard, ANNA, 'entry', s(120))).toEqual({ allowed: true, violations: [] });
    expect(ask(reset(inside, null, s(100)).state, hard, ANNA, 'entry', s(120))).toEqual({ allowed: true, violations: [] });
    // A reset of another area leaves this one alone.
    expect(ask(reset(inside, 'vault', s(100)).state, hard, ANNA, 'entry', s(120)).allowed).toBe(false);
  });

  it('a guest link counts like a user', () => {
    const guestIn = pass(NO_AREAS, GUEST, 'entry', s(0));
    expect(ask(guestIn, hard, GUEST, 'entry', s(10))).toEqual({ allowed: false, reason: 'passback', holders: [GUEST] });
    expect(occupants(guestIn, 'lab')).toEqual([{ holder: GUEST, since: s(0), door: 'd1' }]);
  });
});

describe('anti-passback, timed rule', () => {
  const timed = policy({ mode: 'hard', rule: 'timed', seconds: 30 });
  const entered = pass(NO_AREAS, ANNA, 'entry', s(0));

  it.each([
    ['entry again within the window', 'entry', 29.999, false],
    ['exit within the window (either direction counts)', 'exit', 10, false],
    ['entry again once the window has passed', 'entry', 30, true],
    ['exit once the window has passed', 'exit', 45, true],
  ] as const)('%s', (_what, direction, after, allowed) => {
    expect(ask(entered, timed, ANNA, direction, s(after)).allowed).toBe(allowed);
  });

  it('the window runs from the last passage, in or out', () => {
    const out = pass(entered, ANNA, 'exit', s(40));
    expect(ask(out, timed, ANNA, 'entry', s(60)).allowed).toBe(false);
    expect(ask(out, timed, ANNA, 'entry', s(70)).allowed).toBe(true);
  });
});

describe('passage: grant, open, relock', () => {
  const grant = (state: AreasState, holder: string, at: number, direction: Direction = 'entry') =>
    granted(state, { door: 'd1', area: 'lab', direction, holders: [holder], at, passesNow: false });

  it('at a door with a contact the passage is the opening after the grant, at the time it opened', () => {
    const g = grant(NO_AREAS, ANNA, s(0));
    expect(g.facts).toEqual([]);
    expect(occupancy(g.state, 'lab')).toBe(0);
    const o = opened(g.state, 'd1', s(3));
    expect(o.facts).toEqual([{ kind: 'passage', area: 'lab', holder: ANNA, direction: 'entry', door: 'd1', at: s(3) }]);
    expect(occupants(o.state, 'lab')).toEqual([{ holder: ANNA, since: s(3), door: 'd1' }]);
    // The next opening (the door left and opened again by the exit button) is no passage of hers.
    expect(opened(o.state, 'd1', s(20)).facts).toEqual([]);
  });

  it('a grant whose door never opened (the unlock ran out) is no passage', () => {
    const g = relocked(grant(NO_AREAS, ANNA, s(0)).state, 'd1');
    expect(opened(g, 'd1', s(30)).facts).toEqual([]);
    expect(occupancy(g, 'lab')).toBe(0);
    expect(ask(g, policy(), ANNA, 'entry', s(31)).allowed).toBe(true);
  });

  it('without a contact (or with the door open already) the grant is the passage', () => {
    const g = granted(NO_AREAS, { door: 'd2', area: 'lab', direction: 'entry', holders: [ANNA], at: s(0), passesNow: true });
    expect(g.facts).toEqual([{ kind: 'passage', area: 'lab', holder: ANNA, direction: 'entry', door: 'd2', at: s(0) }]);
    expect(occupancy(g.state, 'lab')).toBe(1);
  });

  it('the same holder granted twice before the door opened passes once, in the direction of the latest grant', () => {
    const twice = grant(grant(NO_AREAS, ANNA, s(0)).state, ANNA, s(2), 'exit').state;
    expect(opened(twice, 'd1', s(3)).facts).toEqual([{ kind: 'passage', area: 'lab', holder: ANNA, direction: 'exit', door: 'd1', at: s(3) }]);
  });

  it('two holders granted before one opening both pass (tailgating counted on the safe side for the muster list)', () => {
    const both = grant(grant(NO_AREAS, ANNA, s(0)).state, BEN, s(1)).state;
    expect(occupancy(opened(both, 'd1', s(3)).state, 'lab')).toBe(2);
  });

  it('a grant pending at one door counts against the same holder at every other door and reader of the area', () => {
    const hard = policy({ mode: 'hard', rule: 'inout' });
    const pendingIn = grant(NO_AREAS, ANNA, s(0)).state; // unknown, granted in at d1, not yet through
    expect(ask(pendingIn, hard, ANNA, 'entry', s(1), false, 'd2')).toEqual({ allowed: false, reason: 'passback', holders: [ANNA] });
    expect(ask(pendingIn, hard, BEN, 'entry', s(1), false, 'd2').allowed).toBe(true);
    expect(ask(pendingIn, { ...hard, id: 'vault' }, ANNA, 'entry', s(1), false, 'd2').allowed).toBe(true);
    // Her grant again at the same reader is that passage again; out through the other reader breaks nothing.
    expect(ask(pendingIn, hard, ANNA, 'entry', s(1), false, 'd1').allowed).toBe(true);
    expect(ask(pendingIn, hard, ANNA, 'exit', s(1), false, 'd1').allowed).toBe(true);
    // Known outside, granted in at d1: out at d2 breaks her last passage, in at d2 the pending grant.
    const outside = pass(NO_AREAS, ANNA, 'exit', s(-60), 'd2');
    const outThenIn = grant(outside, ANNA, s(0)).state;
    expect(ask(outThenIn, hard, ANNA, 'exit', s(1)).allowed).toBe(false);
    expect(ask(outThenIn, hard, ANNA, 'entry', s(1)).allowed).toBe(false);
    // Soft names it; exempt is never refused; relocked unopened, it counts no more.
    expect(ask(pendingIn, policy({ mode: 'soft', rule: 'inout' }), ANNA, 'entry', s(1))).toEqual({ allowed: true, violations: [ANNA] });
    expect(ask(pendingIn, hard, ANNA, 'entry', s(1), true).allowed).toBe(true);
    expect(ask(relocked(pendingIn, 'd1'), hard, ANNA, 'entry', s(8)).allowed).toBe(true);
    // Timed: the window runs from the pending grant, at the other reader of the same door too.
    const timed = policy({ mode: 'hard', rule: 'timed', seconds: 30 });
    expect(ask(pendingIn, timed, ANNA, 'exit', s(5), false, 'd1').allowed).toBe(false);
    expect(ask(pendingIn, timed, ANNA, 'entry', s(29), false, 'd2').allowed).toBe(false);
    expect(ask(pendingIn, timed, ANNA, 'entry', s(30), false, 'd2').allowed).toBe(true);
  });

  it('a two-person grant passes both holders', () => {
    const g = granted(NO_AREAS, { door: 'd1', area: 'lab', direction: 'entry', holders: [ANNA, BEN], at: s(0), passesNow: false });
    expect(occupants(opened(g.state, 'd1', s(2)).state, 'lab').map((o) => o.holder)).toEqual([ANNA, BEN]);
  });
});

describe('occupancy and the maximum', () => {
  const max2 = policy({ mode: 'off' }, 2);
  const two = pass(pass(NO_AREAS, ANNA, 'entry', s(0)), BEN, 'entry', s(5), 'd2');

  it('counts who is in, and lists them earliest first with their door', () => {
    expect(occupancy(two, 'lab')).toBe(2);
    expect(occupants(two, 'lab')).toEqual([
      { holder: ANNA, since: s(0), door: 'd1' },
      { holder: BEN, since: s(5), door: 'd2' },
    ]);
    const annaOut = pass(two, ANNA, 'exit', s(9));
    expect(occupants(annaOut, 'lab')).toEqual([{ holder: BEN, since: s(5), door: 'd2' }]);
    expect(occupancy(annaOut, 'lab')).toBe(1);
  });

  it('an exit of someone never seen inside does not go below zero', () => {
    expect(occupancy(pass(NO_AREAS, ANNA, 'exit', s(0)), 'lab')).toBe(0);
  });

  it('refuses an entry with area_full once the maximum is reached; an exit never', () => {
    expect(ask(two, max2, GUEST, 'entry', s(10))).toEqual({ allowed: false, reason: 'area_full', holders: [GUEST] });
    expect(ask(two, max2, ANNA, 'exit', s(10))).toEqual({ allowed: true, violations: [] });
    expect(ask(pass(two, ANNA, 'exit', s(9)), max2, GUEST, 'entry', s(10)).allowed).toBe(true);
  });

  it('someone already inside (a soft violation) takes no second place', () => {
    expect(ask(two, { ...max2, antiPassback: { mode: 'soft', rule: 'inout', seconds: null } }, ANNA, 'entry', s(10))).toEqual({
      allowed: true,
      violations: [ANNA],
    });
  });

  it('a responder is exempt from the maximum, and counts once inside', () => {
    expect(ask(two, max2, GUEST, 'entry', s(10), true)).toEqual({ allowed: true, violations: [] });
    const three = pass(two, GUEST, 'entry', s(10));
    expect(occupancy(three, 'lab')).toBe(3);
  });

  it('a grant not yet through its door holds a place', () => {
    const pending = granted(pass(NO_AREAS, ANNA, 'entry', s(0)), {
      door: 'd1',
      area: 'lab',
      direction: 'entry',
      holders: [BEN],
      at: s(5),
      passesNow: false,
    }).state;
    expect(occupancy(pending, 'lab')).toBe(1);
    expect(ask(pending, max2, GUEST, 'entry', s(6)).allowed).toBe(false);
    // Ben himself, granted again at the other door, takes no second place.
    expect(ask(pending, max2, BEN, 'entry', s(6)).allowed).toBe(true);
    // Once the unlock ran out, the place is free again.
    expect(ask(relocked(pending, 'd1'), max2, GUEST, 'entry', s(20)).allowed).toBe(true);
  });

  it('two people of a two-person door need two places', () => {
    const one = pass(NO_AREAS, GUEST, 'entry', s(0));
    const verdict = decidePassage(one, max2, {
      door: 'd1',
      direction: 'entry',
      holders: [
        { holder: ANNA, exempt: false },
        { holder: BEN, exempt: false },
      ],
      now: s(1),
    });
    expect(verdict).toEqual({ allowed: false, reason: 'area_full', holders: [ANNA, BEN] });
  });

  it('passback is reported before area_full', () => {
    const full = policy({ mode: 'hard', rule: 'inout' }, 1);
    const annaIn = pass(NO_AREAS, ANNA, 'entry', s(0));
    expect(ask(annaIn, full, ANNA, 'entry', s(1))).toEqual({ allowed: false, reason: 'passback', holders: [ANNA] });
  });

  it('a reset empties the list and the count', () => {
    const after = reset(two, 'lab', s(100));
    expect(after.facts).toEqual([{ kind: 'reset', area: 'lab', at: s(100) }]);
    expect(occupancy(after.state, 'lab')).toBe(0);
    expect(occupants(after.state, 'lab')).toEqual([]);
  });
});

describe('state derived from facts', () => {
  /** A day at the lab, through the live functions, keeping every fact they return. */
  function liveDay(): { state: AreasState; facts: AreaFact[] } {
    const facts: AreaFact[] = [];
    let state = NO_AREAS;
    const step = (r: { state: AreasState; facts: readonly AreaFact[] }) => {
      state = r.state;
      facts.push(...r.facts);
    };
    step(granted(state, { door: 'd1', area: 'lab', direction: 'entry', holders: [ANNA], at: s(0), passesNow: false }));
    step(opened(state, 'd1', s(2)));
    step(granted(state, { door: 'd2', area: 'lab', direction: 'entry', holders: [BEN], at: s(10), passesNow: true }));
    step(granted(state, { door: 'd3', area: 'vault', direction: 'entry', holders: [BEN], at: s(20), passesNow: true }));
    step(reset(state, 'vault', s(30)));
    step(granted(state, { door: 'd1', area: 'lab', direction: 'exit', holders: [ANNA], at: s(40), passesNow: false }));
    state = relocked(state, 'd1');
    step(granted(state, { door: 'd2', area: 'lab', direction: 'entry', holders: [GUEST], at: s(50), passesNow: true }));
    return { state, facts };
  }

  it('replay of the facts returned is the live state', () => {
    const { state, facts } = liveDay();
    expect(replay(facts).areas).toEqual(state.areas);
    expect(occupancy(state, 'lab')).toBe(3);
  });

  it('a checkpoint stands for every fact before it', () => {
    const { state, facts } = liveDay();
    const cp = checkpoint(state, 'lab', s(60));
    expect(replay([cp]).areas).toEqual(state.areas);
    const later = pass(state, ANNA, 'exit', s(70));
    expect(applyFacts(replay([cp]), [{ kind: 'passage', area: 'lab', holder: ANNA, direction: 'exit', door: 'd1', at: s(70) }]).areas).toEqual(later.areas);
    expect(replay([...facts, cp]).areas).toEqual(state.areas);
    // Of an area with no state: a reset.
    expect(checkpoint(state, 'vault', s(60))).toEqual({ kind: 'reset', area: 'vault', at: s(60) });
  });

  it('replay drops the pending grants: the agent locks every door when it starts', () => {
    const g = granted(NO_AREAS, { door: 'd1', area: 'lab', direction: 'entry', holders: [ANNA], at: s(0), passesNow: false });
    expect(replay(g.facts).pending.size).toBe(0);
  });
});

describe('resetDue (a scheduled reset missed while the agent was down)', () => {
  const zone = 'Europe/Berlin';
  const monday10 = Date.parse('2026-06-08T08:00:00Z');
  const state = pass(NO_AREAS, ANNA, 'entry', monday10);

  it.each([
    ['before the next 03:00', '2026-06-09T00:59:59Z', null],
    ['at it', '2026-06-09T01:00:00Z', '2026-06-09T01:00:00.000Z'],
    ['days later: the first one missed', '2026-06-12T09:00:00Z', '2026-06-09T01:00:00.000Z'],
  ])('%s', (_what, now, due) => {
    const at = resetDue(state, 'lab', Date.parse(now), '03:00', zone);
    expect(at === null ? null : new Date(at).toISOString()).toBe(due);
  });

  it('an area with no state has nothing to reset', () => {
    expect(resetDue(NO_AREAS, 'lab', Date.parse('2026-06-12T09:00:00Z'), '03:00', zone)).toBeNull();
  });

  it('counts from the first fact since the reset, not the latest', () => {
    // Passages on Tuesday after 03:00 do not hide Tuesday's reset of Monday's state.
    const tuesday = pass(state, BEN, 'entry', Date.parse('2026-06-09T01:00:00.005Z'));
    expect(resetDue(tuesday, 'lab', Date.parse('2026-06-09T02:00:00Z'), '03:00', zone)).toBe(Date.parse('2026-06-09T01:00:00Z'));
  });
});
