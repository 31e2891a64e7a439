import type { SavedKeypadState } from '../core/keypad.js';
import type { Db } from './database.js';
import { readMeta, writeMeta } from './meta.js';

/** The agent's wrong-PIN counter and keypad lockout in state.db, so a restart gives no fresh tries. */
const KEY = 'keypad_guesses';

export function readKeypadGuesses(db: Db): unknown {
  return readMeta<unknown>(db, KEY);
}

export function writeKeypadGuesses(db: Db, state: SavedKeypadState): void {
  writeMeta(db, KEY, state);
}
