import { startDemo } from '../demo/demo.js';
import { cliCommand } from '../demo/cliCommand.js';
import { systemTimers } from '../util/clock.js';
import { stringOption, type Command, type CommandContext, type ProcessHooks } from './context.js';

/** `door-agent demo` (npm start): the whole system on this machine until Ctrl-C. */
async function runDemo(args: { dir: string | undefined }, ctx: CommandContext, hooks: ProcessHooks, input: NodeJS.ReadableStream): Promise<number> {
  // The stop signal is taken before the demo starts: its banner ends with "Ctrl-C stops everything.", and a
  // Ctrl-C right after it (or during the start) must stop the demo cleanly, not kill the process mid-way.
  const stopRequested = new Promise<void>((resolve) => hooks.onStopSignal(() => resolve()));
  const demo = await startDemo({
    dir: args.dir ?? ctx.env.DOOR_AGENT_DEMO_DIR ?? 'demo-data',
    cli: cliCommand(ctx.env.PATH),
    out: (text) => ctx.stdout.write(text),
    input,
    clock: ctx.clock,
    timers: systemTimers,
  });
  await stopRequested;
  ctx.stdout.write('\nstopping the demo: door locked, broker and service closed\n');
  await demo.stop();
  return 0;
}

export const command: Command = (input) => runDemo({ dir: stringOption(input, 'dir') }, input.ctx, input.outputHooks, input.stdin);
