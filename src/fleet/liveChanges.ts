/**
 * What a new configuration changes, and whether all of it can change while the agent runs (docs/fleet.md, "What
 * changes live"). Pure: two normalized configurations (AgentOptions) in, the paths that differ out.
 */

/** A door's settings taken from its next unlock on: the door keeps its relay, readers and state. */
const LIVE_DOOR_KEYS = new Set(['unlockSeconds', 'maxUnlockSeconds', 'heldOpenSeconds']);

/**
 * Whether a difference at `path` applies live: agent.logLevel, and an existing door's unlockSeconds,
 * maxUnlockSeconds and heldOpenSeconds (a door is the same when its place in the list and its uuid are: a door
 * added, removed, moved or renumbered differs at `doors[i].uuid` or `doors`, which restarts).
 */
export function appliesLive(path: readonly (string | number)[]): boolean {
  if (path.length === 2 && path[0] === 'agent' && path[1] === 'logLevel') return true;
  return path.length === 3 && path[0] === 'doors' && typeof path[1] === 'number' && LIVE_DOOR_KEYS.has(String(path[2]));
}

/** Every path at which `before` and `after` differ (a list of a new length differs as a whole). */
export function differences(before: unknown, after: unknown, path: (string | number)[] = []): Array<(string | number)[]> {
  if (Object.is(before, after)) return [];
  if (Array.isArray(before) && Array.isArray(after)) {
    if (before.length !== after.length) return [path];
    return before.flatMap((item, i) => differences(item, after[i], [...path, i]));
  }
  if (isPlain(before) && isPlain(after)) {
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    return [...keys].flatMap((key) => differences(before[key], after[key], [...path, key]));
  }
  return [path];
}

/** A path as the configuration's keys are written: `doors[0].unlockSeconds`. */
export function pathText(path: readonly (string | number)[]): string {
  return path.reduce<string>((text, part) => (typeof part === 'number' ? `${text}[${part}]` : text === '' ? part : `${text}.${part}`), '') || '(all of it)';
}

function isPlain(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
