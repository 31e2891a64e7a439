import type { Problem } from '../util/issues.js';

/**
 * A file's problems as `config check` and `run` print them: each once (a problem two checks find is one problem),
 * sorted by key path, a door's index as a number (doors[2] before doors[10]).
 */
export function problemList(problems: readonly Problem[]): Problem[] {
  const seen = new Set<string>();
  const once = problems.filter((p) => {
    const key = `${p.path}\n${p.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return once.sort((a, b) => comparePaths(a.path, b.path));
}

/** Paths compared part by part, a run of digits by its value. */
function comparePaths(a: string, b: string): number {
  const pa = a.match(/\d+|\D+/g) ?? [];
  const pb = b.match(/\d+|\D+/g) ?? [];
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i]!;
    const y = pb[i]!;
    if (x === y) continue;
    const numeric = /^\d/.test(x) && /^\d/.test(y);
    if (numeric) return Number(x) - Number(y);
    return x < y ? -1 : 1;
  }
  return pa.length - pb.length;
}
