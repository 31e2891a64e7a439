import type { AgentOptions } from '../config/options.js';
import type { DoorOptions } from '../door/options.js';
import type { ReaderOptionsOf } from '../readers/options.js';
import { configHash } from '../config/configHash.js';
import { noteConfigChange, type ConfigNote } from '../store/configChanges.js';
import { UsageError, describeFsError } from '../util/errors.js';
import type { CommandContext } from './context.js';

/**
 * Which OSDP reader a maintenance command (`reader keyset`, `reader osdp set-address`/`set-baud`) talks to:
 * `--door UUID` (or the only door with such a reader) and `--reader entry|exit`, with the configuration key that
 * names it, as the operator reads it in the file.
 */

type ReaderChoice = 'entry' | 'exit';

function readerChoice(flag: string | undefined): ReaderChoice {
  if (flag === undefined || flag === 'entry' || flag === 'exit') return flag ?? 'entry';
  throw new UsageError(`--reader must be entry or exit, not ${flag}`);
}

/** The door's reader in that direction: `reader` (or `readers.entry`), or `readers.exit`. */
export function readerOf(door: DoorOptions, choice: ReaderChoice) {
  return choice === 'exit' ? door.exitReader : door.reader;
}

/** The key that names this reader under its door (`readers` is what gives a door an exit reader). */
export function readerKey(door: DoorOptions, choice: ReaderChoice): string {
  return choice === 'exit' ? 'readers.exit' : door.exitReader ? 'readers.entry' : 'reader';
}

/** The door whose reader is meant: the one named, or the only door with an OSDP reader in that direction. */
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

export interface OsdpTarget {
  door: DoorOptions;
  /** Its place in `doors:`, for the key path `doors[N].reader.address`. */
  doorIndex: number;
  choice: ReaderChoice;
  reader: ReaderOptionsOf<'osdp'>;
  key: string;
  /** "the exit reader" on a door with two readers, "the reader" on a door with one. */
  which: string;
}

/** The reader `--door`/`--reader` name; a usage error when that door has none, or it is not an OSDP reader. */
export function osdpTarget(config: AgentOptions, uuid: string | undefined, flag: string | undefined): OsdpTarget {
  const choice = readerChoice(flag);
  const door = chooseDoor(config, uuid, choice);
  const reader = readerOf(door, choice);
  if (!reader) {
    throw new UsageError(`${door.name} (${door.uuid}) has no ${choice} reader (${choice === 'exit' ? 'readers.exit' : 'reader or readers.entry'})`);
  }
  const key = readerKey(door, choice);
  const which = door.exitReader ? `the ${choice} reader` : 'the reader';
  if (reader.type !== 'osdp') throw new UsageError(`${door.name}: ${which} (${key}) is not an OSDP reader`);
  return { door, doorIndex: config.doors.indexOf(door), choice, reader, key, which };
}

/**
 * Notes a maintenance command's change to `target`'s reader for the audit log (config_changed), recorded by the
 * daemon when it next starts. The change is made already: a note that cannot be written is said, not fatal.
 */
export function noteReaderChange(
  config: AgentOptions,
  target: Pick<OsdpTarget, 'door' | 'choice'>,
  change: Pick<ConfigNote, 'reason' | 'comset'>,
  what: string,
  ctx: Pick<CommandContext, 'clock' | 'stderr'>,
): void {
  try {
    noteConfigChange(config.agent.dataDir, {
      at: ctx.clock.wallNow(),
      reason: change.reason,
      hash: configHash(config),
      door: target.door.uuid,
      // Named on a door with two readers, as the reader's own audit events are.
      ...(target.door.exitReader ? { reader: target.choice } : {}),
      ...(change.comset ? { comset: change.comset } : {}),
    });
  } catch (err) {
    ctx.stderr.write(`door-agent: ${what} could not be noted for the audit log (config_changed): ${describeFsError(err)}\n`);
  }
}
