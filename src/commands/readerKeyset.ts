import { DataDirBusyError, dataDirHolder } from '../system/dataDirLock.js';
import { randomBytes } from 'node:crypto';
import { closeSync, fchownSync, fsyncSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadConfig } from '../config/load.js';
import { readScbk } from '../util/secretFiles.js';
import { CMD, REPLY } from '../readers/osdp/controlPanel.js';
import type { PortFactory } from '../readers/serial/port.js';
import { DoorAgentError } from '../util/errors.js';
import { fsyncDirectory } from '../util/fsyncDirectory.js';
import { configPath, stringOption, type Command, type CommandContext } from './context.js';
import { noteReaderChange, osdpTarget } from './osdpReaderChoice.js';
import { openOsdpSession, sessionTarget } from './osdpSession.js';

const HANDSHAKE_TIMEOUT_MS = 15_000;

/**
 * Writes the key to a new file only its owner can read, owned as the current key file is (the daemon's user, also
 * when an installer runs this as root), and makes it durable before anything uses it.
 */
function writeKeyFile(path: string, hex: string, owner: { uid: number; gid: number }): void {
  const fd = openSync(path, 'wx', 0o600);
  try {
    if (process.getuid?.() === 0) fchownSync(fd, owner.uid, owner.gid);
    writeSync(fd, `${hex}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * `door-agent reader keyset [--door UUID] [--reader entry|exit]`: gives an OSDP reader a new secure channel key.
 * The key is random, saved next to `scbkFile` (FILE.new, mode 0600, fsynced) before the reader is told, sent over
 * the secure channel established with the current key (or SCBK-D in install mode), and FILE.new replaces FILE once
 * the reader has acknowledged it. The daemon must be stopped: it holds the bus.
 */
async function runReaderKeyset(
  args: { config: string | undefined; door: string | undefined; reader: string | undefined },
  ctx: CommandContext,
  openPort?: PortFactory,
): Promise<number> {
  const config = loadConfig(configPath(args.config, ctx.env));
  // A running daemon holds the bus (and may be mid-handshake with this reader): never talk over it.
  const holder = dataDirHolder(config.agent.dataDir);
  if (holder) throw new DataDirBusyError(config.agent.dataDir, holder.pid, 'reader keyset does not talk to a bus a running daemon holds');
  const { door, choice, reader, key, which } = osdpTarget(config, args.door, args.reader);
  if (!reader.scbkFile) throw new DoorAgentError(`${door.name}: set ${key}.scbkFile (where the new key is kept) first`, { exitCode: 78 });
  // As root (an installer), the key file is the daemon's: read it as such, and the new one is made the same.
  const owner = statSync(reader.scbkFile, { throwIfNoEntry: false }) ?? { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  const current = reader.installMode ? undefined : readScbk(`${key}.scbkFile`, reader.scbkFile, process.getuid?.() === 0 ? owner.uid : process.getuid?.());
  const fresh = randomBytes(16);
  const pending = `${reader.scbkFile}.new`;
  try {
    writeKeyFile(pending, fresh.toString('hex'), owner);
  } catch (err) {
    throw new DoorAgentError(
      `cannot save the new key in ${pending}: ${(err as Error).message}${(err as NodeJS.ErrnoException).code === 'EEXIST' ? ' (a keyset that did not finish left it: see whether the reader took it, then remove it)' : ''}`,
      { cause: err },
    );
  }
  let sent = false;
  try {
    // With the current key; a reader in installMode (no key read) over SCBK-D.
    const session = await openOsdpSession(sessionTarget(reader, current), {
      label: door.name,
      timeoutMs: HANDSHAKE_TIMEOUT_MS,
      why: `no secure channel within ${HANDSHAKE_TIMEOUT_MS / 1000} s (is door-agent stopped, the reader at address ${reader.address} on ${reader.path}?)`,
      ...(openPort ? { openPort } : {}),
    });
    try {
      sent = true;
      // osdp_KEYSET: key type 1 (the SCBK), its length, the key; over the secure channel, encrypted.
      const reply = await session.request(CMD.KEYSET, Buffer.concat([Buffer.from([0x01, 16]), fresh]));
      if (reply.code !== REPLY.ACK)
        throw new DoorAgentError(
          `${door.name}: ${which} refused the new key (reply 0x${reply.code.toString(16)}${reply.data.length > 0 ? `, code ${reply.data[0]}` : ''})`,
        );
    } finally {
      await session.close();
    }
    renameSync(pending, reader.scbkFile);
    fsyncDirectory(dirname(reader.scbkFile));
  } catch (err) {
    if (sent) {
      ctx.stderr.write(
        `door-agent: the reader may or may not hold the new key; it is kept in ${pending}. If door-agent then reports another key, move ${pending} to ${reader.scbkFile}.\n`,
      );
    } else {
      // Never sent: the reader keeps its key, and the unused new one goes.
      rmSync(pending, { force: true });
    }
    throw err;
  }
  ctx.stdout.write(
    `${door.name}: ${which} at address ${reader.address} now uses a new secure channel key, saved in ${reader.scbkFile}` +
      `${reader.installMode ? '; set installMode: false before starting door-agent' : ''}\n`,
  );
  noteReaderChange(config, { door, choice }, { reason: 'reader_keyset' }, 'the key change', ctx);
  return 0;
}

export const command: Command = (input) =>
  runReaderKeyset({ config: stringOption(input, 'config'), door: stringOption(input, 'door'), reader: stringOption(input, 'reader') }, input.ctx);
