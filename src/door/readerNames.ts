import type { Direction } from '../core/areas.js';
import type { Door } from './door.js';

/** A door named by its configured name or its uuid, in any case (`wanted` trimmed and in lower case). */
export const doorMatches = (door: Door, wanted: string): boolean => door.options.name.toLowerCase() === wanted || door.options.uuid === wanted;

export interface ReaderChoice {
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
 * The reader `spec` names: `DOOR` (its entry reader) or `DOOR:entry` / `DOOR:exit`, the door by name or uuid in any
 * case; `entry` or `exit` alone, or nothing, when only one door has such a reader. Else why not, with the readers.
 */
export function chooseReader(doors: readonly Door[], spec: string | undefined): ReaderChoice | { problem: string } {
  const all = doors.flatMap(readersOf);
  const wanted = (spec ?? '').trim().toLowerCase();
  const split = /^(?:(.*):)?(entry|exit)$/.exec(wanted);
  let candidates: ReaderChoice[];
  if (wanted !== '' && doors.some((d) => doorMatches(d, wanted))) candidates = all.filter((r) => doorMatches(r.door, wanted) && r.direction === 'entry');
  else if (split) candidates = all.filter((r) => r.direction === split[2] && (split[1] === undefined || doorMatches(r.door, split[1])));
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
  return { problem: `${why}; its readers: ${list}` };
}
