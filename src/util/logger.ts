import { writeSync } from 'node:fs';
import { pino, type DestinationStream, type Logger } from 'pino';
import { journalLine, localTimeFormat, prettyLine, type LogFormat } from './logFormat.js';

/** pino's line turned into its form (logFormat.ts) and written at once. */
function formattedDestination(fd: number, format: Exclude<LogFormat, 'json'>, timeZone: string): DestinationStream {
  const time = localTimeFormat(timeZone);
  const transform = format === 'journal' ? journalLine : (line: string) => prettyLine(line, time);
  return {
    write(line: string) {
      const text = transform(line);
      // A terminal or pipe that takes part of a write takes the rest on the next (EAGAIN is not expected: fd 1 blocks).
      for (let buffer = Buffer.from(text); buffer.length > 0; ) buffer = buffer.subarray(writeSync(fd, buffer));
    },
  };
}

/**
 * Log lines on stdout in `format` (logFormat.ts: json for machines, journal under systemd, pretty at a terminal),
 * written synchronously so that the last lines before a crash are not lost. Never log a secret, a whole card
 * number, a PIN or a token: use hints.
 */
export function createLogger(options: {
  level: string;
  agentId: string;
  destination?: number;
  /** json when not said (a test's or a short command's logger). */
  format?: LogFormat;
  /** The pretty form's times are in this zone (the agent's agent.timezone); the machine's when not said. */
  timeZone?: string;
}): Logger {
  const fd = options.destination ?? 1;
  const format = options.format ?? 'json';
  const destination =
    format === 'json'
      ? pino.destination({ dest: fd, sync: true })
      : formattedDestination(fd, format, options.timeZone ?? new Intl.DateTimeFormat().resolvedOptions().timeZone);
  return pino({ level: options.level, base: { agent: options.agentId }, timestamp: pino.stdTimeFunctions.isoTime }, destination);
}
