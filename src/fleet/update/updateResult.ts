import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { fleetReportSchema } from '../../api/fleet.js';
import { DoorAgentError, errorCode } from '../../util/errors.js';
import { writeWhole } from '../../util/wholeFile.js';
import { fleetDir } from '../appliedConfig.js';
import { readPlainFile } from './plainFiles.js';

/**
 * `<dataDir>/fleet/update-result.json` (0600): each step of each update as `door-agent update apply` took it, for
 * the daemon to report (fleetReportSchema's `update`). A JSON array, the latest step last, the oldest dropped past
 * MAX_STEPS; replaced whole at each step (a new file renamed over the old one).
 */
const stateSchema = fleetReportSchema.shape.update.unwrap().shape.state;
export type UpdateState = z.infer<typeof stateSchema>;

const updateStepSchema = z.object({
  /** When (ISO). */
  at: z.string(),
  /** The rollout that offered the update (`--rollout`); null for one applied by hand. */
  rollout_id: z.number().int().positive().nullable(),
  /** The version being installed. */
  version: z.string(),
  state: stateSchema,
  detail: z.string().max(2000),
});
export type UpdateStep = z.infer<typeof updateStepSchema>;

const MAX_STEPS = 50;
/** MAX_STEPS steps of at most 2,000 characters each, with room to spare. */
const MAX_RESULT_BYTES = 1 << 20;

const RESULT_FILE = 'update-result.json';

/**
 * The steps recorded so far (none when there is no file; a file that is not one is started again): what the daemon
 * reports (fleet/updateOffers.ts). Read as a plain file (plainFiles.ts): root appends to it, and must never copy
 * another file it was pointed at into it.
 */
export function readUpdateSteps(dataDir: string): UpdateStep[] {
  return stepsIn(join(fleetDir(dataDir), RESULT_FILE));
}

function stepsIn(path: string): UpdateStep[] {
  let text: string;
  try {
    text = readPlainFile(path, MAX_RESULT_BYTES).toString('utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return [];
    if (err instanceof DoorAgentError) return []; // a link, a FIFO, a giant: not one
    throw err;
  }
  try {
    const parsed = z.array(updateStepSchema).safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

/**
 * Appends one step (the detail cut to what a report carries). Root (door-agent-update.service) writes it in a
 * directory the door-agent user owns, which that user could replace with a link to any other: the directory is
 * opened once, never through a link, and everything below names it through that descriptor.
 */
export function appendUpdateStep(dataDir: string, step: UpdateStep): void {
  const dir = fleetDir(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const fd = openDirectoryItself(dir);
  try {
    const file = join(`/proc/self/fd/${fd}`, RESULT_FILE);
    const detail = step.detail.length > 2000 ? `${step.detail.slice(0, 1999)}…` : step.detail;
    const steps = [...stepsIn(file), Object.assign({}, step, { detail })].slice(-MAX_STEPS);
    // Written by root, the file stays the directory's owner's: the daemon reads it.
    const owner = process.getuid?.() === 0 ? fstatSync(fd) : undefined;
    writeWhole(file, `${JSON.stringify(steps, null, 1)}\n`, owner);
  } finally {
    closeSync(fd);
  }
}

/** `dir` opened as the directory it is; a DoorAgentError when a link (or a file) has its name. */
function openDirectoryItself(dir: string): number {
  try {
    return openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = errorCode(err);
    if (code !== 'ELOOP' && code !== 'ENOTDIR') throw err;
    // O_NOFOLLOW with O_DIRECTORY answers ENOTDIR for a link too.
    const what = lstatSync(dir, { throwIfNoEntry: false })?.isSymbolicLink() ? 'a link' : 'a file';
    throw new DoorAgentError(`${dir} is ${what}, not a directory: the update's record is written only into the directory itself`, { cause: err });
  }
}
