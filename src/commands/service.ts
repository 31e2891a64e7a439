import { chownSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadServiceConfig } from '../config/load.js';
import { ApiKeys, KEY_KINDS, KEY_SCOPES, type KeyKind, type KeyScope } from '../service/apiKeys.js';
import { openServiceSqlite } from '../service/database.js';
import { startService } from '../service/root.js';
import { openPostgres } from '../service/sql/openPostgres.js';
import type { SqlDb } from '../service/sql/sqlDb.js';
import { UsageError } from '../util/errors.js';
import { createLogger } from '../util/logger.js';
import { configPath, stringOption, type Command, type CommandContext, type CommandInput } from './context.js';
import { daemonLogger } from './daemonLog.js';

/** Created by root (sudo) before the service ever ran: hand the files to the data directory's owner. */
export function giveToDataDirOwner(dataDir: string): void {
  if (process.getuid?.() !== 0) return;
  const { uid, gid } = statSync(dataDir);
  for (const file of ['service.db', 'service.db-wal', 'service.db-shm']) {
    try {
      chownSync(join(dataDir, file), uid, gid);
    } catch {
      // absent
    }
  }
}

/** The service's database as the configuration names it: PostgreSQL with server.database, else SQLite's file. */
export async function openServiceDb(config: ReturnType<typeof loadServiceConfig>, ctx: CommandContext): Promise<SqlDb> {
  const { database, dataDir } = config.server;
  if (database) return openPostgres(database, ctx.env, createLogger({ level: 'warn', agentId: 'service' }));
  return openServiceSqlite(join(dataDir, 'service.db'));
}

/**
 * `door-agent service key create --rank R [--scope S] [--expires-days N]` (R: REGULAR, ADMIN, SUPER or DOOR; S: api,
 * or scim for an identity provider's token, ADMIN only): prints the new key alone on one line of stdout, the only
 * time it is shown (only its hash is stored). Works whether or not the service is running.
 */
async function runServiceKeyCreate(
  args: { rank: string | undefined; scope: string | undefined; expiresDays: string | undefined; config: string | undefined },
  ctx: CommandContext,
): Promise<number> {
  if (!args.rank || !(KEY_KINDS as readonly string[]).includes(args.rank)) {
    throw new UsageError(`--rank must be one of ${KEY_KINDS.join(', ')} (DOOR: a door controller's key, read-only, reads PINs)`);
  }
  const scope = (args.scope ?? 'api') as KeyScope;
  if (!KEY_SCOPES.includes(scope)) {
    throw new UsageError(`--scope must be one of ${KEY_SCOPES.join(', ')} (scim: an identity provider's token, valid only under /scim/v2)`);
  }
  // An identity provider suspends and removes people: ADMIN's work, and no more (docs/identity-sources.md).
  if (scope === 'scim' && args.rank !== 'ADMIN') throw new UsageError(`--scope scim needs --rank ADMIN (not ${args.rank})`);
  let days = 0;
  if (args.expiresDays !== undefined) {
    if (!/^\d{1,5}$/.test(args.expiresDays)) throw new UsageError('--expires-days must be a whole number of days (0 = never)');
    days = Number(args.expiresDays);
  }
  const config = loadServiceConfig(configPath(args.config, ctx.env));
  const db = await openServiceDb(config, ctx);
  try {
    const key = await new ApiKeys(db).create(args.rank as KeyKind, days, ctx.clock.wallNow(), scope);
    if (db.engine === 'sqlite') giveToDataDirOwner(config.server.dataDir);
    ctx.stdout.write(`${key}\n`);
    const expiry = days > 0 ? `expires in ${days} day(s)` : 'never expires';
    const article = /^[AEIOU]/.test(args.rank) ? 'an' : 'a'; // an ADMIN, a DOOR, a REGULAR, a SUPER
    const what = scope === 'scim' ? 'SCIM token (valid only under /scim/v2)' : 'API key';
    ctx.stderr.write(`created ${article} ${args.rank} ${what} that ${expiry}; it is shown only this once\n`);
    return 0;
  } finally {
    await db.close();
  }
}

/** `door-agent service`: the reference access-control service, until SIGTERM/SIGINT. */
async function runService(args: { config: string | undefined }, input: CommandInput): Promise<number> {
  const { ctx, hooks } = input;
  const config = loadServiceConfig(configPath(args.config, ctx.env));
  const logger = daemonLogger(input, { level: 'info', format: 'auto' }, 'service');
  const service = await startService(config, { clock: ctx.clock, logger, env: ctx.env });
  return new Promise<number>((resolve) => {
    hooks.onStopSignal(() => {
      void service.stop().then(() => {
        logger.info('service stopped');
        resolve(0);
      });
    });
  });
}

/** `door-agent service outbox`: the e-mail the service queued (sent or not), as JSON lines. */
async function runServiceOutbox(args: { config: string | undefined }, ctx: CommandContext): Promise<number> {
  const config = loadServiceConfig(configPath(args.config, ctx.env));
  const db = await openServiceDb(config, ctx);
  try {
    const rows = await db.all<{
      mail_id: number;
      recipient: string;
      subject: string;
      body: string;
      created_at: number;
      sent_at: number | null;
    }>('SELECT mail_id, recipient, subject, body, created_at, sent_at FROM mail_outbox ORDER BY mail_id');
    for (const r of rows) {
      ctx.stdout.write(
        `${JSON.stringify({ id: r.mail_id, to: r.recipient, subject: r.subject, body: r.body, queued_at: new Date(r.created_at).toISOString(), sent_at: r.sent_at === null ? null : new Date(r.sent_at).toISOString() })}\n`,
      );
    }
    return 0;
  } finally {
    await db.close();
  }
}

export const command: Command = (input) => runService({ config: stringOption(input, 'config') }, input);

export const keyCreateCommand: Command = (input) =>
  runServiceKeyCreate(
    {
      rank: stringOption(input, 'rank'),
      scope: stringOption(input, 'scope'),
      expiresDays: stringOption(input, 'expires-days'),
      config: stringOption(input, 'config'),
    },
    input.ctx,
  );

export const outboxCommand: Command = (input) => runServiceOutbox({ config: stringOption(input, 'config') }, input.ctx);
