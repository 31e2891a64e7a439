import { startDemo } from '../demo/demo.js';
import { systemTimers } from '../util/clock.js';
import type { CommandContext } from './context.js';
import type { ProcessHooks } from './run.js';

/** `door-agent demo` (npm start): the whole system on this machine until Ctrl-C. */
export async function runDemo(args: { dir: string | undefined }, ctx: CommandContext, hooks: ProcessHooks, input: NodeJS.ReadableStream): Promise<number> {
  const demo = await startDemo({
    dir: args.dir ?? ctx.env.DOOR_AGENT_DEMO_DIR ?? 'demo-data',
    out: (text) => ctx.stdout.write(text),
    input,
    clock: ctx.clock,
    timers: systemTimers,
  });
  return new Promise<number>((resolve) => {
    hooks.onStopSignal(() => {
      ctx.stdout.write('\nstopping the demo: door locked, broker and service closed\n');
      void demo.stop().then(() => resolve(0));
    });
  });
}
