import type { DoorOptions } from '../door/options.js';

/** The door settings a new configuration changes while the agent runs (liveChanges.ts says which differences are live). */
type LiveDoorSettings = Pick<DoorOptions, 'uuid' | 'unlockSeconds' | 'maxUnlockSeconds' | 'heldOpenSeconds'>;

/**
 * Gives each running door the live settings of its namesake in `next` (by uuid), in its own options object: the
 * door reads them from its next unlock on and keeps its relay, readers and state (docs/fleet.md, "What changes
 * live"). Returns the doors changed.
 */
export function applyLiveDoorSettings(doors: readonly { readonly options: DoorOptions }[], next: readonly LiveDoorSettings[]): string[] {
  const changed: string[] = [];
  for (const door of doors) {
    const to = next.find((d) => d.uuid === door.options.uuid);
    if (!to) continue;
    const { options } = door;
    if (options.unlockSeconds === to.unlockSeconds && options.maxUnlockSeconds === to.maxUnlockSeconds && options.heldOpenSeconds === to.heldOpenSeconds)
      continue;
    Object.assign(options, { unlockSeconds: to.unlockSeconds, maxUnlockSeconds: to.maxUnlockSeconds, heldOpenSeconds: to.heldOpenSeconds });
    changed.push(options.uuid);
  }
  return changed;
}
