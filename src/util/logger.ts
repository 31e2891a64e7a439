import { pino, type Logger } from 'pino';

/**
 * JSON lines on stdout (journald under systemd), written synchronously so that the last lines before a crash
 * are not lost. Never log a secret, a whole card number, a PIN or a token: use hints.
 */
export function createLogger(options: { level: string; agentId: string; destination?: number }): Logger {
  return pino(
    { level: options.level, base: { agent: options.agentId }, timestamp: pino.stdTimeFunctions.isoTime },
    pino.destination({ dest: options.destination ?? 1, sync: true }),
  );
}
