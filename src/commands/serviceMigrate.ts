import { join } from 'node:path';
import { loadServiceConfig } from '../config/load.js';
import { migrateToPostgres, type MigrationReport } from '../service/sql/migrateToPostgres.js';
import { UsageError } from '../util/errors.js';
import { createLogger } from '../util/logger.js';
import { count } from '../util/plural.js';
import { configPath, stringOption, type Command, type CommandContext } from './context.js';
import { usageLine } from './usage.js';

/** What the operator reads once the copy is committed: what moved, and the next step. */
function summary(report: MigrationReport): string {
  const { directory } = report;
  const tag = directory.tag === null ? '' : ` (tag ${directory.tag})`;
  return (
    `copied ${count(report.tables.length, 'table')}, ${count(report.rows, 'row')}\n` +
    `  from ${report.source} (left as it was)\n` +
    `  to   ${report.target}\n` +
    `checked: the row count of every table; directory revision ${directory.revision}${tag}, history ${directory.history} ` +
    `and ${count(directory.tags, 'revision tag')} are the source's (the doors keep their caches)\n` +
    `next: set server.database.url to ${report.target} and server.database.passwordFile in the configuration, then start the service. ` +
    'Copy nothing else: service-history.json stays in server.dataDir.\n'
  );
}

/** `door-agent service migrate --to URL`: the site's SQLite database into an empty PostgreSQL one (service/sql/migrateToPostgres.ts). */
async function runServiceMigrate(
  args: { to: string | undefined; passwordFile: string | undefined; config: string | undefined },
  ctx: CommandContext,
): Promise<number> {
  if (args.to === undefined) {
    throw new UsageError(`--to is required: the empty PostgreSQL database, postgres://USER@HOST:PORT/DATABASE\n${usageLine('service migrate')}`);
  }
  const config = loadServiceConfig(configPath(args.config, ctx.env));
  const database = config.server.database;
  if (database?.passwordFile !== undefined && args.passwordFile !== undefined && database.passwordFile !== args.passwordFile) {
    throw new UsageError(`--password-file ${args.passwordFile} and server.database.passwordFile ${database.passwordFile} disagree: give one`);
  }
  const report = await migrateToPostgres(
    join(config.server.dataDir, 'service.db'),
    { url: args.to, passwordFile: database?.passwordFile ?? args.passwordFile, caFile: database?.caFile },
    ctx.env,
    createLogger({ level: 'silent', agentId: 'service' }),
  );
  ctx.stdout.write(summary(report));
  return 0;
}

export const command: Command = (input) =>
  runServiceMigrate({ to: stringOption(input, 'to'), passwordFile: stringOption(input, 'password-file'), config: stringOption(input, 'config') }, input.ctx);
