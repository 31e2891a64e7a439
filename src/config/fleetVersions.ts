import { parse as parseYaml } from 'yaml';
import type { KeyObject } from 'node:crypto';
import { keptConfigPath, readKeptConfig, type KeptConfig, type KeptName } from '../fleet/appliedConfig.js';
import { mergeUnderBoard } from '../fleet/boardMerge.js';
import { deliveryProblem } from '../fleet/configDelivery.js';
import { ed25519FromPem } from '../protocol/fleetSigning.js';
import { InputError } from '../util/errors.js';
import { readKeyFile } from '../util/secretFiles.js';
import { DEFAULT_DATA_DIR } from './schema.js';
import { dataDirFromInvalidConfig } from './lenient.js';
import type { AgentOptions } from './options.js';

/*
 * The configuration of an agent of the fleet (docs/fleet.md, "Configuration from the service"): its board file
 * with a version from the service merged under it. At start, the version it applied (fleet/applied.json), else the
 * one before (previous.json), else the board file alone; each version is checked as `config check` checks a file.
 */

/** How a version is read and checked (config/load.ts gives them; the check is `config check`'s own). */
export interface FleetChecks {
  /** The document's YAML as data; throws InputError as the loader does for a file. */
  parseDocument(text: string, source: string): unknown;
  /** The configuration check; throws InputError listing every problem. */
  check(data: unknown, source: string): AgentOptions;
}

/** A board file with a fleet section, as read at start, and the version merged under it. */
export interface FleetStart {
  /** The board file: its path, and its data as parsed (the versions are merged under it). */
  boardPath: string;
  board: Record<string, unknown>;
  /** The version the configuration holds; null: the board file alone (none kept, or none passed its check). */
  version: number | null;
  /** That version as kept (it becomes previous.json when a newer one is applied); null with the board file alone. */
  kept: KeptConfig | null;
  /** Versions kept but not used, with why (each problem as `config check` words it). */
  passedOver: Array<{ file: string; version: number | null; problems: string[] }>;
}

/** A version checked: the configuration it makes with the board file, or its problems. */
export type VersionCheck = { config: AgentOptions } | { problems: string[] };

/**
 * `version` merged under the board file and checked: the signature by the service's key (the board's
 * fleet.servicePublicKeyFile), for this agent (the board's agent.id), its SHA-256, then the merged configuration as
 * `config check` checks a file. The board's agent.dataDir (its default when the file names none) is the one the
 * configuration keeps: the versions are kept there.
 */
export function checkVersion(start: Pick<FleetStart, 'board' | 'boardPath'>, version: KeptConfig, checks: FleetChecks): VersionCheck {
  const source = `configuration version ${version.version} under ${start.boardPath}`;
  const board = withDataDir(start.board);
  const key = serviceKey(board);
  if (typeof key === 'string') return { problems: [key] };
  const agent = board.agent as { id?: unknown } | undefined;
  const delivered = deliveryProblem(version, key, typeof agent?.id === 'string' ? agent.id : '');
  if (delivered !== null) return { problems: [delivered] };
  try {
    const document = checks.parseDocument(version.document, source);
    if (typeof document !== 'object' || document === null || Array.isArray(document)) {
      return { problems: ['(top level): the document is not a mapping of sections (agent, doors, ...)'] };
    }
    return { config: checks.check(mergeUnderBoard(document, board), source) };
  } catch (err) {
    if (err instanceof InputError) return { problems: err.problems.map((p) => `${p.path}: ${p.message}`) };
    throw err;
  }
}

/**
 * The configuration a board file with a fleet section starts with: the version applied, else the previous one, else
 * the board file alone (`boardAlone`, which throws the file's own problems).
 */
export function withFleetVersion(
  board: Record<string, unknown>,
  boardPath: string,
  checks: FleetChecks,
  boardAlone: () => AgentOptions,
): { config: AgentOptions; fleet: FleetStart } {
  const dataDir = dataDirFromInvalidConfig(board, DEFAULT_DATA_DIR);
  const start: FleetStart = { boardPath, board, version: null, kept: null, passedOver: [] };
  for (const name of dataDir === undefined ? [] : (['applied', 'previous'] as KeptName[])) {
    const read = readKeptConfig(dataDir!, name);
    const file = keptConfigPath(dataDir!, name);
    if ('unusable' in read) {
      start.passedOver.push({ file, version: null, problems: [read.unusable] });
      continue;
    }
    if (read.kept === null) continue;
    const checked = checkVersion(start, read.kept, checks);
    if ('config' in checked) {
      start.version = read.kept.version;
      start.kept = read.kept;
      return { config: checked.config, fleet: start };
    }
    start.passedOver.push({ file, version: read.kept.version, problems: checked.problems });
  }
  return { config: boardAlone(), fleet: start };
}

/** The board's data with its agent.dataDir written out (its default when the file names none). */
function withDataDir(board: Record<string, unknown>): Record<string, unknown> {
  const agent = board.agent;
  if (typeof agent !== 'object' || agent === null || Array.isArray(agent) || 'dataDir' in agent) return board;
  return Object.assign({}, board, { agent: Object.assign({}, agent, { dataDir: DEFAULT_DATA_DIR }) });
}

/** The service's public key the board names (fleet.servicePublicKeyFile), or why it cannot be used. */
function serviceKey(board: Record<string, unknown>): KeyObject | string {
  const fleet = board.fleet as { servicePublicKeyFile?: unknown } | undefined;
  const file = fleet?.servicePublicKeyFile;
  if (typeof file !== 'string' || file === '') return 'fleet.servicePublicKeyFile: the board file names no service key: no version can be checked';
  let pem: string;
  try {
    pem = readKeyFile('fleet.servicePublicKeyFile', file, 'public');
  } catch (err) {
    return (err as Error).message;
  }
  try {
    return ed25519FromPem(pem, 'public');
  } catch (err) {
    return `fleet.servicePublicKeyFile: ${file} is not the service's public key: ${(err as Error).message}`;
  }
}

/**
 * A board file's data that does not validate (`door-agent relock`), with the document of the version it applied
 * merged under it, unchecked: its doors are the ones the agent ran last, and their relays are locked too. The data
 * as it is without a fleet section or a readable applied version.
 */
export function withKeptDocument(raw: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (raw === undefined || !('fleet' in raw)) return raw;
  const dataDir = dataDirFromInvalidConfig(raw, DEFAULT_DATA_DIR);
  const read = dataDir === undefined ? null : readKeptConfig(dataDir, 'applied');
  if (read === null || !('kept' in read) || read.kept === null) return raw;
  try {
    const document: unknown = parseYaml(read.kept.document, { maxAliasCount: 100 });
    const merged = mergeUnderBoard(document, raw);
    return typeof merged === 'object' && merged !== null && !Array.isArray(merged) ? (merged as Record<string, unknown>) : raw;
  } catch {
    return raw;
  }
}
