import type { Direction } from '../core/areas.js';
import type { Door } from '../door/door.js';
import { RequestError } from './request.js';

const matches = (door: Door, wanted: string) => door.options.name.toLowerCase() === wanted || door.options.uuid === wanted;

/** The door a request names: its configured name or uuid, in any case; else a RequestError listing the doors. */
export function findDoor(doors: readonly Door[], name: string): Door {
  const found = doors.find((d) => matches(d, name.trim().toLowerCase()));
  if (found) return found;
  const list = doors.map((d) => `${d.options.name} (${d.options.uuid})`).join(', ');
  throw new RequestError(`no door ${JSON.stringify(name)} at this agent; its doors: ${list}`, 'door');
}

/** A door's name by its uuid (an interlock's other door). */
export function doorName(doors: readonly Door[], uuid: string): string {
  return doors.find((d) => d.options.uuid === uuid)?.options.name ?? uuid;
}

interface ReaderChoice {
  door: Door;
  direction: Direction;
}

const readersOf = (door: Door): ReaderChoice[] => [
  ...(door.options.reader ? [{ door, direction: 'entry' as const }] : []),
  ...(door.options.exitReader ? [{ door, direction: 'exit' as const }] : []),
];

/** How a reader is named: its door (the entry reader), or `DOOR:exit`. */
function readerLabel(choice: ReaderChoice): string {
  return choice.direction === 'entry' ? choice.door.options.name : `${choice.door.options.name}:exit`;
}

/**
 * The reader a learn request names: `DOOR` (its entry reader) or `DOOR:entry` / `DOOR:exit`, the door by name or uuid
 * in any case; `entry` or `exit` alone, or nothing, when only one door has such a reader. Else a RequestError
 * listing the readers.
 */
export function findReader(doors: readonly Door[], spec: string | undefined): ReaderChoice {
  const all = doors.flatMap(readersOf);
  const wanted = (spec ?? '').trim().toLowerCase();
  const split = /^(?:(.*):)?(entry|exit)$/.exec(wanted);
  let candidates: ReaderChoice[];
  if (wanted !== '' && doors.some((d) => matches(d, wanted))) candidates = all.filter((r) => matches(r.door, wanted) && r.direction === 'entry');
  else if (split) candidates = all.filter((r) => r.direction === split[2] && (split[1] === undefined || matches(r.door, split[1])));
  else if (wanted === '') candidates = all;
  else candidates = [];
  if (candidates.length === 1) return candidates[0]!;
  const list = all.map(readerLabel).join(', ') || 'none';
  const why =
    spec === undefined
      ? 'name the reader'
      : candidates.length === 0
        ? `no reader ${JSON.stringify(spec)} at this agent`
        : `${JSON.stringify(spec)} fits more than one reader`;
  throw new RequestError(`${why}; its readers: ${list}`, 'reader');
}
