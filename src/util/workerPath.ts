import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DoorAgentError } from './errors.js';

/**
 * Where one of our worker threads' modules is: beside the code that starts it, in dist/cli (the installed bundle,
 * scripts/bundle.mjs) or dist/src/<dir> (tsc's output); from src/<dir> (the tests) it is tsc's, in dist/src/<dir>.
 * `what` names it in the error when neither is there.
 */
export function workerPath(fromDir: string, dir: string, name: string, what: string): string {
  const candidates = [`${name}.js`, `../../dist/src/${dir}/${name}.js`].map((p) => join(fromDir, p));
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new DoorAgentError(`the ${what} is missing (${candidates[0]}): run npm run build`);
  return found;
}
