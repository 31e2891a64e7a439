import { chownSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadServiceConfig } from '../config/load.js';
import { ApiKeys, RANKS, type Rank } from '../service/apiKeys.js';
import { ServiceMqtt } from '../service/doorsMqtt.js';
import { Mailer } from '../service/mailer.js';
import { storedLinks } from '../service/routesLinks.js';
import { buildService } from '../service/server.js';
import { openServiceDatabase } from '../service/database.js';
import { DoorAgentError, UsageError } from '../util/errors.js';
import { createLogger } from '../util/logger.js';
import { configPath, type CommandContext } from './context.js';
import type { ProcessHooks } from './run.js';

/** Created by root (sudo) before the service ever ran: hand the files to the data directory's owner. */
function giveToDataDirOwner(dataDir: string): void {
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

function openServiceDb(config: ReturnType<typeof loadServiceConfig>) {
  return openServiceDatabase(join(config.server.dataDir, 'service.db'));
}

/**
 * `door-agent service key create --rank R [--expires-days N]`: prints the new key alone on one line of stdout,
 * the only time it is shown (only its hash is stored). Works whether or not the service is running.
 */
export function runServiceKeyCreate(
  args: { rank: string | undefined; expiresDays: string | undefined; config: string | undefined },
  ctx: CommandContext,
): number {
  if (!args.rank || !(RANKS as readonly string[]).includes(args.rank)) {
    throw new UsageError(`--rank must be one of ${RANKS.join(', ')}`);
  }
  let days = 0;
  if (args.expiresDays !== undefined) {
    if (!/^\d{1,5}$/.test(args.expiresDays)) throw new UsageError('--expires-days must be a whole number of days (0 = never)');
    days = Number(args.expiresDays);
  }
  const config = loadServiceConfig(configPath(args.config, ctx.env));
  const db = openServiceDb(config);
  try {
    const key = new ApiKeys(db).create(args.rank as Rank, days, ctx.clock.wallNow());
    giveToDataDirOwner(config.server.dataDir);
    ctx.stdout.write(`${key}\n`);
    const expiry = days > 0 ? `expires in ${days} day(s)` : 'never expires';
    ctx.stderr.write(`created a ${args.rank} API key that ${expiry}; it is shown only this once\n`);
    return 0;
  } finally {
    db.close();
  }
}

/** `door-agent service`: the reference access-control service, until SIGTERM/SIGINT. */
export async function runService(args: { config: string | undefined }, ctx: CommandContext, hooks: ProcessHooks): Promise<number> {
  const config = loadServiceConfig(configPath(args.config, ctx.env));
  const logger = createLogger({ level: 'info', agentId: 'service' });
  const db = openServiceDb(config);
  const doors = config.mqtt ? new ServiceMqtt(config.mqtt, ctx.env, logger.child({ component: 'mqtt' }), () => storedLinks(db)) : undefined;
  const mailer = new Mailer(db, config.server.smtp, logger.child({ component: 'mail' }));
  const app = buildService({
    db,
    clock: ctx.clock,
    logger,
    resources: config.server.resources,
    doors,
    mailer,
    lockReplyTimeoutMs: config.server.lockReplyTimeoutSeconds * 1000,
  });
  void mailer.flush();
  const separator = config.server.listen.lastIndexOf(':');
  const host = config.server.listen.slice(0, separator).replace(/^\[|\]$/g, '');
  const port = Number(config.server.listen.slice(separator + 1));
  try {
    await app.listen({ host, port });
  } catch (err) {
    await doors?.close();
    db.close();
    // An operator's problem (address in use, not on this host, no permission), not a usage error: exit 1.
    const code = (err as NodeJS.ErrnoException).code;
    const hint =
      code === 'EADDRINUSE'
        ? ': another program already listens there (stop it, or change server.listen)'
        : code === 'EADDRNOTAVAIL'
          ? ': this machine has no such address (change server.listen)'
          : code === 'EACCES'
            ? ': permission denied (ports below 1024 need privileges; use a higher port)'
            : '';
    throw new DoorAgentError(`cannot listen on ${config.server.listen} (server.listen): ${(err as Error).message}${hint}`, { cause: err });
  }
  const address = app.addresses()[0];
  logger.info({ listen: address && typeof address !== 'string' ? `${address.address}:${address.port}` : config.server.listen }, 'service ready');
  return new Promise<number>((resolve) => {
    hooks.onStopSignal(() => {
      void app.close().then(async () => {
        await doors?.close();
        db.close();
        logger.info('service stopped');
        resolve(0);
      });
    });
  });
}

/** `door-agent service outbox`: the e-mail the service queued (sent or not), as JSON lines. */
export function runServiceOutbox(args: { config: string | undefined }, ctx: CommandContext): number {
  const config = loadServiceConfig(configPath(args.config, ctx.env));
  const db = openServiceDb(config);
  try {
    const rows = db.prepare('SELECT mail_id, recipient, subject, body, created_at, sent_at FROM mail_outbox ORDER BY mail_id').all() as Array<{
      mail_id: number;
      recipient: string;
      subject: string;
      body: string;
      created_at: number;
      sent_at: number | null;
    }>;
    for (const r of rows) {
      ctx.stdout.write(
        `${JSON.stringify({ id: r.mail_id, to: r.recipient, subject: r.subject, body: r.body, queued_at: new Date(r.created_at).toISOString(), sent_at: r.sent_at === null ? null : new Date(r.sent_at).toISOString() })}\n`,
      );
    }
    return 0;
  } finally {
    db.close();
  }
}
