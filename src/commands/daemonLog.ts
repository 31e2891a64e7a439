import { fstatSync } from 'node:fs';
import type { Logger } from 'pino';
import { chooseLogFormat, LOG_FORMATS, type LogFormatChoice } from '../util/logFormat.js';
import { createLogger } from '../util/logger.js';
import { UsageError } from '../util/errors.js';
import { stringOption, type CommandInput } from './context.js';

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;

/** stdout's device and inode, for $JOURNAL_STREAM's comparison; null when it cannot be read. */
function stdoutDevice(): { dev: number; ino: number } | null {
  try {
    const { dev, ino } = fstatSync(1);
    return { dev, ino };
  } catch {
    return null;
  }
}

/**
 * A daemon's logger (run, service; docs/logging.md): --log-level and --log-format over the configured ones, `auto`
 * resolved against stdout (the journal's stream, a terminal, anything else).
 */
export function daemonLogger(input: CommandInput, configured: { level: string; format: LogFormatChoice }, agentId: string, timeZone?: string): Logger {
  const level = stringOption(input, 'log-level') ?? configured.level;
  if (!(LEVELS as readonly string[]).includes(level)) throw new UsageError(`--log-level ${level}: must be one of ${LEVELS.join(', ')}`);
  const choice = stringOption(input, 'log-format') ?? configured.format;
  if (!LOG_FORMATS.includes(choice as LogFormatChoice)) throw new UsageError(`--log-format ${choice}: must be one of ${LOG_FORMATS.join(', ')}`);
  const format = chooseLogFormat(choice as LogFormatChoice, {
    journalStream: input.ctx.env.JOURNAL_STREAM,
    device: stdoutDevice(),
    isTty: input.stdoutIsTty,
  });
  return createLogger({ level, agentId, format, ...(timeZone === undefined ? {} : { timeZone }) });
}
