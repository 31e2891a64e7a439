import { openStateDatabase, statePath } from '../store/database.js';
import { EventLog } from '../store/eventLog.js';
import { UsageError } from '../util/errors.js';
import { loadConfigFor, stringOption, type Command, type CommandContext, type Output } from './context.js';

const FOLLOW_POLL_MS = 250;

function waitForDrain(out: Output): Promise<void> {
  return new Promise((resolve) => {
    if (typeof out.once !== 'function') return resolve();
    out.once('drain', () => resolve());
  });
}

/**
 * `door-agent events [--since SEQ] [--follow]`: the local audit log as JSON lines, oldest first. With
 * --follow, keeps printing new events until interrupted (`stopSignal` resolves).
 */
async function runEvents(
  args: { since: string | undefined; follow: boolean; config: string | undefined },
  ctx: CommandContext,
  stopSignal: Promise<void>,
): Promise<number> {
  let since = 0;
  if (args.since !== undefined) {
    if (!/^\d{1,15}$/.test(args.since)) throw new UsageError(`--since must be an event sequence number (got ${JSON.stringify(args.since)})`);
    since = Number(args.since);
  }
  const config = loadConfigFor(args.config, ctx);
  const db = openStateDatabase(statePath(config.agent.dataDir), { readonly: true });
  try {
    const log = new EventLog(db, { agentId: config.agent.id, maxEvents: config.agent.maxEvents });
    // Stopped (Ctrl-C, or the reader went away: door-agent events | head) also ends a long listing.
    let stopped = false;
    void stopSignal.then(() => {
      stopped = true;
    });
    // Respects back-pressure: a slow reader (door-agent events | less) gets every event, without the whole log
    // piling up in memory first.
    const drain = async () => {
      for (;;) {
        const batch = log.since(since, 1000);
        const text = batch.map((event) => `${JSON.stringify(event)}\n`).join('');
        if (batch.length > 0) since = batch[batch.length - 1]!.seq;
        if (text !== '' && ctx.stdout.write(text) === false) await waitForDrain(ctx.stdout);
        if (batch.length < 1000 || stopped) return;
        // A turn of the event loop per page, so a stop (or the pipe's EPIPE) is seen before the next one.
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    await drain();
    if (!args.follow) return 0;
    while (!stopped) {
      await Promise.race([new Promise((r) => setTimeout(r, FOLLOW_POLL_MS)), stopSignal]);
      if (!stopped) await drain();
    }
    return 0;
  } finally {
    db.close();
  }
}

export const command: Command = (input) => {
  const stopped = new Promise<void>((resolve) => input.outputHooks.onStopSignal(() => resolve()));
  return runEvents({ since: stringOption(input, 'since'), follow: input.options.follow === true, config: stringOption(input, 'config') }, input.ctx, stopped);
};
