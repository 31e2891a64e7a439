import { importSnapshot } from '../snapshot/importSnapshot.js';
import type { RowCounts } from '../store/snapshotMerge.js';
import { cachePath, openDatabase } from '../store/database.js';
import { loadConfigFor, stringOption, type Command, type CommandContext } from './context.js';
import { directoryRules } from '../core/directoryFindings.js';
import { scanDirectory } from '../store/directoryScan.js';
import { directoryLines } from './directoryStatus.js';

export interface ImportArgs {
  file: string;
  config: string | undefined;
  allowMassRemoval: boolean;
  json: boolean;
}

const DEFAULT_MAX_REMOVAL_RATIO = 0.5;

function line(name: string, c: RowCounts): string {
  return `  ${name.padEnd(12)} ${c.added} added, ${c.changed} changed, ${c.removed} removed, ${c.unchanged} unchanged`;
}

/** `door-agent import FILE`: offline provisioning from a snapshot, atomically. */
function runImport(args: ImportArgs, ctx: CommandContext): number {
  const config = loadConfigFor(args.config, ctx);
  const db = openDatabase(cachePath(config.agent.dataDir));
  try {
    const result = importSnapshot(db, args.file, {
      maxRemovalRatio: args.allowMassRemoval ? null : (config.service?.maxRemovalRatio ?? DEFAULT_MAX_REMOVAL_RATIO),
      now: ctx.clock.wallNow(),
    });
    // What the directory now holds that weakens the doors (short cards, duress collisions): said at once.
    const findings = scanDirectory(db, directoryRules(config.access, config.doors));
    if (args.json) {
      ctx.stdout.write(`${JSON.stringify({ ...result, findings })}\n`);
    } else {
      ctx.stdout.write(
        [
          `imported ${result.file} in ${(result.durationMs / 1000).toFixed(1)} s (${result.rowsWritten} rows written)`,
          line('users', result.users),
          line('credentials', result.credentials),
          line('guest links', result.guestLinks),
          ...directoryLines(findings),
          '',
        ].join('\n'),
      );
    }
    return 0;
  } finally {
    db.close();
  }
}

export const command: Command = (input) =>
  runImport(
    {
      file: input.positionals[0]!,
      config: stringOption(input, 'config'),
      allowMassRemoval: input.options['allow-mass-removal'] === true,
      json: input.options.json === true,
    },
    input.ctx,
  );
