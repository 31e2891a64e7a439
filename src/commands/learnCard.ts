import { configPath, loadConfigFor, stringOption, type Command } from './context.js';
import { askDaemon, controlSocketOf, localTime, requester, secondsOption } from './daemonControl.js';

/**
 * `door-agent learn-card [--reader R] [--seconds S]`: the next card the reader reads, in every numbering, through the
 * running daemon (docs/local-control.md): for enrolment at the service. While it waits, that reader's taps are
 * shown, not decided. Full numbers are printed on purpose, to whoever runs it at the device; the audit log keeps
 * only a hint.
 */
export const command: Command = async (input) => {
  const seconds = secondsOption(stringOption(input, 'seconds'), '--seconds') ?? 60;
  const reader = stringOption(input, 'reader');
  const flag = stringOption(input, 'config');
  const config = loadConfigFor(flag, input.ctx);
  const path = controlSocketOf(config, configPath(flag, input.ctx.env));
  const { stdout, stderr } = input.ctx;
  const request = Object.assign({ action: 'learn-card' as const, seconds, user: requester() }, reader === undefined ? {} : { reader });
  let cards = 0;
  const last = await askDaemon(path, config, request, input, (line) => {
    if (line.type === 'info') stdout.write(`${line.message}\n`);
    else if (line.type === 'card') {
      if (cards++ > 0) stdout.write('\n');
      stdout.write(`${localTime(line.at)} read (not decided):\n${line.text}`);
    }
  });
  if (last.type === 'done') return 0;
  stderr.write(`door-agent: ${last.error}\n`);
  return 1;
};
