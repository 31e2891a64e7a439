import type { IdentitySource } from '../api/identity.js';
import { loadServiceConfig } from '../config/load.js';
import { DoorAgentError, UsageError } from '../util/errors.js';
import { configPath, stringOption, type Command, type CommandContext } from './context.js';
import { giveToDataDirOwner, openServiceDb } from './service.js';
import { usageLine } from './usage.js';

const SOURCE_NAMES: Record<Exclude<IdentitySource, 'local'>, string> = { ldap: 'LDAP', scim: 'SCIM' };

/**
 * `door-agent service identity release --email ADDRESS`: a user owned by SCIM or LDAP goes back to the service
 * (docs/identity-sources.md, "Which source owns a user"), after a source is retired, say. Their fields stay as the
 * source left them; the source's own keys for them (external_id, the DN) are cleared, so neither source finds them
 * by those again. Works whether or not the service is running.
 */
async function runRelease(args: { email: string | undefined; config: string | undefined }, ctx: CommandContext): Promise<number> {
  if (args.email === undefined || args.email.trim() === '') {
    throw new UsageError(`--email is required: the e-mail address of the user to release\n${usageLine('service identity release')}`);
  }
  const email = args.email.trim();
  const config = loadServiceConfig(configPath(args.config, ctx.env));
  const db = await openServiceDb(config, ctx);
  try {
    // Read and changed in one transaction: a sync or a SCIM call meanwhile sees the user before or after, never half.
    const released = await db.transaction(async () => {
      const user = await db.get<{ email_id: number; email: string; source: IdentitySource }>(
        'SELECT email_id, email, source FROM users WHERE email = ? AND removed_at IS NULL',
        [email],
      );
      if (!user) throw new DoorAgentError(`no user with the e-mail address ${email} (a removed user has nothing to release)`);
      if (user.source === 'local') throw new DoorAgentError(`${user.email} is already managed at the service: nothing to release`);
      await db.run("UPDATE users SET source = 'local', external_id = NULL, source_dn = NULL, source_seen_at = NULL WHERE email_id = ?", [user.email_id]);
      return { email: user.email, was: SOURCE_NAMES[user.source] };
    });
    if (db.engine === 'sqlite') giveToDataDirOwner(config.server.dataDir);
    ctx.stdout.write(`${released.email} is now managed at the service (was ${released.was})\n`);
    return 0;
  } finally {
    await db.close();
  }
}

export const releaseCommand: Command = (input) => runRelease({ email: stringOption(input, 'email'), config: stringOption(input, 'config') }, input.ctx);
