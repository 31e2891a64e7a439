import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DoorAgentError } from '../../util/errors.js';
import { installedPackage } from './dpkg.js';
import { installerSwitch } from './installerSwitch.js';
import { PACKAGE_COMMAND, packageSwitch } from './packageSwitch.js';
import { programDirs } from './programDirs.js';
import type { ProgramSwitch } from './programSwitch.js';

/**
 * The program this board runs: the installer's when `/opt/door-agent` exists (the units it writes to /etc win over
 * a package's), else the door-agent package dpkg has installed (only in the root it runs in: `--root` is `/`).
 * A DoorAgentError when there is neither.
 */
export async function installedProgram(root: string): Promise<ProgramSwitch> {
  const dirs = programDirs(root);
  if (existsSync(dirs.app)) return installerSwitch(dirs);
  const pkg = root === '/' ? await installedPackage() : null;
  if (pkg !== null) return packageSwitch(pkg);
  throw new DoorAgentError(
    `no program installed in ${dirs.app} and no door-agent package installed${root === '/' ? '' : ` (a package is updated in its own root: --root /)`}: ` +
      'an update replaces what scripts/install.sh or the Debian package installed',
  );
}

/** The installed door-agent command in `root`, which runs whatever program is installed (a test root's daemon is started with it). */
export function installedCommand(root: string): string {
  return existsSync(programDirs(root).app) ? join(root, 'usr/local/bin/door-agent') : PACKAGE_COMMAND;
}
