import type * as z from 'zod';
import { formatPath } from '../util/issues.js';
import { isUnknownDoorMessage } from './levels.js';
import { KEEP, STAND_IN, standInFor, standInNumber } from './standIns.js';

type Check<T> = (config: T, ctx: z.RefinementCtx<T>) => void;
type Path = ReadonlyArray<PropertyKey>;

/** The checks across keys run also when a key failed its own check (zod would skip them): superRefine's `when`. */
export const EVEN_WITH_PROBLEMS = { when: () => true };

/**
 * The checks across keys (shared pins, readers and buses, references to doors, ...) on the whole file, so one pass
 * names every problem: a key of the wrong type (`resourceId: twelve`) does not hide its door's pin clash.
 *
 * On a file whose keys all passed, the checks run as they are. Otherwise each unreadable value (of the wrong type,
 * missing, not one of the choices) is replaced by a stand-in no other value can equal (config/standIns.ts), and a
 * value that has its type but failed its range or form (12.5 for a whole number) stays. A problem those values
 * could have caused is left out, the key's own problem says it: one at or under such a key, one naming it or a
 * stand-in, and a door reference while a door's uuid, name or resourceId is unreadable. A check that meets a shape no stand-in foresaw
 * stops there; the problems it found stand, and the other checks run.
 */
export function acrossKeys<T>(checks: ReadonlyArray<Check<T>>): Check<T> {
  return (config, ctx) => {
    if (ctx.issues.length === 0) {
      for (const check of checks) check(config, ctx);
      return;
    }
    const unreadable = ctx.issues.filter((issue) => issue.code !== 'unrecognized_keys').map((issue) => issue.path ?? []);
    if (unreadable.some((path) => path.length === 0)) return; // not even a section of keys
    let count = 0;
    const value = structuredClone(config) as T;
    for (const issue of ctx.issues) {
      const standIn = standInFor(issue, () => ++count);
      if (standIn !== KEEP) setAt(value, issue.path ?? [], standIn);
    }
    const found: z.core.$ZodRawIssue[] = [];
    const collect = { value, issues: [], addIssue: (issue: unknown) => void found.push(issue as z.core.$ZodRawIssue) } as unknown as z.RefinementCtx<T>;
    for (const check of checks) {
      try {
        check(value, collect);
      } catch {
        // A check met a shape it cannot read (the file's own problems say why); the other checks still run.
      }
    }
    const caused = causedBy(unreadable, count);
    for (const issue of found) if (!caused(issue)) ctx.addIssue(issue as Parameters<typeof ctx.addIssue>[0]);
  };
}

function setAt(root: unknown, path: Path, value: unknown): void {
  let node = root as Record<PropertyKey, unknown>;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null) return;
    node = next as Record<PropertyKey, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

function startsWith(path: Path, prefix: Path): boolean {
  return prefix.length <= path.length && prefix.every((key, i) => key === path[i]);
}

/** Whether a problem found with stand-ins in place could be their doing rather than the file's. */
function causedBy(unreadable: readonly Path[], standIns: number): (issue: z.core.$ZodRawIssue) => boolean {
  const names = [...unreadable.map((path) => formatPath(path)), ...Array.from({ length: standIns }, (_, i) => String(standInNumber(i + 1))), STAND_IN];
  const doorUnreadable = unreadable.some(
    (p) => p[0] === 'doors' && (p.length <= 2 || (p.length === 3 && ['uuid', 'name', 'resourceId'].includes(String(p[2])))),
  );
  return (issue) => {
    const message = issue.message ?? '';
    return (
      unreadable.some((path) => startsWith(issue.path ?? [], path)) ||
      names.some((name) => message.includes(name)) ||
      (doorUnreadable && isUnknownDoorMessage(message))
    );
  };
}
