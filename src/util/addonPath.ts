import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Where one of our native addons is: node-gyp builds native/NAME.c into <package root>/build/Release/NAME.node, and
 * the code looking for it runs from dist/cli (the installed bundle), dist/src/<dir> (tsc's output) or src/<dir>
 * (the tests). Each ancestor of `fromDir` is tried, nearest first; when none has it, the package root's path
 * (for the error message that says how to build it).
 */
export function addonPath(fromDir: string, name: string): string {
  const candidates: string[] = [];
  let dir = fromDir;
  for (let depth = 0; depth < 4; depth++) {
    dir = dirname(dir);
    candidates.push(join(dir, 'build/Release', `${name}.node`));
  }
  return candidates.find((path) => existsSync(path)) ?? candidates[1]!;
}
