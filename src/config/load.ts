import { parseDocument } from 'yaml';
import { EXIT_INVALID_CONFIG, configSchema, serviceConfigSchema, type Config, type ServiceConfig } from './schema.js';
import type { AgentOptions, ServiceOptions } from './options.js';
import { InputError } from '../util/errors.js';
import { readConfigText } from './configText.js';
import { DEFAULT_DATA_DIR } from './schema.js';
import { checkReferencedFiles, type FileReferences } from './secrets.js';
import { dataDirProblems } from './hostChecks.js';
import { dataDirFromInvalidConfig } from './lenient.js';
import { withFleetVersion, type FleetChecks, type FleetStart } from './fleetVersions.js';
import type { Env } from '../util/secretFiles.js';
import { problemsFromZod, type Problem } from '../util/issues.js';
import { configProblemVoice } from './problemVoice.js';
import { problemList } from './problemList.js';
import { keypadPolicy } from './keypadLockout.js';
import { configLevels } from './levels.js';
import { emergencyOptions } from './emergencySchema.js';
import { areaOptions, interlockOptions } from './doorGroups.js';
import { siteFormats } from './wiegandFormats.js';
import { formatsFor, type WiegandFormatSpec } from '../core/wiegandFormats.js';
import type { ReaderOptions } from '../door/options.js';

export const DEFAULT_CONFIG_PATH = '/etc/door-agent/config.yaml';

const MAX_ALIAS_COUNT = 100;

export function parseYaml(text: string, source: string): unknown {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const problems: Problem[] = doc.errors.map((e) => {
      const pos = e.linePos?.[0];
      return {
        path: pos ? `line ${pos.line}, column ${pos.col}` : 'YAML',
        message: (e.message.split('\n')[0] ?? e.code).replace(/ at line \d+, column \d+:?$/, ''),
      };
    });
    throw new InputError(`${source} is not valid YAML`, problems, EXIT_INVALID_CONFIG);
  }
  let data: unknown;
  try {
    // yaml refuses documents that expand aliases past a limit (an "alias bomb"): a configuration error too.
    data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    throw new InputError(`${source} is not valid YAML`, [{ path: 'YAML', message: (err as Error).message }], EXIT_INVALID_CONFIG);
  }
  if (data === null || data === undefined) {
    throw new InputError(`${source} is invalid`, [{ path: '(top level)', message: 'the file is empty' }], EXIT_INVALID_CONFIG);
  }
  return data;
}

/** A Wiegand or OSDP reader with the formats its `format:` stands for (the built-ins and the site's). */
function readerWithFormats(site: readonly WiegandFormatSpec[]) {
  return (reader: ReaderOptions): ReaderOptions =>
    reader.type === 'wiegand' || reader.type === 'osdp' ? { ...reader, formats: formatsFor(reader.format ?? 'auto', site) } : reader;
}

/** The normalized options of a validated agent configuration: names given, UUIDs in lower case. */
function agentOptions(parsed: Config): AgentOptions {
  const { agent, access, gpio, doors, mqtt, service, power, metrics, fleet, syslog } = parsed;
  const withFormats = readerWithFormats(siteFormats(parsed.wiegand));
  const emergency = emergencyOptions(parsed);
  return {
    agent,
    access: {
      ...access,
      levels: configLevels(parsed),
      keypadLockout: keypadPolicy(
        access.keypadLockout,
        doors.map((d) => d.keypadLockout),
      ),
    },
    gpio,
    doors: doors.map(({ reader, readers, ...door }) => {
      // `reader` is the entry reader alone; `readers` gives an entry and an exit reader (one or the other: checked).
      const entry = reader ?? readers?.entry;
      return {
        ...door,
        uuid: door.uuid.toLowerCase(),
        name: door.name ?? `Door ${door.resourceId}`,
        ...(entry ? { reader: withFormats(entry) } : {}),
        ...(readers?.exit ? { exitReader: withFormats(readers.exit) } : {}),
        ...(emergency ? { emergencyRelease: emergency.doors.has(door.uuid.toLowerCase()) } : {}),
      };
    }),
    ...(emergency ? { emergency: emergency.options } : {}),
    ...(parsed.areas.length > 0 ? { areas: areaOptions(parsed) } : {}),
    ...(parsed.interlocks.length > 0 ? { interlocks: interlockOptions(parsed) } : {}),
    ...(mqtt ? { mqtt } : {}),
    ...(service ? { service } : {}),
    ...(power ? { power } : {}),
    ...(metrics ? { metrics } : {}),
    ...(fleet ? { fleet } : {}),
    ...(syslog ? { syslog } : {}),
  };
}

function serviceOptions(parsed: ServiceConfig): ServiceOptions {
  const { server, mqtt } = parsed;
  return {
    server: { ...server, resources: server.resources.map((r) => ({ ...r, uuid: r.uuid.toLowerCase() })) },
    ...(mqtt ? { mqtt } : {}),
  };
}

/** Parses, validates and normalizes configuration text; throws InputError (exit 78) listing every problem. */
export function parseConfig(text: string, source: string): AgentOptions {
  return parseConfigData(parseYaml(text, source), source);
}

/** Validates and normalizes configuration data (its YAML parsed); throws InputError (exit 78) listing every problem. */
export function parseConfigData(data: unknown, source: string): AgentOptions {
  // Parsed once per start: zod's compiled fast path (new Function per object schema) costs more than it saves.
  const result = configSchema.safeParse(data, { jitless: true, error: configProblemVoice });
  if (!result.success) {
    throw new InputError(`${source} is invalid`, problemList(problemsFromZod(result.error.issues)), EXIT_INVALID_CONFIG);
  }
  return agentOptions(result.data);
}

/** The reference service's view of a configuration file (its `server` and `mqtt` sections). @internal */
export function parseServiceConfig(text: string, source: string): ServiceOptions {
  const result = serviceConfigSchema.safeParse(parseYaml(text, source), { jitless: true, error: configProblemVoice });
  if (!result.success) {
    throw new InputError(`${source} is invalid`, problemList(problemsFromZod(result.error.issues)), EXIT_INVALID_CONFIG);
  }
  return serviceOptions(result.data);
}

export function loadServiceConfig(path: string): ServiceOptions {
  return parseServiceConfig(readConfigText(path), path);
}

/**
 * What `door-agent config check` checks (commands/configCheck.ts), of configuration data (its YAML parsed): the
 * schema and the checks across keys, the files it names (secrets, keys, certificates) and its data directory.
 * Throws InputError (exit 78) listing every problem, worded as `config check` prints them; the agent checks each
 * configuration version from the service with it (config/fleetVersions.ts).
 */
function checkConfigData(data: unknown, source: string, env: Env): AgentOptions {
  let config: AgentOptions;
  try {
    config = parseConfigData(data, source);
  } catch (err) {
    // Every problem at once: the file's own (the checks across keys too), the files it names and the data
    // directory (where they can be read); a key the schema refused is not reported again.
    if (!(err instanceof InputError) || err.exitCode !== EXIT_INVALID_CONFIG) throw err;
    const raw = typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : undefined;
    const dataDir = raw ? dataDirFromInvalidConfig(raw, DEFAULT_DATA_DIR) : undefined;
    const more = [...(raw ? checkReferencedFiles(raw as FileReferences, env) : []), ...(dataDir ? dataDirProblems(dataDir).problems : [])];
    const known = new Set(err.problems.map((p) => p.path));
    throw new InputError(err.what, problemList([...err.problems, ...more.filter((p) => !known.has(p.path))]), EXIT_INVALID_CONFIG);
  }
  const problems = [...checkReferencedFiles(config, env), ...dataDirProblems(config.agent.dataDir).problems];
  if (problems.length > 0) throw new InputError(`${source} is invalid`, problems, EXIT_INVALID_CONFIG);
  return config;
}

/** How the agent reads and checks a configuration version from the service: as a file, with `config check`'s checks. */
export function fleetChecks(env: Env): FleetChecks {
  return { parseDocument: parseYaml, check: (data, source) => checkConfigData(data, source, env) };
}

/**
 * Reads, validates and normalizes a configuration file. A board file with a `fleet` section gets the version from
 * the service it applied merged under it (config/fleetVersions.ts): `fleet` says which, and which were passed over.
 */
export function loadAgentConfig(path: string, env: Env = {}): { config: AgentOptions; fleet: FleetStart | null } {
  return loadFileWith(path, env, parseConfigData);
}

/**
 * `door-agent config check`'s reading of a file: as loadAgentConfig, the file itself (without a fleet section, or
 * when no version from the service passes) checked as each version is (checkConfigData).
 */
export function loadCheckedConfig(path: string, env: Env): { config: AgentOptions; fleet: FleetStart | null } {
  return loadFileWith(path, env, (data, source) => checkConfigData(data, source, env));
}

function loadFileWith(path: string, env: Env, alone: (data: unknown, source: string) => AgentOptions): { config: AgentOptions; fleet: FleetStart | null } {
  const data = parseYaml(readConfigText(path), path);
  if (typeof data !== 'object' || data === null || Array.isArray(data) || !('fleet' in data)) return { config: alone(data, path), fleet: null };
  return withFleetVersion(data as Record<string, unknown>, path, fleetChecks(env), () => alone(data, path));
}

/** Reads, validates and normalizes a configuration file (with the version from the service: loadAgentConfig). */
export function loadConfig(path: string, env: Env = {}): AgentOptions {
  return loadAgentConfig(path, env).config;
}
