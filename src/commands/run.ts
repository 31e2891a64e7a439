import { startAgent, type Agent } from '../app.js';
import { systemdNotifier } from '../system/sdNotify.js';
import { watchdogUsecFrom } from '../system/watchdog.js';
import { systemTimers } from '../util/clock.js';
import { createLogger } from '../util/logger.js';
import { loadConfigFor, type CommandContext } from './context.js';

/** Hooks the process gives the daemon: signals to stop on, and a handler for fatal errors. */
export interface ProcessHooks {
  onStopSignal(handler: (signal: string) => void): void;
  onFatal(handler: (err: unknown) => void): void;
  /** Ends the process as a fatal error would (the onFatal handler runs, exit code 1). */
  raiseFatal(err: unknown): void;
}

/**
 * `door-agent run`: the daemon. Resolves with the exit code once stopped by SIGTERM/SIGINT (every door
 * locked, the database closed). A fatal error locks every relay before the process dies.
 */
export async function runDaemon(args: { config: string | undefined }, ctx: CommandContext, hooks: ProcessHooks): Promise<number> {
  const config = loadConfigFor(args.config, ctx);
  const logger = createLogger({ level: config.agent.logLevel, agentId: config.agent.id });
  let agent: Agent | undefined;
  hooks.onFatal((err) => {
    logger.fatal({ err }, 'fatal error: locking every door and exiting');
    agent?.lockAllNow();
  });
  try {
    agent = await startAgent(config, {
      logger,
      clock: ctx.clock,
      timers: systemTimers,
      env: ctx.env,
      notify: systemdNotifier(ctx.env.NOTIFY_SOCKET),
      watchdogUsec: watchdogUsecFrom(ctx.env, process.pid),
      onRelayFailure: (err) => hooks.raiseFatal(err),
    });
  } catch (err) {
    logger.fatal({ err }, 'cannot start');
    throw err;
  }
  const running = agent;
  // The daemon runs until it is stopped, even with nothing else holding the event loop open (a door with neither
  // reader nor broker: its timers and the sync worker do not keep a process alive on their own).
  const keepAlive = setInterval(() => undefined, 1 << 30);
  return new Promise<number>((resolve) => {
    hooks.onStopSignal((signal) => {
      clearInterval(keepAlive);
      logger.info({ signal }, 'stopping: locking every door');
      running
        .stop()
        .then(() => {
          logger.info('stopped');
          resolve(0);
        })
        .catch((err: unknown) => {
          logger.error({ err }, 'error while stopping');
          running.lockAllNow();
          resolve(1);
        });
    });
  });
}
