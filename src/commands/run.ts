import type { Logger } from 'pino';
import { startAgent, type Agent } from '../app.js';
import { loadAgentConfig } from '../config/load.js';
import type { FleetStart } from '../config/fleetVersions.js';
import type { AgentOptions } from '../config/options.js';
import { EXIT_INVALID_CONFIG } from '../config/schema.js';
import { DataDirUnwritableError, lockDataDir, type DataDirLock } from '../system/dataDirLock.js';
import { systemdNotifier } from '../system/sdNotify.js';
import { batchHelperThreads, linuxThreadScheduler, threadPoolStarted } from '../system/threadPolicy.js';
import { tuneTieringForTaps } from '../system/v8Tiering.js';
import { watchdogUsecFrom } from '../system/watchdog.js';
import { systemTimers } from '../util/clock.js';
import { DoorAgentError } from '../util/errors.js';
import { configPath, stringOption, type Command, type CommandContext, type CommandInput } from './context.js';
import { daemonLogger } from './daemonLog.js';
import { daemonWrites } from './dataDirAccess.js';
import { relockFromConfig } from './relock.js';

/**
 * `door-agent run`: the daemon. Resolves with the exit code once stopped by SIGTERM/SIGINT (every door
 * locked, the database closed). A fatal error locks every relay before the process dies.
 *
 * Before any relay moves, the data directory's lock (system/dataDirLock.ts): a second daemon on the same
 * directory exits at once, naming the first, and leaves the relays to it. An invalid configuration, or a data
 * directory it cannot write, drives every relay it can read locked (as `door-agent relock`) and exits 78.
 */
async function runDaemon(args: { config: string | undefined }, input: CommandInput): Promise<number> {
  const { ctx } = input;
  const path = configPath(args.config, ctx.env);
  let config: AgentOptions;
  let fleetStart: FleetStart | null;
  try {
    ({ config, fleet: fleetStart } = loadAgentConfig(path, ctx.env));
  } catch (err) {
    if (!(err instanceof DoorAgentError) || err.exitCode !== EXIT_INVALID_CONFIG) throw err;
    // Throws the configuration's problems (exit 78) once every relay it can read is locked.
    relockFromConfig(path, ctx, 'this one exits without driving any relay');
    throw err;
  }
  const dataLock = lockForDaemon(config, path, ctx);
  try {
    return await serve(config, fleetStart, input);
  } finally {
    dataLock.release();
  }
}

function lockForDaemon(config: AgentOptions, path: string, ctx: CommandContext): DataDirLock {
  const dataDir = config.agent.dataDir;
  try {
    return lockDataDir(dataDir, {
      pid: process.pid,
      create: true,
      unwritableExitCode: EXIT_INVALID_CONFIG,
      doing: 'this one exits without touching any relay',
      mustWrite: daemonWrites(dataDir),
    });
  } catch (err) {
    if (!(err instanceof DataDirUnwritableError)) throw err;
    // Nothing may be left unlocked by a daemon that will not start (relock's own rule keeps it off a live one).
    let relocked: string;
    try {
      relockFromConfig(path, ctx, 'this one exits without driving any relay');
      relocked = 'every relay was driven locked';
    } catch (relockErr) {
      relocked = `relays not all locked: ${relockErr instanceof Error ? relockErr.message : String(relockErr)}`;
    }
    throw new DoorAgentError(`${err.message} (${relocked})`, { cause: err, exitCode: err.exitCode });
  }
}

/** The daemon proper, once the data directory is its own. */
async function serve(config: AgentOptions, fleetStart: FleetStart | null, input: CommandInput): Promise<number> {
  const { ctx, hooks } = input;
  // Before the doors' code first runs: V8 then optimizes the tap path, run once a tap, as it would a busy one.
  tuneTieringForTaps();
  const logger = daemonLogger(input, { level: config.agent.logLevel, format: config.agent.logFormat }, config.agent.id, config.agent.timezone);
  let agent: Agent | undefined;
  // The stop signal is taken before the agent starts: a SIGTERM or Ctrl-C during the start stops it cleanly once
  // it is up (every relay driven locked first), instead of killing the process between two relay writes.
  let stopRequested: { signal: string; why?: string } | null = null;
  let stopNow: ((signal: string, why?: string) => void) | null = null;
  const requestStop = (signal: string, why?: string) => {
    if (stopNow) stopNow(signal, why);
    else stopRequested = why === undefined ? { signal } : { signal, why };
  };
  hooks.onStopSignal((signal) => requestStop(signal));
  // --log-level wins over agent.logLevel, also over one changed live by the fleet.
  const levelFlag = stringOption(input, 'log-level');
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
      fleetStart,
      // A configuration version that needs a restart: stopped as on SIGTERM, exit 0, systemd starts it again.
      onRestart: (why) => requestStop('restart', why),
      setLogLevel: (level) => {
        if (levelFlag === undefined) logger.level = level;
      },
    });
  } catch (err) {
    logger.fatal({ err }, 'cannot start');
    throw err;
  }
  const running = agent;
  // Not awaited: a stop must never wait for libuv's pool (a slow disk sync, a hung DNS lookup) to answer the walk.
  void batchHelpers(logger);
  // The daemon runs until it is stopped, even with nothing else holding the event loop open (a door with neither
  // reader nor broker: its timers and the sync worker do not keep a process alive on their own).
  const keepAlive = setInterval(() => undefined, 1 << 30);
  return new Promise<number>((resolve) => {
    stopNow = (signal, why) => {
      clearInterval(keepAlive);
      logger.info({ signal }, why ?? 'stopping: locking every door');
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
    };
    const requested: { signal: string; why?: string } | null = stopRequested;
    if (requested !== null) stopNow(requested.signal, requested.why);
  });
}

/**
 * The daemon's helper threads under SCHED_BATCH once they are all there (system/threadPolicy.ts): after the start,
 * the doors already locked and running; the workers started later put themselves under it. Never throws.
 */
async function batchHelpers(logger: Logger): Promise<void> {
  const consequence = "a tap may wait behind V8's compiler on a busy CPU";
  try {
    const scheduler = linuxThreadScheduler();
    if (scheduler instanceof Error) {
      logger.warn({ err: scheduler }, `helper threads left under SCHED_OTHER: ${consequence}`);
      return;
    }
    await threadPoolStarted();
    const { batched, failures } = batchHelperThreads(process.pid, scheduler);
    if (failures.length > 0) logger.warn({ batched, failures }, `helper threads not all under SCHED_BATCH: ${consequence}`);
    else logger.info({ batched }, "helper threads under SCHED_BATCH: they never preempt the doors' thread");
  } catch (err) {
    // The doors run on whatever happened here.
    logger.warn({ err }, `helper threads left under SCHED_OTHER: ${consequence}`);
  }
}

export const command: Command = (input) => runDaemon({ config: stringOption(input, 'config') }, input);
