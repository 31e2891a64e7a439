import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ReleaseManifest } from '../api/fleet.js';
import { checkPackageFields, extractPackage, packageEntry } from '../fleet/update/bundlePackage.js';
import { checkReleaseInfo, checkSignedFile, BundleRefused } from '../fleet/update/verify.js';
import { readSignedRelease, signatureFileOf, signRelease, writeSignedRelease } from '../fleet/update/signatureFile.js';
import { TarError } from '../fleet/update/tarReader.js';
import { ed25519FromPem } from '../protocol/fleetSigning.js';
import { DoorAgentError, UsageError, describeFsError } from '../util/errors.js';
import { stringOption, type Command, type CommandInput } from './context.js';
import { usageLine } from './usage.js';

/** An Ed25519 key from its PEM file; a DoorAgentError naming the file when it is not one. */
export function readKeyFile(path: string, kind: 'private' | 'public'): ReturnType<typeof ed25519FromPem> {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    throw new DoorAgentError(`cannot read the key ${path}: ${describeFsError(err)}`, { cause: err });
  }
  try {
    return ed25519FromPem(pem, kind);
  } catch (err) {
    const what = kind === 'private' ? 'the private half of an Ed25519 key (PKCS#8 PEM)' : 'the public half of an Ed25519 key (SPKI PEM)';
    throw new DoorAgentError(`${path} is not ${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

function bundleAndKey(input: CommandInput, name: string): { bundle: string; key: string } {
  const bundle = input.positionals[0];
  const key = stringOption(input, 'key');
  if (bundle === undefined) throw new UsageError(`name the bundle: ${usageLine(name)}`);
  if (key === undefined) throw new UsageError(`--key is required: ${usageLine(name)}`);
  return { bundle, key };
}

/**
 * `door-agent release sign --key release.key BUNDLE` (docs/fleet.md, "Signed updates"): the bundle's manifest (its
 * RELEASE.json's version and architecture, its SHA-256 and size) signed with the release key, into BUNDLE.sig.json.
 */
export const signCommand: Command = async (input) => {
  const { bundle, key } = bundleAndKey(input, 'release sign');
  const privateKey = readKeyFile(key, 'private');
  let signed;
  try {
    signed = await signRelease(bundle, privateKey);
  } catch (err) {
    if (err instanceof TarError) throw new DoorAgentError(`cannot sign ${bundle}: ${err.message}`, { cause: err });
    throw err;
  }
  const out = signatureFileOf(bundle);
  writeSignedRelease(out, signed);
  const { manifest } = signed;
  input.ctx.stdout.write(
    `signed ${bundle}: version ${manifest.version} for ${manifest.arch}, ${manifest.size} bytes, SHA-256 ${manifest.sha256}\nwrote ${out}\n`,
  );
  return 0;
};

/**
 * `door-agent release verify --key release.pub BUNDLE [--signature FILE]`: the checks an agent makes of the bundle
 * itself (the signature, size, SHA-256, RELEASE.json, and the Debian package it carries being that release); exit 1
 * naming the first that fails. A second line says whether boards installed from the package take it.
 */
export const verifyCommand: Command = async (input) => {
  const { bundle, key } = bundleAndKey(input, 'release verify');
  const publicKey = readKeyFile(key, 'public');
  try {
    const signed = readSignedRelease(stringOption(input, 'signature') ?? signatureFileOf(bundle));
    await checkSignedFile(bundle, signed, publicKey);
    await checkReleaseInfo(bundle, signed);
    const carried = await carriedPackage(bundle, signed.manifest);
    input.ctx.stdout.write(`${bundle}: version ${signed.manifest.version} for ${signed.manifest.arch}, signed by the release key: good\n${carried}\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof BundleRefused)) throw err;
    input.ctx.stderr.write(`door-agent: refused: ${err.message}\n`);
    return 1;
  }
};

/** What the bundle says to a board installed from the Debian package: its package checked, or that it has none. */
async function carriedPackage(bundle: string, manifest: ReleaseManifest): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'door-agent-verify-'));
  try {
    const deb = join(dir, 'package.deb');
    const entry = packageEntry(manifest);
    if (!(await extractPackage(bundle, manifest, deb))) return `it carries no Debian package (${entry}): boards installed from the package refuse it`;
    await checkPackageFields(deb, manifest, `its ${entry}`);
    return `it carries ${entry}, that release: boards installed from the package take it`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
