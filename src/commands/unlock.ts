import { UsageError } from '../util/errors.js';
import { configPath, loadConfigFor, stringOption, type Command } from './context.js';
import { askDaemon, controlSocketOf, printFinal, requester, secondsOption } from './daemonControl.js';
import { usageLine } from './usage.js';

/**
 * `door-agent unlock --door D [--seconds N]`: the running daemon unlocks the door through its control socket
 * (docs/local-control.md), under the rules an MQTT unlock obeys (lockdown, emergency input, interlock), and relocks
 * it at the deadline; audited with origin local and the user.
 */
export const command: Command = async (input) => {
  const door = stringOption(input, 'door');
  if (door === undefined) throw new UsageError(`--door is required: the door's name or uuid\n${usageLine('unlock')}`);
  const seconds = secondsOption(stringOption(input, 'seconds'), '--seconds');
  const flag = stringOption(input, 'config');
  const config = loadConfigFor(flag, input.ctx);
  const path = controlSocketOf(config, configPath(flag, input.ctx.env));
  const request = Object.assign({ action: 'unlock' as const, door, user: requester() }, seconds === undefined ? {} : { seconds });
  return printFinal(await askDaemon(path, config, request, input), input.ctx);
};
