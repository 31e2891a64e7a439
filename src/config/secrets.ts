import { accessSync, constants } from 'node:fs';
import { DoorAgentError, describeFsError } from '../util/errors.js';
import type { Problem } from '../util/issues.js';
import { readersOf } from './doorReaders.js';
import { readCommandSecret, readHomeAssistantCode, readScbk, type Env } from '../util/secretFiles.js';

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
  /** Home Assistant's code: also checked for its length and file mode. */
  homeAssistantCode?: boolean;
}

/** The parts of a configuration that name files: a validated Config, or the raw data of one that is not. */
export interface FileReferences {
  service?: { apiKeyFile?: unknown } | null;
  mqtt?: {
    passwordFile?: unknown;
    commandSecretFile?: unknown;
    caFile?: unknown;
    certFile?: unknown;
    keyFile?: unknown;
    homeAssistant?: { codeFile?: unknown } | null;
  } | null;
  doors?: unknown;
  syslog?: { caFile?: unknown; certFile?: unknown; keyFile?: unknown } | null;
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
    const ha = mqtt.homeAssistant;
    if (ha && typeof ha === 'object') {
      refs.push({ keyPath: 'mqtt.homeAssistant.codeFile', file: asFile(ha.codeFile), required: false, homeAssistantCode: true });
    }
  }
  const { syslog } = config;
  if (syslog && typeof syslog === 'object') {
    for (const key of ['caFile', 'certFile', 'keyFile'] as const) refs.push({ keyPath: `syslog.${key}`, file: asFile(syslog[key]), required: false });
  }
  if (Array.isArray(config.doors)) {
    config.doors.forEach((door: unknown, i) => {
      if (!door || typeof door !== 'object') return;
      // A raw file (`readers` may be anything until validated), or the loader's options (the exit reader apart).
      const { reader, readers, exitReader } = door as { reader?: unknown; readers?: unknown; exitReader?: unknown };
      const both = readers && typeof readers === 'object' ? (readers as { entry?: unknown; exit?: unknown }) : { exit: exitReader };
      for (const { key, reader: r } of readersOf({ reader, readers: both })) {
        const osdp = r && typeof r === 'object' ? (r as { type?: unknown; scbkFile?: unknown }) : undefined;
        if (osdp?.type === 'osdp' && asFile(osdp.scbkFile)) {
          refs.push({ keyPath: `doors[${i}].${key.join('.')}.scbkFile`, file: asFile(osdp.scbkFile), required: false, scbk: true });
        }
      }
    });
  }
  return refs;
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
      if (ref.homeAssistantCode) readHomeAssistantCode(ref.file);
    } catch (err) {
      const message = err instanceof DoorAgentError ? err.message.replace(`${ref.keyPath}: `, '') : `cannot read ${ref.file}: ${describeFsError(err)}`;
      problems.push({ path: ref.keyPath, message });
    }
  }
  return problems;
}
