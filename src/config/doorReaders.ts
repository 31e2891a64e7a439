/** A door's reader keys: `reader` (the entry reader alone) or `readers: { entry, exit }` (docs/areas.md). */
interface ReaderKeys<R> {
  reader?: R | undefined;
  readers?: { entry?: R | undefined; exit?: R | undefined } | undefined;
}

/** One reader of a door, with the keys (under the door) that name it and the direction of its taps. */
export interface DoorReader<R> {
  key: string[];
  direction: 'entry' | 'exit';
  reader: R;
}

/** Every reader a door's section gives, entry first, each with its key: what the checks across keys go through. */
export function readersOf<R>(door: ReaderKeys<R>): Array<DoorReader<R>> {
  const found: Array<DoorReader<R>> = [];
  if (door.reader !== undefined) found.push({ key: ['reader'], direction: 'entry', reader: door.reader });
  if (door.readers?.entry !== undefined) found.push({ key: ['readers', 'entry'], direction: 'entry', reader: door.readers.entry });
  if (door.readers?.exit !== undefined) found.push({ key: ['readers', 'exit'], direction: 'exit', reader: door.readers.exit });
  return found;
}
