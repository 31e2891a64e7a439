import { lstatSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { SignedRelease } from '../../api/fleet.js';
import { DoorAgentError, describeFsError } from '../../util/errors.js';
import { checkPackageFields, extractPackage, packageEntry } from './bundlePackage.js';
import { installedPackage, installPackage } from './dpkg.js';
import { type ProgramSwitch, SwitchStranded } from './programSwitch.js';
import { repackInstalled } from './repackInstalled.js';
import { BundleRefused } from './verify.js';

/** The package's door-agent command. */
export const PACKAGE_COMMAND = '/usr/bin/door-agent';

/** Root's own directory for a package update: the bundle's copy, the new package, the installed one rebuilt, the one kept. */
const PACKAGE_UPDATE_DIR = '/var/cache/door-agent-update';

/**
 * The directory made (0700) or found: root's, and not a link (root writes packages there that it installs). What an
 * update that was cut short (a power cut, a kill) left in it is removed: this one starts from a package dpkg has
 * fully installed, so the way back it kept is no longer needed.
 */
function updateDir(): string {
  mkdirSync(PACKAGE_UPDATE_DIR, { recursive: true, mode: 0o700 });
  const stat = lstatSync(PACKAGE_UPDATE_DIR);
  if (!stat.isDirectory() || stat.uid !== (process.getuid?.() ?? 0) || (stat.mode & 0o077) !== 0) {
    throw new DoorAgentError(
      `${PACKAGE_UPDATE_DIR} must be a directory of root's that only root enters (it is ${stat.isDirectory() ? `uid ${stat.uid}, mode ${(stat.mode & 0o777).toString(8)}` : 'not a directory'}): remove it and update again`,
    );
  }
  for (const name of readdirSync(PACKAGE_UPDATE_DIR)) {
    if (name === 'update' || name.startsWith('bundle-')) rmSync(join(PACKAGE_UPDATE_DIR, name), { recursive: true, force: true });
  }
  return PACKAGE_UPDATE_DIR;
}

/**
 * A board installed from the Debian package (docs/fleet.md, "A board installed from the package"): the release's
 * own package (the bundle's `.package/door-agent_<version>_<arch>.deb`, checked to be that release) installed with
 * dpkg while the daemon is stopped; the way back is the installed version's package, rebuilt from dpkg's records
 * before anything is replaced (repackInstalled.ts) into `/var/cache/door-agent-update/update/`, and installed again.
 * Once the new version is healthy, that copy is kept as `/var/cache/door-agent-update/door-agent_<version>_<arch>.deb`
 * (only the last one).
 */
export function packageSwitch(pkg: { version: string; arch: string; status: string }): ProgramSwitch {
  if (pkg.status !== 'ii') {
    throw new DoorAgentError(
      `the door-agent package is not fully installed (dpkg-query says ${pkg.status}, not ii): finish it first (sudo dpkg --configure -a, or sudo apt install --reinstall door-agent)`,
    );
  }
  const dir = updateDir();
  const installed = pkg.version;
  const work = join(dir, 'update');
  const previous = join(work, `door-agent_${installed}_${pkg.arch}.deb`);
  /** The copy of the installed version is all that is left of it: never removed. */
  let stranded = false;
  let next = '';
  let version = '';
  const removeWork = () => {
    if (!stranded) rmSync(work, { recursive: true, force: true });
  };
  const byHand = () => `sudo dpkg --install ${previous}`;
  return {
    installed,
    incomingPrefix: join(dir, 'bundle-'),
    prepare: async (bundle: string, signed: SignedRelease) => {
      const { manifest } = signed;
      version = manifest.version;
      mkdirSync(work, { mode: 0o700 });
      const entry = packageEntry(manifest);
      next = join(work, basename(entry));
      if (!(await extractPackage(bundle, manifest, next))) {
        throw new BundleRefused(
          `${bundle} carries no Debian package (${entry}): this board runs door-agent's package, and takes a release that carries one (npm run release puts it in)`,
        );
      }
      await checkPackageFields(next, manifest, `the bundle's ${entry}`);
      await repackInstalled(installed, work, previous);
      return `the bundle's ${entry} is ${version} for ${manifest.arch}; the installed ${installed} rebuilt from dpkg's records as ${previous}, the way back`;
    },
    discard: removeWork,
    forward: async () => {
      try {
        await installPackage(next);
      } catch (err) {
        const now = await installedPackage();
        if (now?.status === 'ii' && now.version === installed)
          throw new DoorAgentError(`${(err as Error).message}; dpkg left ${installed} installed`, { cause: err });
        try {
          await installPackage(previous);
        } catch (again) {
          stranded = true;
          throw new SwitchStranded(`${(err as Error).message}; installing ${installed} again failed too: ${(again as Error).message} (by hand: ${byHand()})`, {
            cause: err,
          });
        }
        throw new DoorAgentError(`${(err as Error).message}; ${installed} installed again`, { cause: err });
      }
      return `dpkg installed ${version} (/usr/lib/door-agent)`;
    },
    keep: () => {
      const kept = join(dir, basename(previous));
      try {
        for (const name of readdirSync(dir)) if (/^door-agent_.*\.deb$/.test(name)) rmSync(join(dir, name), { force: true });
        renameSync(previous, kept);
      } catch (err) {
        // The new version runs and is healthy: only the way back by hand is lost.
        removeWork();
        return `${installed} could not be kept as ${kept}: ${describeFsError(err)}`;
      }
      removeWork();
      return `${installed} kept as ${kept} (sudo apt install --allow-downgrades ${kept} goes back to it)`;
    },
    back: async () => {
      try {
        await installPackage(previous);
      } catch (err) {
        stranded = true;
        throw err;
      }
      removeWork();
      return `dpkg installed ${installed} again, from its copy`;
    },
    byHand,
  };
}
