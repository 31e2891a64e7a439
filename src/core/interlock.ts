/**
 * Interlock (a mantrap, issue 26): of a set of doors of one agent at most one may be unlocked or open at a time. A
 * grant, an exit button or a remote unlock at one of them is refused (`interlock`) while another is unlocked or its
 * contact open, and an unlock schedule waits. The emergency release (life safety) overrides it for people's unlocks,
 * not for a schedule. See docs/areas.md.
 */

/** What the interlock needs to know of a door now. */
export interface InterlockDoorState {
  /** The relay is at its unlocked level (a grant, a hold, a schedule, a command). */
  unlocked: boolean;
  /** The contact reads open; false for a door without a contact. */
  open: boolean;
}

/** Each door of an interlock to its interlock's doors (a door is in one interlock at most: checked in the configuration). */
export function interlockIndex(interlocks: ReadonlyArray<{ doors: readonly string[] }>): ReadonlyMap<string, readonly string[]> {
  const index = new Map<string, readonly string[]>();
  for (const group of interlocks) for (const door of group.doors) index.set(door, group.doors);
  return index;
}

/**
 * The door of the group that keeps `door` from unlocking now, or null when it may. A door blocks while it is
 * unlocked or open; a door whose state is not known blocks too (a mantrap fails closed). The emergency release
 * overrides the interlock: never blocked then. The caller checks and unlocks in the same turn of the event loop, so
 * two taps at two doors cannot both pass the check.
 */
export function interlockBlocker(
  group: readonly string[],
  doorStates: ReadonlyMap<string, InterlockDoorState>,
  door: string,
  emergencyActive = false,
): string | null {
  if (emergencyActive) return null;
  for (const other of group) {
    if (other === door) continue;
    const state = doorStates.get(other);
    if (state === undefined || state.unlocked || state.open) return other;
  }
  return null;
}
