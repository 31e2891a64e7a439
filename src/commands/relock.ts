import { relayLevel } from '../core/relay.js';
import { createGpioDriver } from '../hardware/createGpio.js';
import { DoorAgentError } from '../util/errors.js';
import { loadConfigFor, type CommandContext } from './context.js';

/**
 * `door-agent relock`: drives every configured relay to its locked level and exits (systemd ExecStopPost).
 * Needs only the config, not the cache, so it works whatever state the daemon died in. Every door is tried
 * even when one fails.
 */
export function runRelock(args: { config: string | undefined }, ctx: CommandContext): number {
  const config = loadConfigFor(args.config, ctx);
  const driver = createGpioDriver(config.gpio);
  const failures: string[] = [];
  try {
    for (const door of config.doors) {
      const level = relayLevel('LOCKED', door.failMode, door.relay.activeLow);
      try {
        driver.openOutput(door.relay.pin, level).write(level);
        ctx.stdout.write(`${door.name} (${door.uuid}): relay GPIO ${door.relay.pin} set to ${level} (locked)\n`);
      } catch (err) {
        failures.push(`${door.name} (${door.uuid}): ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  } finally {
    driver.close();
  }
  if (failures.length > 0) {
    throw new DoorAgentError(`could not lock ${failures.length} door(s):\n  ${failures.join('\n  ')}`);
  }
  return 0;
}
