import type { LockStateName } from './relay.js';

/**
 * The door as Home Assistant's MQTT lock shows it (docs/mqtt.md, "Home Assistant"), from the facts the agent has:
 * what the relay was driven to and when, whether that write failed, and the door contact. Pure.
 *
 * - JAMMED: the last relay write failed; or the relay was driven locked while the door stood open and the door
 *   still stands open `jammedAfterMs` later (the relay and the contact disagree: a lock cannot hold a door that
 *   is not closed).
 * - OPEN: the contact says the door stands open, whatever the relay (a door forced open too: the lock did lock).
 * - LOCKED / UNLOCKED: the relay's state.
 *
 * Home Assistant's LOCKING, UNLOCKING and OPENING are never reported: a relay moves at once, there is no motor to
 * wait for (the end of a timed unlock is the state's `relock_at`).
 */
export type HaLockState = 'LOCKED' | 'UNLOCKED' | 'OPEN' | 'JAMMED';

export interface LockFacts {
  /** What the relay was last driven to. */
  relay: LockStateName;
  /** When it was driven there (monotonic ms). */
  drivenAt: number;
  /** The last write to the relay failed: it may not be at `relay`'s level. */
  writeFailed: boolean;
  /** The contact and since when it reads so (monotonic ms); null without a contact (or before its first reading). */
  contact: { open: boolean; since: number } | null;
}

export interface HaLockReport {
  state: HaLockState;
  /** When the state changes without a new fact (monotonic ms: OPEN turning JAMMED); null: only a new fact changes it. */
  changesAt: number | null;
}

export function haLockState(facts: LockFacts, now: number, jammedAfterMs: number): HaLockReport {
  if (facts.writeFailed) return { state: 'JAMMED', changesAt: null };
  const { contact } = facts;
  if (contact === null || !contact.open) return { state: facts.relay, changesAt: null };
  // Open since before the relay was driven locked: the bolt or the magnet never got hold of the door.
  if (facts.relay === 'LOCKED' && contact.since <= facts.drivenAt) {
    const jammedAt = facts.drivenAt + jammedAfterMs;
    return now >= jammedAt ? { state: 'JAMMED', changesAt: null } : { state: 'OPEN', changesAt: jammedAt };
  }
  return { state: 'OPEN', changesAt: null };
}
