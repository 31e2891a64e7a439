import { checkReferencedFiles } from '../config/secrets.js';
import { EXIT_INVALID_CONFIG } from '../config/schema.js';
import { InputError } from '../util/errors.js';
import { redactUrl } from '../util/redact.js';
import { configPath, loadConfigFor, type CommandContext } from './context.js';

/** `door-agent config check`: validates the file and every file it names; prints each problem with its key path. */
export function runConfigCheck(args: { config: string | undefined }, ctx: CommandContext): number {
  const path = configPath(args.config, ctx.env);
  const config = loadConfigFor(args.config, ctx);
  const problems = checkReferencedFiles(config, ctx.env);
  if (problems.length > 0) throw new InputError(`${path} is invalid`, problems, EXIT_INVALID_CONFIG);
  const doors = config.doors.map((d) => `${d.name} (GPIO ${d.relay.pin}${d.reader ? `, reader ${d.reader.path}` : ''})`);
  ctx.stdout.write(
    `${path}: ok\n` +
      `  agent ${config.agent.id}, time zone ${config.agent.timezone}, data in ${config.agent.dataDir}\n` +
      `  gpio driver ${config.gpio.driver}; ${config.doors.length} door(s): ${doors.join(', ')}\n` +
      `  service ${config.service ? redactUrl(config.service.baseUrl) : 'not configured (offline)'}; ` +
      `mqtt ${config.mqtt ? redactUrl(config.mqtt.url) : 'not configured'}\n`,
  );
  return 0;
}
