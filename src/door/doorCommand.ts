import type { LockAction } from '../protocol/commands.js';
import type { LockController } from './lockController.js';
import type { DoorOptions } from './options.js';

/**
 * A door as a command from outside sees it (MQTT's door commands, the local control socket): its lock controller
 * and the rules a remote lock or unlock obeys. Absent functions: no such rule at this door.
 */
export interface CommandTarget {
  door: DoorOptions;
  controller: LockController;
  /** In lockdown, unlocks are refused. */
  lockdown?: () => boolean;
  /** The door of its interlock that keeps it from unlocking now, or null. */
  interlock?: () => string | null;
  /** Released by the emergency input: locks are refused. */
  emergency?: () => boolean;
}

/** Why a door may not obey a command now. */
export interface CommandRefusal {
  reason: 'emergency' | 'lockdown' | 'interlock';
  error: string;
}

/**
 * The one set of rules a lock or unlock from outside obeys, whoever asks: a lock is refused while the emergency
 * input releases the door; an unlock in a lockdown, or while another door of its interlock is unlocked or open.
 * Asked in the turn of the event loop that executes (executeCommand), so nothing changes in between.
 * `nameOf` names another door (an interlock's) by its uuid.
 */
export function commandRefusal(d: CommandTarget, action: LockAction, nameOf: (uuid: string) => string): CommandRefusal | null {
  const name = d.door.name;
  if (action.lock) {
    if (d.emergency?.()) return { reason: 'emergency', error: `${name} is released by the emergency input (fire alarm): lock refused until it clears` };
    return null;
  }
  if (d.lockdown?.()) return { reason: 'lockdown', error: `${name} is in lockdown: unlock refused` };
  const blocker = d.interlock?.() ?? null;
  if (blocker !== null) {
    return { reason: 'interlock', error: `${name} is interlocked with ${nameOf(blocker)}, which is unlocked or open: unlock refused` };
  }
  return null;
}

/**
 * Moves the relay (after commandRefusal said nothing against it) and returns the message naming the door and its
 * resulting state. `cause` is what the audit log's `unlocked` / `locked` event says moved it.
 */
export function executeCommand(d: CommandTarget, action: LockAction, cause: string, wallNow: () => number): string {
  const { door, controller } = d;
  if (action.lock) {
    controller.lock(cause);
    return `${door.name} locked`;
  }
  const seconds = action.seconds === 'default' ? door.unlockSeconds : action.seconds;
  // Already unlocked, and held so by the emergency input: nothing to do, and nothing remembered for after it.
  if (controller.released) return `${door.name} is released by the emergency input (fire alarm): unlocked until it clears`;
  const s = controller.unlock(seconds, cause);
  if (s.relockAt === null) return `${door.name} unlocked until locked (held open)`;
  const remaining = Math.max(1, Math.round((s.relockAt - wallNow()) / 1000));
  return `${door.name} unlocked for ${remaining} s`;
}
