import { UsageError } from '../util/errors.js';
import { configPath, loadConfigFor, stringOption, type Command } from './context.js';
import { askDaemon, controlSocketOf, printFinal, requester } from './daemonControl.js';
import { usageLine } from './usage.js';

/**
 * `door-agent lock --door D`: the running daemon locks the door now through its control socket (refused while the
 * emergency input releases it); audited with origin local and the user.
 */
export const command: Command = async (input) => {
  const door = stringOption(input, 'door');
  if (door === undefined) throw new UsageError(`--door is required: the door's name or uuid\n${usageLine('lock')}`);
  const flag = stringOption(input, 'config');
  const config = loadConfigFor(flag, input.ctx);
  const path = controlSocketOf(config, configPath(flag, input.ctx.env));
  return printFinal(await askDaemon(path, config, { action: 'lock', door, user: requester() }, input), input.ctx);
};
