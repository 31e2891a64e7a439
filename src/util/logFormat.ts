import { zonedClock } from './zonedClock.js';

/**
 * The forms of a log line (docs/logging.md). pino writes one JSON line per record; this turns it into what its
 * reader takes:
 * - `json`: the line as it is, for machines (a pipe, a file, a log shipper);
 * - `journal`: the same line after journald's `<N>` priority prefix (systemd strips it and files the line at that
 *   priority, so `journalctl -u door-agent -p warning` shows the warnings and worse);
 * - `pretty`: for a person at a terminal: local time, the level's name, the message, then the fields that matter.
 */
export type LogFormat = 'pretty' | 'json' | 'journal';
/** As configured: `auto` picks journal under systemd's journal, pretty at a terminal, json otherwise. */
export type LogFormatChoice = LogFormat | 'auto';
export const LOG_FORMATS: readonly LogFormatChoice[] = ['auto', 'pretty', 'json', 'journal'];

/** pino's numeric levels and their names. */
const LEVEL_NAMES: ReadonlyMap<number, string> = new Map([
  [10, 'TRACE'],
  [20, 'DEBUG'],
  [30, 'INFO'],
  [40, 'WARN'],
  [50, 'ERROR'],
  [60, 'FATAL'],
]);

/**
 * syslog's priority for a pino level (sd-daemon(3)): fatal is crit (2), error err (3), warn warning (4), info
 * info (6; notice, 5, is not used), debug and trace debug (7).
 * @internal exported for its test
 */
export function journalPriority(level: number): number {
  if (level >= 60) return 2;
  if (level >= 50) return 3;
  if (level >= 40) return 4;
  if (level >= 30) return 6;
  return 7;
}

/**
 * `auto` resolved: journal when stdout is the stream systemd names in $JOURNAL_STREAM ("device:inode", set for a
 * unit whose output goes to the journal; a shell started from such a unit inherits the variable but not the
 * stream, hence the comparison), pretty when stdout is a terminal, json otherwise.
 */
export function chooseLogFormat(
  choice: LogFormatChoice,
  stdout: { journalStream: string | undefined; device: { dev: number; ino: number } | null; isTty: boolean },
): LogFormat {
  if (choice !== 'auto') return choice;
  if (stdout.journalStream !== undefined && stdout.device !== null && stdout.journalStream === `${stdout.device.dev}:${stdout.device.ino}`) {
    return 'journal';
  }
  return stdout.isTty ? 'pretty' : 'json';
}

/** The record's level, read from the start of pino's line (`{"level":30,...`) without parsing the whole line. */
function levelOf(line: string): number {
  const match = /^\{"level":(\d+)/.exec(line);
  return match ? Number(match[1]) : 30;
}

/** A JSON line as journald takes it: `<N>` then the line. */
export function journalLine(line: string): string {
  return `<${journalPriority(levelOf(line))}>${line}`;
}

/** What every line has, or what the pretty form shows elsewhere. */
const NOT_SHOWN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'agent']);
/** A nested value is shown as compact JSON up to this many characters. */
const MAX_VALUE_CHARS = 120;

function shown(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  if (typeof value !== 'object' || value === null) return String(value);
  const text = JSON.stringify(value);
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS - 1)}…` : text;
}

/** An error field: its message (and code), not its stack; the stack is in the json and journal forms. */
function errorText(err: unknown): string {
  if (typeof err !== 'object' || err === null) return shown(err);
  const { message, code } = err as { message?: unknown; code?: unknown };
  const text = typeof message === 'string' ? message : JSON.stringify(err);
  return JSON.stringify(code === undefined ? text : `${text} (${String(code)})`);
}

/** Times as `2026-11-29 14:05:09.123` in one time zone (zonedClock.ts: its formatter made once, used for every line). */
export function localTimeFormat(timeZone: string): (iso: string) => string {
  const clock = zonedClock(timeZone);
  return (iso) => {
    const at = new Date(iso);
    if (Number.isNaN(at.getTime())) return iso;
    const { date, time } = clock(at.getTime());
    return `${date} ${time}.${String(at.getUTCMilliseconds()).padStart(3, '0')}`;
  };
}

/** A person's line: `2026-11-29 14:05:09.123 WARN  message  door=front err="..."`. */
export function prettyLine(line: string, time: (iso: string) => string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line; // not pino's: as it came
  }
  const level = typeof record.level === 'number' ? record.level : 30;
  const name = (LEVEL_NAMES.get(level) ?? String(level)).padEnd(5);
  const at = typeof record.time === 'string' ? time(record.time) : '';
  const fields: string[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (NOT_SHOWN.has(key) || value === undefined) continue;
    fields.push(`${key}=${key === 'err' ? errorText(value) : shown(value)}`);
  }
  const message = typeof record.msg === 'string' ? record.msg : '';
  return `${at} ${name} ${message}${fields.length > 0 ? `  ${fields.join(' ')}` : ''}\n`;
}
