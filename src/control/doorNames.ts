import type { Door } from '../door/door.js';
import { chooseReader, doorMatches as matches, type ReaderChoice } from '../door/readerNames.js';
import { RequestError } from './request.js';

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

/**
 * The reader a learn request names: `DOOR` (its entry reader) or `DOOR:entry` / `DOOR:exit`, the door by name or uuid
 * in any case; `entry` or `exit` alone, or nothing, when only one door has such a reader. Else a RequestError
 * listing the readers.
 */
export function findReader(doors: readonly Door[], spec: string | undefined): ReaderChoice {
  const choice = chooseReader(doors, spec);
  if ('problem' in choice) throw new RequestError(choice.problem, 'reader');
  return choice;
}
