import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { DoorAgentError, EXIT_INVALID_CONFIG, describeFsError } from './errors.js';

/**
 * The readers of secret and key files, below every layer that needs one (protocol, hardware and readers, door,
 * sync, MQTT, the service, config): each reads the file safely and never puts the secret in an error message.
 */

export type Env = Readonly<Record<string, string | undefined>>;

/**
 * An OSDP reader's secure channel key (SCBK): 32 hex digits in a file only its owner can read (mode 0600 or
 * stricter). Never logged, never in an error message.
 */
export function readScbk(keyPath: string, file: string, expectedUid: number | undefined = process.getuid?.()): Buffer {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    throw new DoorAgentError(`${keyPath}: cannot read ${file}: ${describeFsError(err)}`, { cause: err });
  }
  try {
    // The mode and owner of the very file read (fstat on its fd: no window between the check and the read).
    const stat = fstatSync(fd);
    if ((stat.mode & 0o077) !== 0) {
      throw new DoorAgentError(`${keyPath}: ${file} is readable by others (mode ${(stat.mode & 0o777).toString(8)}): chmod 600 ${file}`);
    }
    if (expectedUid !== undefined && stat.uid !== expectedUid) {
      throw new DoorAgentError(
        `${keyPath}: ${file} belongs to uid ${stat.uid}, not to the user door-agent runs as (uid ${expectedUid}): chown it to that user`,
      );
    }
    const text = readFileSync(fd, 'utf8').trim();
    if (!/^[0-9a-fA-F]{32}$/.test(text)) throw new DoorAgentError(`${keyPath}: ${file} must hold the key as 32 hex digits (16 bytes)`);
    return Buffer.from(text, 'hex');
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads a secret: the environment variable wins, else the file's content without its trailing newline.
 * The secret itself never appears in an error message.
 */
export function readSecret(keyPath: string, file: string | undefined, env: Env, envName?: string): string | undefined {
  const fromEnv = envName ? env[envName] : undefined;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  if (file === undefined) return undefined;
  let value: string;
  try {
    value = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (err) {
    throw new DoorAgentError(`${keyPath}: cannot read ${file}: ${describeFsError(err)}`, { cause: err });
  }
  if (value === '') throw new DoorAgentError(`${keyPath}: ${file} is empty`);
  return value;
}

/**
 * An HMAC-SHA256 key shorter than its 32-byte output is weaker than the signature it makes, and a short
 * passphrase can be guessed offline from one signed message captured on the broker.
 */
const MIN_COMMAND_SECRET_BYTES = 32;

/**
 * The command secret of mqtt.commandSecretFile (agent and service): at least MIN_COMMAND_SECRET_BYTES bytes,
 * else a configuration error (exit 78) naming the file and the length needed, never the secret.
 */
export function readCommandSecret(file: string | undefined): string | null {
  const secret = readSecret('mqtt.commandSecretFile', file, {});
  if (secret === undefined) return null;
  const bytes = Buffer.byteLength(secret, 'utf8');
  if (bytes < MIN_COMMAND_SECRET_BYTES) {
    throw new DoorAgentError(
      `mqtt.commandSecretFile: ${file} holds a secret of ${bytes} bytes; it must be at least ${MIN_COMMAND_SECRET_BYTES} bytes (for example: openssl rand -hex 32 > ${file})`,
      { exitCode: EXIT_INVALID_CONFIG },
    );
  }
  return secret;
}

/** The shortest Home Assistant code taken: fewer characters are guessed in a few tries at the lock's dialog. */
export const MIN_HOME_ASSISTANT_CODE_LENGTH = 4;
const MAX_HOME_ASSISTANT_CODE_LENGTH = 256;

/**
 * The code Home Assistant asks for before it unlocks (mqtt.homeAssistant.codeFile): the file's content without
 * its trailing newline, MIN_HOME_ASSISTANT_CODE_LENGTH to 256 characters, in a file others cannot read (mode
 * 0600 or 0640). A missing, empty, short or world-readable file is a configuration error (exit 78) naming the
 * key and the file, never the code.
 */
export function readHomeAssistantCode(file: string): string {
  const keyPath = 'mqtt.homeAssistant.codeFile';
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    throw new DoorAgentError(`${keyPath}: cannot read ${file}: ${describeFsError(err)}`, { cause: err, exitCode: EXIT_INVALID_CONFIG });
  }
  try {
    const stat = fstatSync(fd);
    if ((stat.mode & 0o007) !== 0) {
      throw new DoorAgentError(`${keyPath}: ${file} is readable by others (mode ${(stat.mode & 0o777).toString(8)}): chmod 600 ${file}`, {
        exitCode: EXIT_INVALID_CONFIG,
      });
    }
    const code = readFileSync(fd, 'utf8').replace(/\r?\n$/, '');
    if (code === '') throw new DoorAgentError(`${keyPath}: ${file} is empty`, { exitCode: EXIT_INVALID_CONFIG });
    const length = [...code].length;
    if (length < MIN_HOME_ASSISTANT_CODE_LENGTH || length > MAX_HOME_ASSISTANT_CODE_LENGTH) {
      throw new DoorAgentError(
        `${keyPath}: ${file} holds a code of ${length} characters; it must have ${MIN_HOME_ASSISTANT_CODE_LENGTH} to ${MAX_HOME_ASSISTANT_CODE_LENGTH}`,
        { exitCode: EXIT_INVALID_CONFIG },
      );
    }
    return code;
  } finally {
    closeSync(fd);
  }
}

/** A PEM key file is a few hundred bytes; a larger one is not a key. */
const MAX_KEY_FILE_BYTES = 16 * 1024;

/**
 * A key file's PEM text (the fleet's Ed25519 keys, docs/fleet.md). A private key's file must not be readable by
 * others (0600, or 0640 for the service's group); a public key's may be. A missing, empty, oversized or exposed
 * file is a configuration error (exit 78) naming the key and the file, never the key.
 */
export function readKeyFile(keyPath: string, file: string, kind: 'private' | 'public'): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    throw new DoorAgentError(`${keyPath}: cannot read ${file}: ${describeFsError(err)}`, { cause: err, exitCode: EXIT_INVALID_CONFIG });
  }
  try {
    const stat = fstatSync(fd);
    if (kind === 'private' && (stat.mode & 0o007) !== 0) {
      throw new DoorAgentError(`${keyPath}: ${file} is readable by others (mode ${(stat.mode & 0o777).toString(8)}): chmod 600 ${file}`, {
        exitCode: EXIT_INVALID_CONFIG,
      });
    }
    if (stat.size > MAX_KEY_FILE_BYTES) {
      throw new DoorAgentError(`${keyPath}: ${file} is ${stat.size} bytes: not a PEM key`, { exitCode: EXIT_INVALID_CONFIG });
    }
    const text = readFileSync(fd, 'utf8');
    if (text.trim() === '') throw new DoorAgentError(`${keyPath}: ${file} is empty`, { exitCode: EXIT_INVALID_CONFIG });
    return text;
  } finally {
    closeSync(fd);
  }
}
