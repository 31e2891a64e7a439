import { existsSync } from 'node:fs';
import { loadConfig } from '../config/load.js';
import { dataDirFromInvalidConfig, readRawConfig, relaysFromInvalidConfig, type RelayTarget } from '../config/lenient.js';
import { withKeptDocument } from '../config/fleetVersions.js';
import type { GpioOptions } from '../hardware/gpio.js';
import { relayLevel } from '../core/relay.js';
import { createGpioDriver } from '../hardware/createGpio.js';
import { DataDirBusyError, dataDirHolder, lockDataDir, type DataDirLock } from '../system/dataDirLock.js';
import { DoorAgentError } from '../util/errors.js';
import { configPath, stringOption, type Command, type CommandContext } from './context.js';

/** agent.dataDir when the configuration does not say (the schema's default). */
const DEFAULT_DATA_DIR = '/var/lib/door-agent';

/**
 * `door-agent relock`: drives every configured relay to its locked level and exits (systemd ExecStopPost).
 * Needs only the config, not the cache, so it works whatever state the daemon died in. Every door is tried
 * even when one fails, and a configuration that does not validate still has every relay it names locked
 * (then the configuration's problems are reported, exit 78).
 *
 * It never fights a running daemon: while a `door-agent run` holds the data directory's lock (it may hold a
 * door open on purpose), relock drives nothing and fails naming its pid. ExecStopPost runs after the daemon
 * has exited, when the kernel has already let the lock go.
 */
function runRelock(args: { config: string | undefined }, ctx: CommandContext): number {
  return relockFromConfig(configPath(args.config, ctx.env), ctx, 'relock drives no relay under a running daemon');
}

/**
 * What `relock` does, for `run` too (an invalid configuration, a data directory it cannot write): `doing`
 * says, in the refusal, what this command left alone. Throws the configuration's error (exit 78) after
 * locking what it could read; returns 0 when every relay was locked.
 */
export function relockFromConfig(path: string, ctx: CommandContext, doing: string): number {
  let gpio: GpioOptions | null;
  let relays: RelayTarget[];
  let dataDir: string | undefined;
  let configError: DoorAgentError | undefined;
  const failures: string[] = [];
  let locked = 0;
  try {
    const config = loadConfig(path, ctx.env);
    gpio = config.gpio;
    dataDir = config.agent.dataDir;
    relays = config.doors.map((door) => ({
      label: `${door.name} (${door.uuid})`,
      pin: door.relay.pin,
      level: relayLevel('LOCKED', door.failMode, door.relay.activeLow),
    }));
  } catch (err) {
    if (!(err instanceof DoorAgentError)) throw err;
    configError = err;
    // A board of the fleet: the doors of the version it applied too (the ones it ran last).
    const raw = withKeptDocument(readRawConfig(path));
    const lenient = relaysFromInvalidConfig(raw);
    gpio = lenient.gpio;
    relays = lenient.relays;
    dataDir = dataDirFromInvalidConfig(raw, DEFAULT_DATA_DIR);
    failures.push(...lenient.skipped);
  }
  const lock = holdAgainstDaemon(dataDir, doing);
  try {
    let driver;
    try {
      driver = gpio ? createGpioDriver(gpio) : undefined;
    } catch (err) {
      failures.push(`gpio driver ${gpio!.driver}: ${err instanceof Error ? err.message : String(err)}`);
    }
    try {
      for (const relay of driver ? relays : []) {
        try {
          driver!.openOutput(relay.pin, relay.level).write(relay.level);
          ctx.stdout.write(`${relay.label}: relay GPIO ${relay.pin} set to ${relay.level} (locked)\n`);
          locked++;
        } catch (err) {
          failures.push(`${relay.label}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    } finally {
      driver?.close();
    }
  } finally {
    lock?.release();
  }
  if (configError) {
    const note = failures.length > 0 ? `\nnot locked:\n  ${failures.join('\n  ')}` : '';
    throw new DoorAgentError(`${configError.message}\n(the relays that could be read from it were driven locked anyway: ${locked} locked)${note}`, {
      cause: configError,
      exitCode: configError.exitCode,
    });
  }
  if (failures.length > 0) {
    throw new DoorAgentError(`could not lock ${failures.length} door(s):\n  ${failures.join('\n  ')}`);
  }
  return 0;
}

/**
 * The data directory's lock while the relays are driven, so that no daemon starts meanwhile; throws
 * DataDirBusyError while a daemon holds it. Without a lock to take (no data directory, none that can be written
 * or read from the configuration) the relays are still driven: no daemon can be running there, or none that
 * can be seen, and a door left unlocked by a dead one is worse.
 */
function holdAgainstDaemon(dataDir: string | undefined, doing: string): DataDirLock | null {
  if (dataDir === undefined || !existsSync(dataDir)) return null;
  try {
    return lockDataDir(dataDir, { pid: process.pid, create: false, unwritableExitCode: 1, doing });
  } catch (err) {
    if (err instanceof DataDirBusyError) throw err;
    const holder = dataDirHolder(dataDir);
    if (holder) throw new DataDirBusyError(dataDir, holder.pid, doing);
    return null;
  }
}

export const command: Command = (input) => runRelock({ config: stringOption(input, 'config') }, input.ctx);
