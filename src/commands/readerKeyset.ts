import { DataDirBusyError, dataDirHolder } from '../system/dataDirLock.js';
import { randomBytes } from 'node:crypto';
import { closeSync, fchownSync, fsyncSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../config/load.js';
import type { AgentOptions } from '../config/options.js';
import type { DoorOptions } from '../door/options.js';
import { readScbk } from '../util/secretFiles.js';
import { CMD, REPLY } from '../readers/osdp/controlPanel.js';
import { OsdpBuses } from '../readers/osdp/osdpBuses.js';
import type { PortFactory } from '../readers/serial/port.js';
import { systemClock, systemTimers } from '../util/clock.js';
import { DoorAgentError, UsageError, describeFsError } from '../util/errors.js';
import { configHash } from '../config/configHash.js';
import { noteConfigChange } from '../store/configChanges.js';
import { configPath, stringOption, type Command, type CommandContext } from './context.js';

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

function fsyncDir(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

type ReaderChoice = 'entry' | 'exit';

function readerChoice(flag: string | undefined): ReaderChoice {
  if (flag === undefined || flag === 'entry' || flag === 'exit') return flag ?? 'entry';
  throw new UsageError(`--reader must be entry or exit, not ${flag}`);
}

/** The door's reader in that direction: `reader` (or `readers.entry`), or `readers.exit`. */
function readerOf(door: DoorOptions, choice: ReaderChoice) {
  return choice === 'exit' ? door.exitReader : door.reader;
}

/** The door whose reader gets the key: the one named, or the only door with an OSDP reader in that direction. */
function chooseDoor(config: AgentOptions, uuid: string | undefined, choice: ReaderChoice) {
  if (uuid) {
    const door = config.doors.find((d) => d.uuid === uuid.toLowerCase());
    if (!door) throw new UsageError(`no door ${uuid} in the configuration`);
    return door;
  }
  const osdpDoors = config.doors.filter((d) => readerOf(d, choice)?.type === 'osdp');
  if (osdpDoors.length === 1) return osdpDoors[0]!;
  const what = choice === 'exit' ? 'OSDP exit readers' : 'OSDP doors';
  throw new UsageError(`name the door: --door UUID (${what}: ${osdpDoors.map((d) => d.uuid).join(', ') || 'none'})`);
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
  const choice = readerChoice(args.reader);
  const config = loadConfig(configPath(args.config, ctx.env));
  // A running daemon holds the bus (and may be mid-handshake with this reader): never talk over it.
  const holder = dataDirHolder(config.agent.dataDir);
  if (holder) throw new DataDirBusyError(config.agent.dataDir, holder.pid, 'reader keyset does not talk to a bus a running daemon holds');
  const door = chooseDoor(config, args.door, choice);
  const reader = readerOf(door, choice);
  if (!reader) {
    throw new UsageError(`${door.name} (${door.uuid}) has no ${choice} reader (${choice === 'exit' ? 'readers.exit' : 'reader or readers.entry'})`);
  }
  // The key that names this reader in the configuration file (`readers` is what gives a door an exit reader).
  const key = choice === 'exit' ? 'readers.exit' : door.exitReader ? 'readers.entry' : 'reader';
  // On a door with two readers, which one; on a door with one, "the reader" as before.
  const which = door.exitReader ? `the ${choice} reader` : 'the reader';
  if (reader.type !== 'osdp') throw new UsageError(`${door.name}: ${which} (${key}) is not an OSDP reader`);
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
  let secure: () => void = () => {};
  let failed: (message: string) => void = () => {};
  const established = new Promise<void>((resolve, reject) => {
    secure = resolve;
    failed = (message) => reject(new DoorAgentError(`${door.name}: ${message}`));
  });
  const buses = new OsdpBuses({
    clock: systemClock,
    timers: systemTimers,
    logger: pino({ level: 'silent' }),
    ...(openPort ? { openPort } : {}),
    // A bus that cannot be opened ends the command at once (the daemon would retry; here nobody waits for it).
    onOpenError: (path, reason) => failed(`cannot open ${path}: ${reason} (is door-agent stopped? it holds the bus while it runs)`),
  });
  established.catch(() => {}); // settled through the race below; a late failure must not go unhandled
  const handle = buses.attach(reader.path, reader.baudRate, {
    address: reader.address,
    numbering: reader.numbering,
    ...(current ? { scbk: current } : { installMode: true }),
    onFrame: () => {},
    onSecure: (up) => up && secure(),
    onSecureError: (message) => failed(message),
  });
  let sent = false;
  try {
    const timeout = new Promise<never>((_, reject) =>
      setTimeout(
        () =>
          reject(
            new DoorAgentError(
              `${door.name}: no secure channel within ${HANDSHAKE_TIMEOUT_MS / 1000} s (is door-agent stopped, the reader at address ${reader.address} on ${reader.path}?)`,
            ),
          ),
        HANDSHAKE_TIMEOUT_MS,
      ).unref(),
    );
    await Promise.race([established, timeout]);
    sent = true;
    // osdp_KEYSET: key type 1 (the SCBK), its length, the key; over the secure channel, encrypted.
    const reply = await Promise.race([handle.request(CMD.KEYSET, Buffer.concat([Buffer.from([0x01, 16]), fresh])), timeout]);
    if (reply.code !== REPLY.ACK)
      throw new DoorAgentError(
        `${door.name}: ${which} refused the new key (reply 0x${reply.code.toString(16)}${reply.data.length > 0 ? `, code ${reply.data[0]}` : ''})`,
      );
    renameSync(pending, reader.scbkFile);
    fsyncDir(dirname(reader.scbkFile));
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
  } finally {
    await handle.detach();
  }
  ctx.stdout.write(
    `${door.name}: ${which} at address ${reader.address} now uses a new secure channel key, saved in ${reader.scbkFile}` +
      `${reader.installMode ? '; set installMode: false before starting door-agent' : ''}\n`,
  );
  // For the audit log (config_changed, reason reader_keyset): recorded by the daemon when it next starts.
  try {
    noteConfigChange(config.agent.dataDir, {
      at: ctx.clock.wallNow(),
      reason: 'reader_keyset',
      hash: configHash(config),
      door: door.uuid,
      // Named on a door with two readers, as the reader's own audit events are.
      ...(door.exitReader ? { reader: choice } : {}),
    });
  } catch (err) {
    ctx.stderr.write(`door-agent: the key change could not be noted for the audit log (config_changed): ${describeFsError(err)}\n`);
  }
  return 0;
}

export const command: Command = (input) =>
  runReaderKeyset({ config: stringOption(input, 'config'), door: stringOption(input, 'door'), reader: stringOption(input, 'reader') }, input.ctx);
