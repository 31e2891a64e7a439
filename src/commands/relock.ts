import { loadConfig } from '../config/load.js';
import { readRawConfig, relaysFromInvalidConfig, type RelayTarget } from '../config/lenient.js';
import type { GpioOptions } from '../hardware/gpio.js';
import { relayLevel } from '../core/relay.js';
import { createGpioDriver } from '../hardware/createGpio.js';
import { DoorAgentError } from '../util/errors.js';
import { configPath, type CommandContext } from './context.js';

/**
 * `door-agent relock`: drives every configured relay to its locked level and exits (systemd ExecStopPost).
 * Needs only the config, not the cache, so it works whatever state the daemon died in. Every door is tried
 * even when one fails, and a configuration that does not validate still has every relay it names locked
 * (then the configuration's problems are reported, exit 78).
 */
export function runRelock(args: { config: string | undefined }, ctx: CommandContext): number {
  const path = configPath(args.config, ctx.env);
  let gpio: GpioOptions;
  let relays: RelayTarget[];
  let configError: DoorAgentError | undefined;
  const failures: string[] = [];
  let locked = 0;
  try {
    const config = loadConfig(path);
    gpio = config.gpio;
    relays = config.doors.map((door) => ({
      label: `${door.name} (${door.uuid})`,
      pin: door.relay.pin,
      level: relayLevel('LOCKED', door.failMode, door.relay.activeLow),
    }));
  } catch (err) {
    if (!(err instanceof DoorAgentError)) throw err;
    configError = err;
    const lenient = relaysFromInvalidConfig(readRawConfig(path));
    gpio = lenient.gpio;
    relays = lenient.relays;
    failures.push(...lenient.skipped);
  }
  let driver;
  try {
    driver = createGpioDriver(gpio);
  } catch (err) {
    failures.push(`gpio driver ${gpio.driver}: ${err instanceof Error ? err.message : String(err)}`);
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
  if (configError) {
    const note = failures.length > 0 ? `\nnot locked:\n  ${failures.join('\n  ')}` : '';
    throw new DoorAgentError(
      `${configError.message}\n(the relays that could be read from it were driven locked anyway: ${locked} locked)${note}`,
      { cause: configError, exitCode: configError.exitCode },
    );
  }
  if (failures.length > 0) {
    throw new DoorAgentError(`could not lock ${failures.length} door(s):\n  ${failures.join('\n  ')}`);
  }
  return 0;
}
