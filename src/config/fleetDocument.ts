import { mergeUnderBoard } from '../fleet/boardMerge.js';
import { InputError } from '../util/errors.js';
import { parseConfigData, parseYaml } from './load.js';

/** Stands for a file only the board has (its API key, the service's public key): the service never reads it. */
const ON_THE_BOARD = '/etc/door-agent/on-the-board';

/**
 * The problems of an agent's configuration version as the service checks it before storing it (docs/fleet.md,
 * "Configuration from the service"), each `path: message` as `door-agent config check` words it: the document
 * merged under a board file as enrolment writes it (the agent's id, the service, the fleet section), then the
 * schema and the checks across keys. What only the board can know is left to the board's own check when the
 * version arrives: the files it names and its data directory, its devices. None when it passes.
 */
export function documentProblems(document: string, agentId: string, serviceUrl: string): string[] {
  const source = `the configuration of ${agentId}`;
  try {
    const data = parseYaml(document, source);
    if (typeof data !== 'object' || data === null || Array.isArray(data)) return ['(top level): the document is not a mapping of sections (agent, doors, ...)'];
    const board = { agent: { id: agentId }, service: { baseUrl: serviceUrl, apiKeyFile: ON_THE_BOARD }, fleet: { servicePublicKeyFile: ON_THE_BOARD } };
    parseConfigData(mergeUnderBoard(data, board), source);
    return [];
  } catch (err) {
    if (err instanceof InputError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
}
