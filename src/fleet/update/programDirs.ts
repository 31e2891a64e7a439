import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DoorAgentError, describeFsError } from '../../util/errors.js';

/**
 * The installer's layout (scripts/install.sh): the program in /opt/door-agent, the one it replaced in
 * /opt/door-agent.prev, the next one unpacked beside them in /opt/door-agent.new. While an update is on trial, the
 * .prev it found waits in /opt/door-agent.prev-kept, so that a rollback leaves all three as they were.
 */
export interface ProgramDirs {
  app: string;
  next: string;
  prev: string;
  kept: string;
}

export function programDirs(root: string): ProgramDirs {
  const app = join(root, 'opt/door-agent');
  return { app, next: `${app}.new`, prev: `${app}.prev`, kept: `${app}.prev-kept` };
}

/** The installed program's version (its package.json); a DoorAgentError when there is no program installed there. */
export function installedVersion(dirs: ProgramDirs): string {
  const manifest = join(dirs.app, 'package.json');
  try {
    const version = (JSON.parse(readFileSync(manifest, 'utf8')) as { version?: unknown }).version;
    if (typeof version === 'string') return version;
  } catch (err) {
    throw new DoorAgentError(
      `no program installed in ${dirs.app} (${describeFsError(err)} reading ${manifest}): an update replaces what scripts/install.sh installed there`,
      { cause: err },
    );
  }
  throw new DoorAgentError(`${manifest} names no version`);
}

/**
 * The switch, as install.sh makes it (the daemon stopped): the program to .prev, the next one in its place. A rename
 * that fails undoes the ones before it (then throws): the program is where it was.
 */
export function switchForward(dirs: ProgramDirs): void {
  rmSync(dirs.kept, { recursive: true, force: true });
  const hadPrev = existsSync(dirs.prev);
  if (hadPrev) renameSync(dirs.prev, dirs.kept);
  try {
    renameSync(dirs.app, dirs.prev);
  } catch (err) {
    if (hadPrev) renameSync(dirs.kept, dirs.prev);
    throw err;
  }
  try {
    renameSync(dirs.next, dirs.app);
  } catch (err) {
    renameSync(dirs.prev, dirs.app);
    if (hadPrev) renameSync(dirs.kept, dirs.prev);
    throw err;
  }
}

/** The new version is good: the .prev kept aside is no longer needed (the version it replaced is .prev now). */
export function keepForward(dirs: ProgramDirs): void {
  rmSync(dirs.kept, { recursive: true, force: true });
}

/** Back as before the switch (the daemon stopped): the previous program in place, the earlier .prev again; the new one removed. */
export function switchBack(dirs: ProgramDirs): void {
  rmSync(dirs.next, { recursive: true, force: true });
  if (existsSync(dirs.app)) renameSync(dirs.app, dirs.next);
  renameSync(dirs.prev, dirs.app);
  if (existsSync(dirs.kept)) renameSync(dirs.kept, dirs.prev);
  rmSync(dirs.next, { recursive: true, force: true });
}
