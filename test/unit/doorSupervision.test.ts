import { describe, it, expect } from 'vitest';
import {
  SUPERVISION_START,
  authorized,
  contactChanged,
  granted,
  heldOpenDueAt,
  initialContact,
  nextDueAt,
  tick,
  type SupervisionSettings,
  type SupervisionState,
} from '../../src/core/doorSupervision.js';
import type { LockStateName } from '../../src/core/relay.js';

const settings: SupervisionSettings = { unlockWindowMs: 5_000, heldOpenMs: 30_000 };
const T0 = 100_000;

const closedAt = (now: number) => initialContact(SUPERVISION_START, false, now);
const change = (state: SupervisionState, open: boolean, now: number, lock: LockStateName = 'LOCKED') => contactChanged(state, open, { now, lock }, settings);

describe('contact readings', () => {
  it('the first reading gives no events, open or closed', () => {
    expect(change(SUPERVISION_START, true, T0).events).toEqual([]);
    expect(change(SUPERVISION_START, false, T0).events).toEqual([]);
    expect(change(SUPERVISION_START, true, T0).state.open).toBe(true);
  });

  it('the same reading again gives no events', () => {
    const closed = closedAt(T0);
    expect(change(closed, false, T0 + 1_000).events).toEqual([]);
    const opened = change(closed, true, T0 + 1_000, 'UNLOCKED').state;
    expect(change(opened, true, T0 + 2_000, 'UNLOCKED').events).toEqual([]);
  });

  it('opening and closing give door_opened and door_closed', () => {
    const opened = change(closedAt(T0), true, T0 + 1_000, 'UNLOCKED');
    expect(opened.events).toEqual(['door_opened']);
    const closed = change(opened.state, false, T0 + 3_000, 'UNLOCKED');
    expect(closed.events).toEqual(['door_closed']);
    expect(closed.state.open).toBe(false);
  });
});

describe('door_forced', () => {
  it('opened while LOCKED with no authorization: forced', () => {
    expect(change(closedAt(T0), true, T0 + 1_000, 'LOCKED').events).toEqual(['door_opened', 'door_forced']);
  });

  it('opened while UNLOCKED: not forced, even with no authorization', () => {
    expect(change(closedAt(T0), true, T0 + 1_000, 'UNLOCKED').events).toEqual(['door_opened']);
  });

  it('opened while LOCKED within unlockWindowMs of a grant or exit request: not forced', () => {
    // The relay may already have relocked when a slow person pulls the door: still excused within the window.
    const granted = authorized(closedAt(T0), T0 + 1_000);
    expect(change(granted, true, T0 + 1_000, 'LOCKED').events).toEqual(['door_opened']);
    expect(change(granted, true, T0 + 1_000 + settings.unlockWindowMs, 'LOCKED').events).toEqual(['door_opened']);
  });

  it('opened while LOCKED long after the last authorization: forced', () => {
    const granted = authorized(closedAt(T0), T0 + 1_000);
    expect(change(granted, true, T0 + 1_001 + settings.unlockWindowMs, 'LOCKED').events).toEqual(['door_opened', 'door_forced']);
    expect(change(granted, true, T0 + 3_600_000, 'LOCKED').events).toEqual(['door_opened', 'door_forced']);
  });

  it('an authorization excuses later openings only while it is recent', () => {
    let s = authorized(closedAt(T0), T0);
    const first = change(s, true, T0 + 1_000);
    expect(first.events).toEqual(['door_opened']);
    s = change(first.state, false, T0 + 2_000).state;
    expect(change(s, true, T0 + 60_000).events).toEqual(['door_opened', 'door_forced']);
  });

  // Issue 32 item 14: a grant (or exit request) allows one passage, however long its window.
  describe('one passage per grant or exit request', () => {
    const long: SupervisionSettings = { unlockWindowMs: 30_000, heldOpenMs: 60_000 }; // an accessibility door
    const longChange = (state: SupervisionState, open: boolean, now: number, lock: LockStateName) => contactChanged(state, open, { now, lock }, long);

    it('opened and closed after a grant, a second opening within the window while LOCKED is forced', () => {
      let s = authorized(closedAt(T0), T0);
      const first = longChange(s, true, T0 + 2_000, 'UNLOCKED');
      expect(first.events).toEqual(['door_opened']);
      s = longChange(first.state, false, T0 + 5_000, 'UNLOCKED').state; // closed: relocked on close
      expect(longChange(s, true, T0 + 8_000, 'LOCKED').events).toEqual(['door_opened', 'door_forced']);
    });

    it('the passage is used even when the relay had already relocked when the door was pulled (a slow person)', () => {
      let s = authorized(closedAt(T0), T0);
      const first = longChange(s, true, T0 + 20_000, 'LOCKED');
      expect(first.events).toEqual(['door_opened']);
      s = longChange(first.state, false, T0 + 22_000, 'LOCKED').state;
      expect(longChange(s, true, T0 + 25_000, 'LOCKED').events).toEqual(['door_opened', 'door_forced']);
    });

    it('each grant allows its own passage', () => {
      let s = authorized(closedAt(T0), T0);
      s = longChange(s, true, T0 + 1_000, 'UNLOCKED').state;
      s = longChange(s, false, T0 + 3_000, 'UNLOCKED').state;
      s = authorized(s, T0 + 4_000);
      const second = longChange(s, true, T0 + 5_000, 'LOCKED');
      expect(second.events).toEqual(['door_opened']);
      s = longChange(second.state, false, T0 + 6_000, 'LOCKED').state;
      expect(longChange(s, true, T0 + 7_000, 'LOCKED').events).toEqual(['door_opened', 'door_forced']);
    });

    it('a door already open at the grant: its closing is not the passage, the next opening is', () => {
      let s = longChange(closedAt(T0), true, T0 + 1_000, 'UNLOCKED').state; // open before the grant
      s = authorized(s, T0 + 2_000);
      s = longChange(s, false, T0 + 3_000, 'LOCKED').state;
      const next = longChange(s, true, T0 + 4_000, 'LOCKED');
      expect(next.events).toEqual(['door_opened']);
      s = longChange(next.state, false, T0 + 5_000, 'LOCKED').state;
      expect(longChange(s, true, T0 + 6_000, 'LOCKED').events).toEqual(['door_opened', 'door_forced']);
    });

    it('openings while UNLOCKED (a hold: schedule, hold-open) are never forced, passage or not', () => {
      let s = authorized(closedAt(T0), T0);
      for (let i = 1; i <= 3; i++) {
        const opened = longChange(s, true, T0 + i * 2_000, 'UNLOCKED');
        expect(opened.events).toEqual(['door_opened']);
        s = longChange(opened.state, false, T0 + i * 2_000 + 1_000, 'UNLOCKED').state;
      }
    });
  });

  it('a door found open at start is not reported as forced or opened', () => {
    const s = initialContact(SUPERVISION_START, true, T0);
    expect(change(s, true, T0 + 1_000, 'LOCKED').events).toEqual([]);
  });
});

describe('door_held_open', () => {
  it('no timer while the door is closed or the contact unknown', () => {
    expect(heldOpenDueAt(SUPERVISION_START, settings)).toBeNull();
    expect(heldOpenDueAt(closedAt(T0), settings)).toBeNull();
    expect(tick(closedAt(T0), T0 + 3_600_000, settings).events).toEqual([]);
  });

  it('falls due heldOpenMs after opening; tick reports it once per opening', () => {
    const opened = change(closedAt(T0), true, T0 + 1_000, 'UNLOCKED').state;
    const due = T0 + 1_000 + settings.heldOpenMs;
    expect(heldOpenDueAt(opened, settings)).toBe(due);

    expect(tick(opened, due - 1, settings).events).toEqual([]);
    const fired = tick(opened, due, settings);
    expect(fired.events).toEqual(['door_held_open']);
    expect(heldOpenDueAt(fired.state, settings)).toBeNull();
    expect(tick(fired.state, due + 1, settings).events).toEqual([]);
    expect(tick(fired.state, due + 3_600_000, settings).events).toEqual([]);
  });

  it('closing in time means no door_held_open', () => {
    const opened = change(closedAt(T0), true, T0, 'UNLOCKED').state;
    const closed = change(opened, false, T0 + settings.heldOpenMs - 1, 'UNLOCKED').state;
    expect(heldOpenDueAt(closed, settings)).toBeNull();
    expect(tick(closed, T0 + settings.heldOpenMs, settings).events).toEqual([]);
  });

  it('resets after closing: the next opening is timed from its own start and reported again', () => {
    let s = change(closedAt(T0), true, T0, 'UNLOCKED').state;
    const first = tick(s, T0 + settings.heldOpenMs, settings);
    expect(first.events).toEqual(['door_held_open']);
    s = change(first.state, false, T0 + 40_000, 'UNLOCKED').state;
    s = change(s, true, T0 + 50_000, 'UNLOCKED').state;
    expect(heldOpenDueAt(s, settings)).toBe(T0 + 50_000 + settings.heldOpenMs);
    expect(tick(s, T0 + 50_000 + settings.heldOpenMs - 1, settings).events).toEqual([]);
    expect(tick(s, T0 + 50_000 + settings.heldOpenMs, settings).events).toEqual(['door_held_open']);
  });

  it('a door found open at start is timed from the first reading', () => {
    const s = initialContact(SUPERVISION_START, true, T0);
    expect(heldOpenDueAt(s, settings)).toBe(T0 + settings.heldOpenMs);
    expect(tick(s, T0 + settings.heldOpenMs, settings).events).toEqual(['door_held_open']);
  });

  it('a tick long overdue still reports only one event', () => {
    const opened = change(closedAt(T0), true, T0, 'UNLOCKED').state;
    expect(tick(opened, T0 + 10 * settings.heldOpenMs, settings).events).toEqual(['door_held_open']);
  });
});

describe('granted_not_opened (issue 30 item 3)', () => {
  it('a grant at a closed door that does not open within the unlock window: once, when the window ends', () => {
    const g = granted(closedAt(T0), T0 + 1_000);
    expect(nextDueAt(g, settings)).toBe(T0 + 1_000 + settings.unlockWindowMs);
    expect(tick(g, T0 + 1_000 + settings.unlockWindowMs - 1, settings).events).toEqual([]);
    const fired = tick(g, T0 + 1_000 + settings.unlockWindowMs, settings);
    expect(fired.events).toEqual(['granted_not_opened']);
    expect(nextDueAt(fired.state, settings)).toBeNull();
    expect(tick(fired.state, T0 + 3_600_000, settings).events).toEqual([]);
  });

  it('the door opened within the window: nothing; opening later is door_forced, not also granted_not_opened', () => {
    const g = granted(closedAt(T0), T0);
    const opened = change(g, true, T0 + 2_000, 'UNLOCKED');
    expect(opened.events).toEqual(['door_opened']);
    expect(tick(opened.state, T0 + settings.unlockWindowMs, settings).events).toEqual([]);
  });

  it('a door without a contact reading, or already open, cannot tell: nothing', () => {
    expect(nextDueAt(granted(SUPERVISION_START, T0), settings)).toBeNull();
    const open = initialContact(SUPERVISION_START, true, T0);
    const g = granted(open, T0 + 1_000);
    expect(tick(g, T0 + 1_000 + settings.unlockWindowMs, settings).events).toEqual([]);
  });

  it('a second grant while one waits replaces it: one event, timed from the last', () => {
    const g = granted(granted(closedAt(T0), T0), T0 + 3_000);
    expect(tick(g, T0 + settings.unlockWindowMs, settings).events).toEqual([]);
    expect(tick(g, T0 + 3_000 + settings.unlockWindowMs, settings).events).toEqual(['granted_not_opened']);
  });

  it('an exit request is not a grant: nothing expected of it', () => {
    expect(nextDueAt(authorized(closedAt(T0), T0), settings)).toBeNull();
  });
});
