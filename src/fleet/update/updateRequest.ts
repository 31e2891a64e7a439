import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { signedReleaseSchema, updateOfferSchema } from '../../api/fleet.js';
import { describeFsError } from '../../util/errors.js';
import { fsyncDirectory } from '../../util/fsyncDirectory.js';
import { problemsInOneLine } from '../../util/issues.js';
import { writeWhole } from '../../util/wholeFile.js';
import { fleetDir } from '../appliedConfig.js';
import { readPlainFile } from './plainFiles.js';
import { BundleRefused } from './verify.js';

/**
 * `<dataDir>/fleet/update-request.json` (docs/fleet.md, "On the board: an offered update"): the daemon (user
 * door-agent) writes it once the offered bundle is downloaded and checked; its existence starts the root unit
 * door-agent-update.service (systemd/door-agent-update.path), which runs `door-agent update apply --request FILE`
 * and removes it when done. Written whole (a temporary file renamed over it).
 */
export const updateRequestSchema = z.strictObject({
  rollout_id: updateOfferSchema.shape.rollout_id,
  /** The downloaded bundle (an absolute path, in `<dataDir>/fleet/downloads/`). */
  bundle: z.string().regex(/^\/[^\0]*\.tar\.gz$/, 'must be the absolute path of a .tar.gz bundle'),
  signed: signedReleaseSchema,
  /** Written false, and never read: root takes no downgrade from a request (commands/updateApply.ts). */
  allow_downgrade: z.boolean(),
  health_bound_seconds: updateOfferSchema.shape.health_bound_seconds,
});
export type UpdateRequestFile = z.infer<typeof updateRequestSchema>;

/** @internal */
export const updateRequestPath = (dataDir: string) => join(fleetDir(dataDir), 'update-request.json');

/** Written whole (0600), for the path unit to find. */
export function writeUpdateRequest(dataDir: string, request: UpdateRequestFile): void {
  const dir = fleetDir(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeWhole(updateRequestPath(dataDir), `${JSON.stringify(request)}\n`);
  fsyncDirectory(dir);
}

/** The request waiting for the updater (null: none, or not one: the updater refuses it and removes it). */
export function pendingUpdateRequest(dataDir: string): UpdateRequestFile | null {
  try {
    return readUpdateRequest(updateRequestPath(dataDir));
  } catch {
    return null;
  }
}

/** A request is well under a kilobyte. */
const MAX_REQUEST_BYTES = 64 * 1024;

/** A request file, validated; BundleRefused naming what is wrong with it. Read as a plain file (plainFiles.ts): root reads what the daemon wrote. */
export function readUpdateRequest(path: string): UpdateRequestFile {
  let json: unknown;
  try {
    json = JSON.parse(readPlainFile(path, MAX_REQUEST_BYTES).toString('utf8'));
  } catch (err) {
    throw new BundleRefused(`cannot read the update request ${path}: ${err instanceof SyntaxError ? err.message : describeFsError(err)}`, err);
  }
  const parsed = updateRequestSchema.safeParse(json);
  if (!parsed.success) throw new BundleRefused(`${path} is not an update request: ${problemsInOneLine(parsed.error.issues)}`);
  return parsed.data;
}

/** The request removed (whatever the update's outcome: the path unit must not start it again). */
export function removeUpdateRequest(path: string): void {
  rmSync(path, { force: true });
}
