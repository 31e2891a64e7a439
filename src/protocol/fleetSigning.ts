import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import { canonicalJson } from './signing.js';

/**
 * Ed25519 signatures of the fleet (docs/fleet.md): the service's identity key signs what it hands an agent (the
 * enrolment's challenge and answers, each configuration version); the offline release key signs each release bundle. A
 * signature covers `door-agent fleet v1\n<purpose>\n<canonical JSON>`, so that a signature made for one purpose is
 * never good for another.
 */
export type SignedPurpose = 'enrol-challenge' | 'enrol' | 'grant' | 'config' | 'release';

const DOMAIN = 'door-agent fleet v1';

const signedBytes = (purpose: SignedPurpose, body: unknown) => Buffer.from(`${DOMAIN}\n${purpose}\n${canonicalJson(body)}`, 'utf8');

/** The signature (base64) of `body` for `purpose` with an Ed25519 private key. */
export function signFleet(privateKey: KeyObject, purpose: SignedPurpose, body: unknown): string {
  return sign(null, signedBytes(purpose, body), privateKey).toString('base64');
}

/** Whether `signature` (base64) is the signature of `body` for `purpose` by the holder of `publicKey`. */
export function fleetSignatureMatches(publicKey: KeyObject, purpose: SignedPurpose, body: unknown, signature: string): boolean {
  const bytes = Buffer.from(signature, 'base64');
  if (bytes.length !== 64) return false;
  try {
    return verify(null, signedBytes(purpose, body), publicKey, bytes);
  } catch {
    return false;
  }
}

/** An Ed25519 public key's raw 32 bytes, base64: how keys travel in the fleet's messages. */
export function rawPublicKey(key: KeyObject): string {
  const jwk = key.export({ format: 'jwk' });
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') throw new Error('not an Ed25519 key');
  return Buffer.from(jwk.x, 'base64url').toString('base64');
}

/** The public key of raw 32 bytes (base64); null when they are not 32 bytes. */
export function publicKeyFromRaw(raw: string): KeyObject | null {
  const bytes = Buffer.from(raw, 'base64');
  if (bytes.length !== 32) return null;
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: bytes.toString('base64url') }, format: 'jwk' });
}

/**
 * A key's fingerprint: the first 16 bytes of the SHA-256 of its raw public bytes, in lower-case base32 (26
 * characters). An enrolment code carries it: the agent trusts the service whose answers verify with a key of
 * that fingerprint, and no other (nothing is trusted on first use).
 */
export function fingerprint(publicKey: KeyObject): string {
  return base32(
    createHash('sha256')
      .update(Buffer.from(rawPublicKey(publicKey), 'base64'))
      .digest()
      .subarray(0, 16),
  );
}

/** An Ed25519 key from PEM text (PKCS#8 private or SPKI public); throws with what it is instead. */
export function ed25519FromPem(pem: string, kind: 'private' | 'public'): KeyObject {
  const key = kind === 'private' ? createPrivateKey(pem) : createPublicKey(pem);
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`an Ed25519 key was expected, not ${key.asymmetricKeyType ?? 'an unknown key type'}`);
  return key;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/** RFC 4648 base32, lower case, without padding: letters and digits an installer can read back. */
export function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}
