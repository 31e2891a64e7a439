import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT } from './cli.js';

/**
 * The tree as a fresh clone has it (plus a developer's new, not ignored files) copied to `dest`: never node_modules,
 * dist or build. What the installer's and the package's tests build from, with their own npm steps.
 */
export function cleanCopy(dest: string): void {
  const listed = spawnSync('git', ['ls-files', '-z', '-co', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`a clean copy of the tree takes the files git lists and needs a git checkout: ${listed.stderr}`);
  for (const file of listed.stdout.split('\0')) {
    if (!file || !existsSync(join(ROOT, file))) continue; // a tracked file deleted in the work tree
    mkdirSync(dirname(join(dest, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(dest, file)); // keeps the mode (scripts stay executable)
  }
}
