import type { LockStateName } from './relay.js';
import { withProps } from './objects.js';

/**
 * Door position supervision from the contact (docs/hardware.md, "Running a door"): opened and closed
 * events, door_forced when the door opens while locked without a recent grant or exit request, door_held_open
 * when it stays open too long. A grant or exit request excuses ONE passage (issue 32 item 14): once the door
 * has opened within its window and closed again, the window is spent, and a second opening while locked is
 * forced however long the window was (an accessibility door's 30 s). A grant after which the door did not open
 * within that window is granted_not_opened (once per grant; only a door whose contact has been read can tell).
 * Pure: the caller feeds contact changes and ticks, and runs the timer.
 */
/** The cause of the exit button's unlock. */
export const EXIT_BUTTON_CAUSE = 'exit button';
/** The cause of the relock when a door opened while unlocked closes again (relockOnClose). */
export const CLOSE_RELOCK_CAUSE = 'door closed';

export type SupervisionEvent = 'door_opened' | 'door_closed' | 'door_forced' | 'door_held_open' | 'granted_not_opened';

export interface SupervisionState {
  /** null until the contact has been read. */
  open: boolean | null;
  openedAt: number | null;
  heldOpenReported: boolean;
  /** Last grant or exit request (monotonic ms); -Infinity once its passage is over (or before any). */
  lastAuthorizedAt: number;
  /** The door opened within the window of the last grant or exit request: its closing ends that passage. */
  passageOpened: boolean;
  /** A grant (not an exit request) whose door has not opened yet (monotonic ms), null when none is waiting. */
  grantWaitingSince: number | null;
}

export interface SupervisionSettings {
  /** A grant or exit request this recent excuses an opening while locked (the door's unlockSeconds). */
  unlockWindowMs: number;
  heldOpenMs: number;
}

export const SUPERVISION_START: SupervisionState = {
  open: null,
  openedAt: null,
  heldOpenReported: false,
  lastAuthorizedAt: Number.NEGATIVE_INFINITY,
  passageOpened: false,
  grantWaitingSince: null,
};

/** A grant or exit request: one passage is excused for the next unlockWindowMs. */
export function authorized(state: SupervisionState, now: number): SupervisionState {
  return withProps(state, { lastAuthorizedAt: now, passageOpened: false });
}

/**
 * A grant (card, PIN, token): one passage is excused, and the door is expected to open within the window. Only a
 * door known closed can tell (an open one, or one without a contact, never opens "again"). A later grant replaces
 * one still waiting: one granted_not_opened for the last.
 */
export function granted(state: SupervisionState, now: number): SupervisionState {
  return withProps(authorized(state, now), { grantWaitingSince: state.open === false ? now : null });
}

/** The first reading at start sets the state without events: nobody knows how the door came to be open. */
export function initialContact(state: SupervisionState, open: boolean, now: number): SupervisionState {
  return withProps(state, { open, openedAt: open ? now : null, heldOpenReported: false });
}

export function contactChanged(
  state: SupervisionState,
  open: boolean,
  context: { now: number; lock: LockStateName },
  settings: SupervisionSettings,
): { state: SupervisionState; events: SupervisionEvent[] } {
  if (state.open === null) return { state: initialContact(state, open, context.now), events: [] };
  if (open === state.open) return { state, events: [] };
  if (!open) {
    // The passage is over: the window it used is spent.
    const lastAuthorizedAt = state.passageOpened ? Number.NEGATIVE_INFINITY : state.lastAuthorizedAt;
    return {
      state: withProps(state, { open: false, openedAt: null, heldOpenReported: false, lastAuthorizedAt, passageOpened: false }),
      events: ['door_closed'],
    };
  }
  const events: SupervisionEvent[] = ['door_opened'];
  const excused = context.now - state.lastAuthorizedAt <= settings.unlockWindowMs;
  if (context.lock === 'LOCKED' && !excused) events.push('door_forced');
  return { state: withProps(state, { open: true, openedAt: context.now, heldOpenReported: false, passageOpened: excused, grantWaitingSince: null }), events };
}

/** When granted_not_opened falls due (monotonic ms), or null when no grant is waiting. */
function notOpenedDueAt(state: SupervisionState, settings: SupervisionSettings): number | null {
  return state.grantWaitingSince === null ? null : state.grantWaitingSince + settings.unlockWindowMs;
}

/** When the next supervision event falls due (held open, granted not opened), null when no timer is needed. */
export function nextDueAt(state: SupervisionState, settings: SupervisionSettings): number | null {
  const due = [heldOpenDueAt(state, settings), notOpenedDueAt(state, settings)].filter((d): d is number => d !== null);
  return due.length === 0 ? null : Math.min(...due);
}

/** When door_held_open falls due (monotonic ms), or null when no timer is needed. @internal */
export function heldOpenDueAt(state: SupervisionState, settings: SupervisionSettings): number | null {
  if (!state.open || state.openedAt === null || state.heldOpenReported) return null;
  return state.openedAt + settings.heldOpenMs;
}

export function tick(state: SupervisionState, now: number, settings: SupervisionSettings): { state: SupervisionState; events: SupervisionEvent[] } {
  let next = state;
  const events: SupervisionEvent[] = [];
  const notOpened = notOpenedDueAt(next, settings);
  if (notOpened !== null && now >= notOpened) {
    next = withProps(next, { grantWaitingSince: null });
    events.push('granted_not_opened');
  }
  const held = heldOpenDueAt(next, settings);
  if (held !== null && now >= held) {
    next = withProps(next, { heldOpenReported: true });
    events.push('door_held_open');
  }
  return { state: next, events };
}
