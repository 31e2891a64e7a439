import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { EXIT_INVALID_CONFIG, configSchema, serviceConfigSchema, type Config, type ServiceConfig } from './schema.js';
import { DoorAgentError, InputError, describeFsError } from '../util/errors.js';
import { problemsFromZod, type Problem } from '../util/issues.js';

export const DEFAULT_CONFIG_PATH = '/etc/door-agent/config.yaml';

function parseYaml(text: string, source: string): unknown {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const problems: Problem[] = doc.errors.map((e) => {
      const pos = e.linePos?.[0];
      return { path: pos ? `line ${pos.line}, column ${pos.col}` : 'YAML', message: (e.message.split('\n')[0] ?? e.code).replace(/ at line \d+, column \d+:?$/, '') };
    });
    throw new InputError(`${source} is not valid YAML`, problems, EXIT_INVALID_CONFIG);
  }
  const data: unknown = doc.toJS();
  if (data === null || data === undefined) {
    throw new InputError(`${source} is invalid`, [{ path: '(top level)', message: 'the file is empty' }], EXIT_INVALID_CONFIG);
  }
  return data;
}

/** Parses and validates configuration text; throws InputError (exit 78) listing every problem. */
export function parseConfig(text: string, source: string): Config {
  const data = parseYaml(text, source);
  const result = configSchema.safeParse(data);
  if (!result.success) {
    throw new InputError(`${source} is invalid`, problemsFromZod(result.error.issues), EXIT_INVALID_CONFIG);
  }
  const parsed = result.data;
  return {
    ...parsed,
    doors: parsed.doors.map((door) => ({ ...door, name: door.name ?? `Door ${door.resourceId}` })),
  };
}

/** The reference service's view of a configuration file (its `server` and `mqtt` sections). */
export function parseServiceConfig(text: string, source: string): ServiceConfig {
  const result = serviceConfigSchema.safeParse(parseYaml(text, source));
  if (!result.success) {
    throw new InputError(`${source} is invalid`, problemsFromZod(result.error.issues), EXIT_INVALID_CONFIG);
  }
  return result.data;
}

export function loadServiceConfig(path: string): ServiceConfig {
  return parseServiceConfig(readConfigText(path), path);
}

/** Reads and validates a configuration file. */
export function loadConfig(path: string): Config {
  return parseConfig(readConfigText(path), path);
}

function readConfigText(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new DoorAgentError(
      `cannot read configuration ${path}: ${describeFsError(err)}. ` +
        'Pass --config FILE or set DOOR_AGENT_CONFIG; config/door-agent.example.yaml is a documented starting point.',
      { cause: err, exitCode: EXIT_INVALID_CONFIG },
    );
  }
  return text;
}
