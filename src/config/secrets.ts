import { accessSync, closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { DoorAgentError, describeFsError } from '../util/errors.js';
import { EXIT_INVALID_CONFIG } from './schema.js';
import type { Problem } from '../util/issues.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** Where a secret comes from: a file named in the config, or an environment variable that overrides it. */
interface SecretRef {
  keyPath: string;
  file: string | undefined;
  envName?: string;
  required: boolean;
  /** An OSDP secure channel key: also checked for its form and its file mode. */
  scbk?: boolean;
  /** The command secret: also checked for its length (MIN_COMMAND_SECRET_BYTES). */
  commandSecret?: boolean;
}

/** The parts of a configuration that name files: a validated Config, or the raw data of one that is not. */
export interface FileReferences {
  service?: { apiKeyFile?: unknown } | null;
  mqtt?: { passwordFile?: unknown; commandSecretFile?: unknown; caFile?: unknown; certFile?: unknown; keyFile?: unknown } | null;
  doors?: unknown;
}

const asFile = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

function secretRefs(config: FileReferences): SecretRef[] {
  const refs: SecretRef[] = [];
  if (config.service && typeof config.service === 'object') {
    refs.push({ keyPath: 'service.apiKeyFile', file: asFile(config.service.apiKeyFile), envName: 'DOOR_AGENT_API_KEY', required: true });
  }
  const mqtt = config.mqtt;
  if (mqtt && typeof mqtt === 'object') {
    refs.push({
      keyPath: 'mqtt.passwordFile',
      file: asFile(mqtt.passwordFile),
      envName: 'DOOR_AGENT_MQTT_PASSWORD',
      required: false,
    });
    refs.push({ keyPath: 'mqtt.commandSecretFile', file: asFile(mqtt.commandSecretFile), required: false, commandSecret: true });
    for (const key of ['caFile', 'certFile', 'keyFile'] as const) {
      refs.push({ keyPath: `mqtt.${key}`, file: asFile(mqtt[key]), required: false });
    }
  }
  if (Array.isArray(config.doors)) {
    config.doors.forEach((door: unknown, i) => {
      const reader = door && typeof door === 'object' ? (door as { reader?: { type?: unknown; scbkFile?: unknown } }).reader : undefined;
      if (reader?.type === 'osdp' && asFile(reader.scbkFile)) {
        refs.push({ keyPath: `doors[${i}].reader.scbkFile`, file: asFile(reader.scbkFile), required: false, scbk: true });
      }
    });
  }
  return refs;
}

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
      throw new DoorAgentError(`${keyPath}: ${file} belongs to uid ${stat.uid}, not to the user door-agent runs as (uid ${expectedUid}): chown it to that user`);
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
export const MIN_COMMAND_SECRET_BYTES = 32;

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

/** Every secret or certificate file the config names, checked for readability (config check). */
export function checkReferencedFiles(config: FileReferences, env: Env): Problem[] {
  const problems: Problem[] = [];
  for (const ref of secretRefs(config)) {
    const overridden = ref.envName !== undefined && (env[ref.envName] ?? '') !== '';
    if (overridden) continue;
    if (ref.file === undefined) {
      if (ref.required) {
        problems.push({
          path: ref.keyPath,
          message: `required (or set ${ref.envName ?? 'the environment variable'})`,
        });
      }
      continue;
    }
    try {
      accessSync(ref.file, constants.R_OK);
      if (ref.scbk) readScbk(ref.keyPath, ref.file);
      if (ref.commandSecret) readCommandSecret(ref.file);
    } catch (err) {
      const message = err instanceof DoorAgentError ? err.message.replace(`${ref.keyPath}: `, '') : `cannot read ${ref.file}: ${describeFsError(err)}`;
      problems.push({ path: ref.keyPath, message });
    }
  }
  return problems;
}
