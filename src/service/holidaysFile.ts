import { readFileSync, statSync } from 'node:fs';
import { holidaysMessageSchema } from '../protocol/lockdown.js';
import { DoorAgentError, EXIT_INVALID_CONFIG, InputError, describeFsError } from '../util/errors.js';
import type { Problem } from '../util/issues.js';

/** A year of holidays is a few hundred bytes; anything this large is the wrong file. */
const MAX_BYTES = 256 * 1024;
/** As many dates as one P/holidays message may carry (holidaysMessageSchema). */
const MAX_DATES = 1000;

// The agent's own rule for a date (it exists: 2026-02-30 does not), so the service never publishes a date the
// doors would refuse, which would make them refuse the whole message.
const dateSchema = holidaysMessageSchema.shape.dates.element;

/** A real calendar date, YYYY-MM-DD. */
function isDate(text: string): boolean {
  // Checked here first: the shared schema throws (RangeError from toISOString) on a month or day out of range
  // such as 2026-13-01, instead of refusing it.
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || Number.isNaN(Date.parse(`${text}T00:00:00Z`))) return false;
  return dateSchema.safeParse(text).success;
}

/**
 * Reads `server.holidaysFile`: one date YYYY-MM-DD per line; blank lines and `#` comments (whole lines or after
 * the date) allowed. Returns the dates sorted, without duplicates. A line that is not a date is a configuration
 * error (exit 78) naming the file and the line, so a typo never silently drops a holiday. Read at start only.
 */
export function readHolidaysFile(file: string): string[] {
  let text: string;
  try {
    const size = statSync(file).size;
    if (size > MAX_BYTES) {
      throw new InputError(
        `${file} (server.holidaysFile) is invalid`,
        [{ path: '(file)', message: `${size} bytes; a holidays file is at most ${MAX_BYTES} bytes` }],
        EXIT_INVALID_CONFIG,
      );
    }
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof InputError) throw err;
    throw new DoorAgentError(`cannot read the holidays file ${file} (server.holidaysFile): ${describeFsError(err)}`, {
      cause: err,
      exitCode: EXIT_INVALID_CONFIG,
    });
  }
  const { dates, problems } = parseHolidays(text);
  if (problems.length > 0) throw new InputError(`${file} (server.holidaysFile) is invalid`, problems, EXIT_INVALID_CONFIG);
  return dates;
}

/** The dates of a holidays file's text, and a problem for each line that is not one. */
function parseHolidays(text: string): { dates: string[]; problems: Problem[] } {
  const dates = new Set<string>();
  const problems: Problem[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (line === '') return;
    if (isDate(line)) dates.add(line);
    else
      problems.push({
        path: `line ${i + 1}`,
        message: `${JSON.stringify(line.slice(0, 40))} is not a date YYYY-MM-DD (one date per line; # starts a comment)`,
      });
  });
  if (dates.size > MAX_DATES) problems.push({ path: '(file)', message: `${dates.size} dates; at most ${MAX_DATES}` });
  return { dates: [...dates].sort(), problems };
}
