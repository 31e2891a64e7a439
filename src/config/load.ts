import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { EXIT_INVALID_CONFIG, configSchema, serviceConfigSchema, type Config, type ServiceConfig } from './schema.js';
import type { AgentOptions, ServiceOptions } from './options.js';
import { DoorAgentError, InputError, describeFsError } from '../util/errors.js';
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

/** A configuration is a few kilobytes; a larger file is refused before it is parsed (parsing costs memory). */
const MAX_CONFIG_BYTES = 1024 * 1024;
const MAX_ALIAS_COUNT = 100;

function parseYaml(text: string, source: string): unknown {
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
  const { agent, access, gpio, doors, mqtt, service, power, metrics } = parsed;
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
  const data = parseYaml(text, source);
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

/** Reads, validates and normalizes a configuration file. */
export function loadConfig(path: string): AgentOptions {
  return parseConfig(readConfigText(path), path);
}

/** The file's text, refusing one over MAX_CONFIG_BYTES (exit 78) without reading it whole. */
export function readConfigText(path: string): string {
  let text: string;
  try {
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size > MAX_CONFIG_BYTES) {
        throw new InputError(
          `${path} is not a door-agent configuration`,
          [{ path: '(file)', message: `${size} bytes; a configuration is at most ${MAX_CONFIG_BYTES} bytes` }],
          EXIT_INVALID_CONFIG,
        );
      }
      const buffer = Buffer.alloc(size);
      let read = 0;
      while (read < size) {
        const n = readSync(fd, buffer, read, size - read, read);
        if (n === 0) break;
        read += n;
      }
      text = buffer.subarray(0, read).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw new DoorAgentError(
      `cannot read configuration ${path}: ${describeFsError(err)}. ` +
        'Pass --config FILE or set DOOR_AGENT_CONFIG; config/door-agent.example.yaml is a documented starting point.',
      { cause: err, exitCode: EXIT_INVALID_CONFIG },
    );
  }
  return text;
}
