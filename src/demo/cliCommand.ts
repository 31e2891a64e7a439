import { existsSync, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A word as a POSIX shell reads it back: as it is when it is plain, else single-quoted. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * The built CLI, found from this module's place (src/demo in tests, dist/src/demo as tsc writes it, dist/cli in
 * the bundle): package.json's bin, dist/cli/door-agent.js, else tsc's dist/src/cli.js; null when neither is built.
 */
function builtCli(): string | null {
  for (const root of ['../..', '../../..']) {
    for (const cli of ['dist/cli/door-agent.js', 'dist/src/cli.js']) {
      const path = fileURLToPath(new URL(`${root}/${cli}`, import.meta.url));
      if (existsSync(path)) return path;
    }
  }
  return null;
}

function realPath(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/**
 * How a person runs this door-agent at a shell, for the commands the demo prints: `door-agent` when the one on
 * `pathVariable` (PATH) is this one (installed, or npm link), else `node <the built CLI>` (a clone after npm start).
 */
export function cliCommand(pathVariable: string | undefined): string {
  const cli = builtCli();
  if (cli === null) return 'door-agent';
  const target = realPath(cli);
  for (const dir of (pathVariable ?? '').split(delimiter)) {
    if (dir !== '' && realPath(join(dir, 'door-agent')) === target) return 'door-agent';
  }
  return `node ${shellWord(cli)}`;
}
