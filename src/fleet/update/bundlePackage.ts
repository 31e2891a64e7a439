import { closeSync, constants, fchmodSync, openSync, writeSync } from 'node:fs';
import type { ReleaseManifest } from '../../api/fleet.js';
import { readBundle } from './bundleStream.js';
import { debField } from './dpkg.js';
import { withoutDotSlash } from './releaseInfo.js';
import { TarError, type TarEntry } from './tarReader.js';
import { BundleRefused } from './verify.js';

/**
 * The Debian package a release bundle carries beside the program (scripts/release-bundle.sh): the same program as
 * `door-agent_<version>_<arch>.deb`, in the bundle's `.package/` directory, for the boards installed from the package.
 * The installer's layout leaves that directory out when it unpacks (unpack.ts).
 */
const PACKAGE_DIR = '.package';

/** The package's path in a bundle of that version and architecture. */
export const packageEntry = (manifest: Pick<ReleaseManifest, 'version' | 'arch'>) => `${PACKAGE_DIR}/door-agent_${manifest.version}_${manifest.arch}.deb`;

/** Whether a bundle path lies in the package's directory (not part of the program). */
export const inPackageDir = (path: string) => {
  const p = withoutDotSlash(path);
  return p === PACKAGE_DIR || p.startsWith(`${PACKAGE_DIR}/`);
};

/**
 * The bundle's package written to `dest` (created, never over anything), or false when the bundle carries none.
 * BundleRefused when its entry is not a plain file.
 */
export async function extractPackage(bundle: string, manifest: Pick<ReleaseManifest, 'version' | 'arch'>, dest: string): Promise<boolean> {
  const wanted = packageEntry(manifest);
  let fd: number | null = null;
  let found = false;
  let done = false;
  try {
    await readBundle(
      bundle,
      {
        entry: (entry: TarEntry) => {
          if (found || withoutDotSlash(entry.path) !== wanted) return;
          if (entry.type !== 'file') throw new BundleRefused(`${bundle}: its ${wanted} is a ${entry.type}, not a package file`);
          found = true;
          fd = openSync(dest, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
        },
        data: (chunk) => {
          if (fd === null) return;
          for (let written = 0; written < chunk.length; ) written += writeSync(fd, chunk, written);
        },
        entryEnd: () => {
          if (fd === null) return;
          fchmodSync(fd, 0o644);
          closeSync(fd);
          fd = null;
          done = true;
        },
      },
      () => done,
    );
  } catch (err) {
    if (err instanceof TarError) throw new BundleRefused(err.message, err);
    throw err;
  } finally {
    if (fd !== null) closeSync(fd);
  }
  return done;
}

/**
 * The package is door-agent at the signed version and architecture (`dpkg-deb --field`): what the signature covers
 * is the whole bundle, and this says the package in it is the release it names. BundleRefused otherwise.
 */
export async function checkPackageFields(deb: string, manifest: Pick<ReleaseManifest, 'version' | 'arch'>, shownAs: string): Promise<void> {
  const expected: Record<string, string> = { Package: 'door-agent', Version: manifest.version, Architecture: manifest.arch };
  for (const [name, value] of Object.entries(expected)) {
    let found: string;
    try {
      found = await debField(deb, name);
    } catch (err) {
      throw new BundleRefused(`${shownAs} is not a Debian package dpkg-deb reads: ${err instanceof Error ? err.message : String(err)}`, err);
    }
    if (found !== value) throw new BundleRefused(`${shownAs} says ${name}: ${found || '(none)'}; the signed release is ${name}: ${value}`);
  }
}
