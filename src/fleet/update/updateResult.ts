import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { fleetReportSchema } from '../../api/fleet.js';
import { errorCode } from '../../util/errors.js';
import { writeWhole } from '../../util/wholeFile.js';
import { fleetDir } from '../appliedConfig.js';

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

const updateResultPath = (dataDir: string) => join(fleetDir(dataDir), 'update-result.json');

/** The steps recorded so far (none when there is no file; a file that is not one is started again): what the daemon reports (fleet/updateOffers.ts). */
export function readUpdateSteps(dataDir: string): UpdateStep[] {
  let text: string;
  try {
    text = readFileSync(updateResultPath(dataDir), 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return [];
    throw err;
  }
  try {
    const parsed = z.array(updateStepSchema).safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

/** Appends one step (the detail cut to what a report carries). */
export function appendUpdateStep(dataDir: string, step: UpdateStep): void {
  const dir = fleetDir(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const detail = step.detail.length > 2000 ? `${step.detail.slice(0, 1999)}…` : step.detail;
  const steps = [...readUpdateSteps(dataDir), Object.assign({}, step, { detail })].slice(-MAX_STEPS);
  // Written by root (door-agent-update.service), the file stays the data directory's owner's: the daemon reads it.
  const owner = process.getuid?.() === 0 ? statSync(dir) : undefined;
  writeWhole(updateResultPath(dataDir), `${JSON.stringify(steps, null, 1)}\n`, owner);
}
