import { rmSync } from 'node:fs';
import type { SignedRelease } from '../../api/fleet.js';
import { installedVersion, keepForward, switchBack, switchForward, type ProgramDirs } from './programDirs.js';
import type { ProgramSwitch } from './programSwitch.js';
import { unpackBundle } from './unpack.js';

/**
 * The installer's layout (scripts/install.sh, programDirs.ts): the bundle unpacked into /opt/door-agent.new, the
 * switch two renames, the version it replaced kept in /opt/door-agent.prev.
 */
export function installerSwitch(dirs: ProgramDirs): ProgramSwitch {
  const installed = installedVersion(dirs);
  let version = '';
  return {
    installed,
    incomingPrefix: `${dirs.app}.incoming-`,
    prepare: async (bundle: string, signed: SignedRelease) => {
      version = signed.manifest.version;
      rmSync(dirs.next, { recursive: true, force: true });
      const unpacked = await unpackBundle(bundle, dirs.next);
      return `unpacked ${unpacked.files} files into ${dirs.next}`;
    },
    discard: () => rmSync(dirs.next, { recursive: true, force: true }),
    forward: async () => {
      try {
        switchForward(dirs);
      } catch (err) {
        throw new Error(`${err instanceof Error ? err.message : String(err)} (${dirs.app} is ${installed} still)`, { cause: err });
      }
      return `switched: ${dirs.app} is ${version}, ${dirs.prev} keeps ${installed}`;
    },
    keep: () => {
      keepForward(dirs);
      return `${installed} kept in ${dirs.prev}`;
    },
    back: async () => {
      switchBack(dirs);
      return `switched back: ${dirs.app} is ${installed} again`;
    },
    byHand: () => 'scripts/install.sh --rollback',
  };
}
