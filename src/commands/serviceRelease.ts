import { loadServiceConfig } from '../config/load.js';
import { signatureFileOf, readSignedRelease } from '../fleet/update/signatureFile.js';
import { BundleRefused, checkSignedFile } from '../fleet/update/verify.js';
import { ed25519FromPem } from '../protocol/fleetSigning.js';
import { BadRequest } from '../service/badRequest.js';
import { NO_RELEASE_KEY, Releases } from '../service/fleet/releases.js';
import { DoorAgentError, EXIT_INVALID_CONFIG, UsageError } from '../util/errors.js';
import { readKeyFile } from '../util/secretFiles.js';
import { configPath, stringOption, type Command } from './context.js';
import { giveToDataDirOwner, openServiceDb } from './service.js';
import { usageLine } from './usage.js';

const KEY_PATH = 'server.fleet.releasePublicKeyFile';

/**
 * `door-agent service release add BUNDLE [--config F]` (docs/fleet.md, "Signed updates"): a signed release bundle
 * stored straight into the service's database, as PUT /fleet/releases stores an upload (the same store, the same
 * checks: the release key's signature of its manifest, its size and SHA-256, not stored twice). The signature is
 * BUNDLE.sig.json, as `door-agent release sign` writes it. Works whether or not the service is running.
 */
export const releaseAddCommand: Command = async (input) => {
  const { ctx } = input;
  const bundle = input.positionals[0];
  if (bundle === undefined) throw new UsageError(`name the bundle: ${usageLine('service release add')}`);
  const path = configPath(stringOption(input, 'config'), ctx.env);
  const config = loadServiceConfig(path);
  const { fleet } = config.server;
  if (!fleet) throw new DoorAgentError(`${path} has no server.fleet section: the fleet is off (docs/fleet.md)`, { exitCode: EXIT_INVALID_CONFIG });
  if (fleet.releasePublicKeyFile === undefined) throw new DoorAgentError(`${path}: ${NO_RELEASE_KEY}`, { exitCode: EXIT_INVALID_CONFIG });
  let releaseKey;
  try {
    releaseKey = ed25519FromPem(readKeyFile(KEY_PATH, fleet.releasePublicKeyFile, 'public'), 'public');
  } catch (err) {
    if (err instanceof DoorAgentError) throw err;
    throw new DoorAgentError(`${KEY_PATH}: ${fleet.releasePublicKeyFile} is not an Ed25519 public key in SPKI PEM (${(err as Error).message})`, {
      cause: err,
      exitCode: EXIT_INVALID_CONFIG,
    });
  }
  const refused = (message: string) => {
    ctx.stderr.write(`door-agent: refused: ${message}\n`);
    return 1;
  };
  let signed;
  try {
    signed = readSignedRelease(signatureFileOf(bundle));
    await checkSignedFile(bundle, signed, releaseKey);
  } catch (err) {
    if (err instanceof BundleRefused) return refused(`${err.message}; nothing was stored`);
    throw err;
  }
  const { manifest } = signed;
  const max = (fleet.maxBundleMegabytes ?? 200) * 1024 * 1024;
  if (manifest.size > max)
    return refused(`${bundle} is ${manifest.size} bytes, over server.fleet.maxBundleMegabytes (${fleet.maxBundleMegabytes ?? 200} MiB); nothing was stored`);
  const db = await openServiceDb(config, ctx);
  try {
    await new Releases(db).store({
      releaseKey,
      version: manifest.version,
      arch: manifest.arch,
      file: bundle,
      received: { sha256: manifest.sha256, size: manifest.size },
      signature: signed.signature,
      by: 'door-agent service release add',
      now: ctx.clock.wallNow(),
    });
    if (db.engine === 'sqlite') giveToDataDirOwner(config.server.dataDir);
  } catch (err) {
    if (err instanceof BadRequest) return refused(err.message);
    throw err;
  } finally {
    await db.close();
  }
  ctx.stdout.write(
    `stored release ${manifest.version} for ${manifest.arch} (${manifest.size} bytes, SHA-256 ${manifest.sha256}): a rollout may offer it now\n`,
  );
  return 0;
};
