import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { loadServiceConfig } from '../config/load.js';
import { fingerprint } from '../protocol/fleetSigning.js';
import { EnrolCodes, enrolCode } from '../service/fleet/enrolCodes.js';
import { loadFleetKeys, newFleetKeyPair } from '../service/fleet/identityKey.js';
import { DoorAgentError, EXIT_INVALID_CONFIG, UsageError, describeFsError } from '../util/errors.js';
import { configPath, stringOption, type Command, type CommandContext } from './context.js';
import { giveToDataDirOwner, openServiceDb } from './service.js';

/**
 * `door-agent service enrol-code [--hours N]`: a single-use enrolment code (docs/fleet.md, "Enrolment"), printed as
 * the command the installer types on the new board. Reads the service's configuration and database as `service
 * key create` does, whether or not the service is running.
 */
async function runEnrolCode(args: { hours: string | undefined; config: string | undefined }, ctx: CommandContext): Promise<number> {
  let hours: number | undefined;
  if (args.hours !== undefined) {
    hours = /^\d{1,3}$/.test(args.hours) ? Number(args.hours) : Number.NaN;
    if (!(hours >= 1 && hours <= 720)) throw new UsageError('--hours must be a whole number of hours, 1 to 720');
  }
  const path = configPath(args.config, ctx.env);
  const config = loadServiceConfig(path);
  const { fleet, publicUrl } = config.server;
  if (!fleet || publicUrl === undefined) {
    throw new DoorAgentError(`${path} has no server.fleet section: enrolment is off (docs/fleet.md, "Enrolment")`, { exitCode: EXIT_INVALID_CONFIG });
  }
  // The code carries the identity key's fingerprint: the key file is read (and checked) here too.
  const keys = loadFleetKeys(fleet);
  const db = await openServiceDb(config, ctx);
  try {
    const made = await new EnrolCodes(db).create(ctx.clock.wallNow(), hours ?? fleet.enrolCodeHours, 'door-agent service enrol-code');
    if (db.engine === 'sqlite') giveToDataDirOwner(config.server.dataDir);
    ctx.stdout.write(`door-agent enrol ${publicUrl.replace(/\/$/, '')} ${enrolCode(made.secret, keys.fingerprint)}\n`);
    ctx.stderr.write(
      `a single-use enrolment code, good until ${new Date(made.expiresAt).toISOString()} (${hours ?? fleet.enrolCodeHours} h): run the line above on the new board\n`,
    );
    return 0;
  } finally {
    await db.close();
  }
}

/**
 * `door-agent service fleet-keys --out DIR`: the fleet's two Ed25519 pairs (docs/fleet.md, "Keys"), the private
 * halves 0600. Refuses to overwrite any file, naming it; a failure part way leaves none of the four.
 */
function runFleetKeys(args: { out: string | undefined }, ctx: CommandContext): number {
  if (args.out === undefined || args.out === '') throw new UsageError('--out DIR is required: the directory to write the keys to');
  const identity = newFleetKeyPair();
  const release = newFleetKeyPair();
  const files: Array<{ name: string; text: string; mode: number; note: string }> = [
    { name: 'identity.key', text: identity.privatePem, mode: 0o600, note: ' (0600): server.fleet.identityKeyFile' },
    { name: 'identity.pub', text: identity.publicPem, mode: 0o644, note: '' },
    { name: 'release.key', text: release.privatePem, mode: 0o600, note: ' (0600): keep it off the service, on the machine that signs releases' },
    { name: 'release.pub', text: release.publicPem, mode: 0o644, note: ': server.fleet.releasePublicKeyFile' },
  ];
  for (const f of files) {
    const file = join(args.out, f.name);
    if (existsSync(file)) throw new DoorAgentError(`${file} exists: door-agent service fleet-keys never overwrites a key (nothing was written)`);
  }
  const written: string[] = [];
  try {
    mkdirSync(args.out, { recursive: true, mode: 0o700 });
    for (const f of files) {
      const file = join(args.out, f.name);
      writeFileSync(file, f.text, { mode: f.mode, flag: 'wx' });
      written.push(file);
      chmodSync(file, f.mode); // whatever the umask
    }
  } catch (err) {
    for (const file of written) rmSync(file, { force: true });
    throw new DoorAgentError(`cannot write the keys to ${args.out}: ${describeFsError(err)} (nothing was written)`, { cause: err });
  }
  for (const f of files) ctx.stdout.write(`wrote ${join(args.out, f.name)}${f.note}\n`);
  const fp = fingerprint(createPublicKey(createPrivateKey(identity.privatePem)));
  ctx.stdout.write(`the identity key's fingerprint, carried by every enrolment code: ${fp}\n`);
  return 0;
}

export const enrolCodeCommand: Command = (input) => runEnrolCode({ hours: stringOption(input, 'hours'), config: stringOption(input, 'config') }, input.ctx);

export const fleetKeysCommand: Command = (input) => runFleetKeys({ out: stringOption(input, 'out') }, input.ctx);
