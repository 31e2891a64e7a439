import { readFileSync, rmSync, rmdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as z from 'zod';
import { publicKeyRawSchema } from '../api/fleet.js';
import { DoorAgentError, describeFsError, errorCode } from '../util/errors.js';
import { problemsInOneLine } from '../util/issues.js';
import type { BoardFiles } from './boardFiles.js';

/**
 * The pending record of an enrolment (`<dataDir>/fleet/enrolment.json`, 0600; docs/fleet.md, "Enrolment"): what
 * lets `door-agent enrol` stop and run again without a code. The service's URL, the enrolment's id and poll secret,
 * the key the code named (its fingerprint and the key itself, checked against it), the code's secret's SHA-256 (a
 * run with the same code resumes), and the directories the enrolment made (taken back when it is refused).
 */
const pendingEnrolmentSchema = z.object({
  url: z.url({ protocol: /^https?$/ }),
  enrolment_id: z.uuid(),
  poll_secret: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
  fingerprint: z.string().regex(/^[a-z2-7]{26}$/),
  service_key: publicKeyRawSchema,
  secret_sha256: z.string().regex(/^[0-9a-f]{64}$/),
  made: z.array(z.string()).max(16),
});
export type PendingEnrolment = z.infer<typeof pendingEnrolmentSchema>;

export const pendingEnrolmentFile = (dataDir: string) => join(dataDir, 'fleet', 'enrolment.json');

/** The pending record in `dataDir`, or null when there is none; one that does not read is an error naming the file. */
export function readPendingEnrolment(dataDir: string): PendingEnrolment | null {
  const file = pendingEnrolmentFile(dataDir);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return null;
    throw new DoorAgentError(`cannot read ${file}: ${describeFsError(err)}`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = pendingEnrolmentSchema.safeParse(json);
  if (!parsed.success) {
    const why = json === undefined ? 'not JSON' : problemsInOneLine(parsed.error.issues);
    throw new DoorAgentError(`${file} is not a pending enrolment (${why}): remove it, and enrol with a new code`);
  }
  return parsed.data;
}

/** Writes the record (0600) whole, making its directory (0750) as needed, and names the directories it made. */
export function writePendingEnrolment(files: BoardFiles, dataDir: string, record: Omit<PendingEnrolment, 'made'>): PendingEnrolment {
  const file = pendingEnrolmentFile(dataDir);
  files.dir(dirname(file), 0o750);
  const written: PendingEnrolment = Object.assign({}, record, { made: [...files.madeDirs] });
  files.file(file, `${JSON.stringify(written, null, 2)}\n`, 0o600);
  return written;
}

/** Removes the record, and (`takeBack`) the directories the enrolment made, when nothing else is in them. */
export function removePendingEnrolment(dataDir: string, record: PendingEnrolment, takeBack: boolean): void {
  rmSync(pendingEnrolmentFile(dataDir), { force: true });
  if (!takeBack) return;
  for (const dir of [...record.made].reverse()) {
    try {
      rmdirSync(dir);
    } catch {
      // not empty, or gone: kept as it is
    }
  }
}
