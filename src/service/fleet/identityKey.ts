import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { ed25519FromPem, fingerprint, rawPublicKey } from '../../protocol/fleetSigning.js';
import { DoorAgentError, EXIT_INVALID_CONFIG } from '../../util/errors.js';
import { readKeyFile } from '../../util/secretFiles.js';
import type { FleetServiceOptions } from '../options.js';

/** The fleet's keys as the service holds them (docs/fleet.md, "Keys and what each one proves"). */
export interface FleetKeys {
  /** The identity key's private half: signs the enrolment's answers, the grants, the configuration versions. */
  identity: KeyObject;
  /** Its public half's raw 32 bytes, base64 (what an answer carries), and its fingerprint (what a code carries). */
  publicRaw: string;
  fingerprint: string;
  /** The release key's public half, raw base64 (pinned on each agent at enrolment); null when none is configured. */
  releaseRaw: string | null;
}

/** One key file as an Ed25519 key; a file that holds something else is a configuration error (exit 78) naming it. */
function keyFrom(keyPath: string, file: string, kind: 'private' | 'public'): KeyObject {
  const pem = readKeyFile(keyPath, file, kind);
  try {
    return ed25519FromPem(pem, kind);
  } catch (err) {
    const expected = kind === 'private' ? 'an Ed25519 private key in PKCS#8 PEM' : 'an Ed25519 public key in SPKI PEM';
    // The parser's message names the format it met, never the key's bytes.
    throw new DoorAgentError(`${keyPath}: ${file} is not ${expected} (${(err as Error).message}); door-agent service fleet-keys --out DIR makes the pair`, {
      cause: err,
      exitCode: EXIT_INVALID_CONFIG,
    });
  }
}

/** Reads server.fleet's key files (exit 78 on a missing, exposed or malformed one); the keys are never logged. */
export function loadFleetKeys(options: Pick<FleetServiceOptions, 'identityKeyFile' | 'releasePublicKeyFile'>): FleetKeys {
  const identity = keyFrom('server.fleet.identityKeyFile', options.identityKeyFile, 'private');
  const publicKey = createPublicKey(identity);
  const release = options.releasePublicKeyFile === undefined ? null : keyFrom('server.fleet.releasePublicKeyFile', options.releasePublicKeyFile, 'public');
  return {
    identity,
    publicRaw: rawPublicKey(publicKey),
    fingerprint: fingerprint(publicKey),
    releaseRaw: release === null ? null : rawPublicKey(release),
  };
}

/** A new Ed25519 pair as PEM text: the private half PKCS#8, the public half SPKI (`service fleet-keys`). */
export function newFleetKeyPair(): { privatePem: string; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    publicPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
  };
}
