import { describe, it, expect } from 'vitest';
import {
  SUPERVISION_START,
  authorized,
  contactChanged,
  heldOpenDueAt,
  initialContact,
  tick,
  type SupervisionSettings,
  type SupervisionState,
} from '../../src/core/doorSupervision.js';
import type { LockStateName } from '../../src/core/relay.js';

const settings: SupervisionSettings = { unlockWindowMs: 5_000, heldOpenMs: 30_000 };
const T0 = 100_000;

const closedAt = (now: number) => initialContact(SUPERVISION_START, false, now);
const change = (state: SupervisionState, open: boolean, now: number, lock: LockStateName = 'LOCKED') =>
  contactChanged(state, open, { now, lock }, settings);

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
    expect(change(granted, true, T0 + 1_001 + settings.unlockWindowMs, 'LOCKED').events).toEqual([
      'door_opened',
      'door_forced',
    ]);
    expect(change(granted, true, T0 + 3_600_000, 'LOCKED').events).toEqual(['door_opened', 'door_forced']);
  });

  it('an authorization excuses later openings only while it is recent', () => {
    let s = authorized(closedAt(T0), T0);
    const first = change(s, true, T0 + 1_000);
    expect(first.events).toEqual(['door_opened']);
    s = change(first.state, false, T0 + 2_000).state;
    expect(change(s, true, T0 + 60_000).events).toEqual(['door_opened', 'door_forced']);
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
