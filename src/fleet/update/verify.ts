import { createHash, type KeyObject } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import type { SignedRelease } from '../../api/fleet.js';
import { fleetSignatureMatches } from '../../protocol/fleetSigning.js';
import { DoorAgentError, describeFsError } from '../../util/errors.js';
import { readReleaseInfo, type ReleaseInfo } from './releaseInfo.js';
import { TarError } from './tarReader.js';
import { compareVersions } from './versions.js';

/** A bundle this board does not take, and why (nothing has been replaced). */
export class BundleRefused extends DoorAgentError {
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? {} : { cause });
    this.name = 'BundleRefused';
  }
}

/** What a bundle is checked against: this board, and the program installed on it. */
export interface BoardRelease {
  /** Debian's name (update/boardArch.ts). */
  arch: string;
  /** process.versions.modules of the Node.js the program runs with. */
  nodeAbi: string;
  /** package.json's version of the installed program. */
  installedVersion: string;
}

export interface BundleToVerify {
  bundle: string;
  signed: SignedRelease;
  /** The release key's public half pinned on this board. */
  releaseKey: KeyObject;
  board: BoardRelease;
  allowDowngrade: boolean;
}

/** The SHA-256 (hex) and size of a file, read as a stream. */
export async function fileDigest(path: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), size };
}

/**
 * The bundle is the file its signature file names: the signature by `releaseKey` (purpose `release`), then the
 * file's size and SHA-256 as signed. Throws BundleRefused naming what fails.
 */
export async function checkSignedFile(bundle: string, signed: SignedRelease, releaseKey: KeyObject): Promise<void> {
  const { manifest } = signed;
  checkReleaseSignature(bundle, signed, releaseKey);
  let size: number;
  try {
    size = statSync(bundle).size;
  } catch (err) {
    throw new BundleRefused(`cannot read ${bundle}: ${describeFsError(err)}`, err);
  }
  if (size !== manifest.size) {
    throw new BundleRefused(
      `${bundle} is ${size} bytes, the signed manifest says ${manifest.size}: ${size < manifest.size ? 'truncated (an interrupted download?)' : 'not the file that was signed'}`,
    );
  }
  const digest = await fileDigest(bundle);
  if (digest.sha256 !== manifest.sha256) {
    throw new BundleRefused(`the SHA-256 of ${bundle} is ${digest.sha256}, not the ${manifest.sha256} signed: the file was altered or damaged`);
  }
}

/**
 * The manifest signed by `releaseKey` (purpose `release`); BundleRefused otherwise. `bundle` names it in the message.
 */
export function checkReleaseSignature(bundle: string, signed: SignedRelease, releaseKey: KeyObject): void {
  if (!fleetSignatureMatches(releaseKey, 'release', signed.manifest, signed.signature)) {
    throw new BundleRefused(`the signature of ${bundle} does not verify with the release key: signed by another key, or its manifest was altered`);
  }
}

/**
 * The manifest is for this board: its architecture, and a version newer than the installed one (unless a downgrade
 * is allowed). BundleRefused naming what fails. An offered update is checked so before it is downloaded.
 */
export function checkForBoard(bundle: string, signed: SignedRelease, board: Omit<BoardRelease, 'nodeAbi'>, allowDowngrade: boolean): void {
  const { manifest } = signed;
  if (manifest.arch !== board.arch) {
    throw new BundleRefused(`${bundle} is built for ${manifest.arch}; this board is ${board.arch}`);
  }
  const order = compareVersions(manifest.version, board.installedVersion);
  if (order === null) throw new BundleRefused(`cannot compare version ${manifest.version} with the installed version ${board.installedVersion}`);
  if (order <= 0 && !allowDowngrade) {
    const what = order === 0 ? 'the installed version' : `older than the installed ${board.installedVersion}`;
    throw new BundleRefused(`version ${manifest.version} is ${what}: a downgrade (or a reinstall) needs --allow-downgrade`);
  }
}

/** The bundle's own RELEASE.json (its first entry), which must say what the signed manifest says. */
export async function checkReleaseInfo(bundle: string, signed: SignedRelease): Promise<ReleaseInfo> {
  const { manifest } = signed;
  let info: ReleaseInfo;
  try {
    info = await readReleaseInfo(bundle);
  } catch (err) {
    if (err instanceof TarError) throw new BundleRefused(err.message, err);
    throw err;
  }
  if (info.version !== manifest.version || info.arch !== manifest.arch) {
    throw new BundleRefused(`${bundle}'s RELEASE.json says ${info.version} for ${info.arch}, its signed manifest ${manifest.version} for ${manifest.arch}`);
  }
  return info;
}

/**
 * Every check of a release bundle before anything is replaced (docs/fleet.md, "Signed updates"): signed by the
 * pinned release key, its size and SHA-256 as signed, built for this board's architecture, newer than the
 * installed version (unless a downgrade is allowed), its RELEASE.json saying what the manifest says, for this
 * board's Node.js. Throws BundleRefused naming the first that fails; resolves with the bundle's RELEASE.json.
 */
export async function verifyBundle(input: BundleToVerify): Promise<ReleaseInfo> {
  const { bundle, signed, board } = input;
  await checkSignedFile(bundle, signed, input.releaseKey);
  checkForBoard(bundle, signed, board, input.allowDowngrade);
  const info = await checkReleaseInfo(bundle, signed);
  if (info.node_abi !== board.nodeAbi) {
    throw new BundleRefused(
      `${bundle}'s native addons are built for Node.js ABI ${info.node_abi}; this board's Node.js has ABI ${board.nodeAbi} (build the release with the Node.js major version the boards run)`,
    );
  }
  return info;
}
