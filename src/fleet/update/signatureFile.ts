import type { KeyObject } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { releaseManifestSchema, signedReleaseSchema, type SignedRelease } from '../../api/fleet.js';
import { signFleet } from '../../protocol/fleetSigning.js';
import { describeFsError, errorCode } from '../../util/errors.js';
import { problemsInOneLine } from '../../util/issues.js';
import { readPlainFile } from './plainFiles.js';
import { readReleaseInfo } from './releaseInfo.js';
import { BundleRefused, fileDigest } from './verify.js';

/** Where `door-agent release sign` puts a bundle's signature: beside it, `<bundle>.sig.json`. */
export const signatureFileOf = (bundle: string) => `${bundle}.sig.json`;

/** A signature file is a few hundred bytes. */
const MAX_SIGNATURE_BYTES = 64 * 1024;

/**
 * A bundle's signature file, validated; BundleRefused when it is missing (an unsigned bundle) or not one. Read
 * once, whole, as a plain file (plainFiles.ts): root reads it where the daemon's user may write.
 */
export function readSignedRelease(path: string): SignedRelease {
  let text: string;
  try {
    text = readPlainFile(path, MAX_SIGNATURE_BYTES).toString('utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT')
      throw new BundleRefused(`no signature: ${path} does not exist (door-agent release sign makes it): an unsigned bundle is refused`);
    throw new BundleRefused(`cannot read the signature ${path}: ${describeFsError(err)}`, err);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new BundleRefused(`the signature ${path} is not JSON (${(err as Error).message})`);
  }
  const parsed = signedReleaseSchema.safeParse(json);
  if (!parsed.success) throw new BundleRefused(`the signature ${path} is not a release signature: ${problemsInOneLine(parsed.error.issues)}`);
  return parsed.data;
}

/** The manifest of a bundle (its RELEASE.json's version and architecture, its SHA-256 and size), signed with the release key's private half. */
export async function signRelease(bundle: string, privateKey: KeyObject): Promise<SignedRelease> {
  const info = await readReleaseInfo(bundle);
  const digest = await fileDigest(bundle);
  const manifest = releaseManifestSchema.parse({ version: info.version, arch: info.arch, sha256: digest.sha256, size: digest.size });
  return { manifest, signature: signFleet(privateKey, 'release', manifest) };
}

/** The signature file written whole (a temporary file renamed over it). */
export function writeSignedRelease(path: string, signed: SignedRelease): void {
  const temporary = `${path}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(signed, null, 2)}\n`, { mode: 0o644 });
  renameSync(temporary, path);
}
