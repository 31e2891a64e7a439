import { cachePath, openDatabase } from '../store/database.js';
import { MassRemovalError, type RowCounts } from '../store/snapshotMerge.js';
import { createServiceClient } from '../sync/serviceClient.js';
import { syncOnce } from '../sync/sync.js';
import { DoorAgentError } from '../util/errors.js';
import { loadConfigFor, stringOption, type Command, type CommandContext } from './context.js';
import { directoryRules } from '../core/directoryFindings.js';
import { scanDirectory } from '../store/directoryScan.js';
import { directoryLines } from './directoryStatus.js';

const line = (name: string, c: RowCounts) => `  ${name.padEnd(12)} ${c.added} added, ${c.changed} changed, ${c.removed} removed, ${c.unchanged} unchanged`;

/** `door-agent sync`: one sync from the service, a progress bar on a terminal, a summary at the end. */
async function runSync(args: { config: string | undefined; allowMassRemoval: boolean; isTty: boolean }, ctx: CommandContext): Promise<number> {
  const config = loadConfigFor(args.config, ctx);
  const service = config.service;
  if (!service) throw new DoorAgentError('no service section in the configuration: nothing to sync from (door-agent import provisions offline)');
  const client = createServiceClient(service, ctx.env, config.agent.dataDir);
  const db = openDatabase(cachePath(config.agent.dataDir));
  let lastDrawn = -1;
  const progress = (done: number, total: number) => {
    if (!args.isTty || total === 0) return;
    const width = 30;
    const filled = Math.round((done / total) * width);
    if (filled === lastDrawn && done !== total) return;
    lastDrawn = filled;
    ctx.stderr.write(`\r  users fetched [${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${done}/${total}`);
    if (done === total) ctx.stderr.write('\n');
  };
  try {
    const r = await syncOnce(db, client, {
      concurrency: service.concurrency,
      maxRemovalRatio: args.allowMassRemoval ? null : service.maxRemovalRatio,
      now: () => ctx.clock.wallNow(),
      onProgress: progress,
    });
    ctx.stdout.write(
      [
        `synced from ${new URL(service.baseUrl).host} in ${(r.durationMs / 1000).toFixed(1)} s (${r.rowsWritten} rows written)`,
        line('users', r.users),
        line('credentials', r.credentials),
        ...directoryLines(scanDirectory(db, directoryRules(config.access, config.doors))),
        '',
      ].join('\n'),
    );
    return 0;
  } catch (err) {
    // Refused by the mass-removal guard: its message says what of the answer applied (its restrictive part) and what waits.
    if (err instanceof MassRemovalError) throw new DoorAgentError(`sync ${err.message}`, { cause: err });
    if (err instanceof DoorAgentError) throw new DoorAgentError(`sync failed, the cache is unchanged: ${err.message}`, { cause: err });
    throw err;
  } finally {
    db.close();
  }
}

export const command: Command = (input) =>
  runSync({ config: stringOption(input, 'config'), allowMassRemoval: input.options['allow-mass-removal'] === true, isTty: input.stderrIsTty }, input.ctx);
