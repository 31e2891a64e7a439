import { closeSync, existsSync, fchownSync, fsyncSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from './database.js';
import type { EventLog } from './eventLog.js';
import { readMeta, writeMeta } from './meta.js';

/**
 * Configuration changes made by a command while no daemon runs (`door-agent reader keyset`, `reader osdp
 * set-address`/`set-baud`), waiting for the daemon's next start to enter the audit log. A command does not write
 * state.db itself: it may run as root (an installer), and SQLite files (the -wal, the -shm) it created would then
 * be root's, which the daemon could no longer write. One JSON line per change; the daemon records them and removes the file.
 */
const NOTES_FILE = 'config-changes.jsonl';
/** The hash of the configuration last recorded (state.db). */
const HASH_KEY = 'config_hash';

export interface ConfigNote {
  /** Wall-clock ms of the change. */
  at: number;
  reason: 'reader_keyset' | 'reader_comset';
  /** configHash of the configuration in force (the key itself is never hashed). */
  hash: string;
  /** The door whose reader got a new key. */
  door: string;
  /** Which of its readers, on a door with an exit reader (absent: its only reader). */
  reader?: 'entry' | 'exit';
  /** reader_comset: the address and baud rate the reader now uses (the configuration is the operator's to edit). */
  comset?: { address: number; baudRate: number };
}

/**
 * Appends a change for the daemon to record; the file is the data directory owner's, as the daemon's files are.
 * Without a data directory (no daemon ever ran) there is no audit log to add to: nothing is noted.
 */
export function noteConfigChange(dataDir: string, note: ConfigNote): void {
  if (!existsSync(dataDir)) return;
  const file = join(dataDir, NOTES_FILE);
  const fd = openSync(file, 'a', 0o600);
  try {
    if (process.getuid?.() === 0) {
      const owner = statSync(dataDir);
      fchownSync(fd, owner.uid, owner.gid);
    }
    writeSync(fd, `${JSON.stringify(note)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The changes commands noted while the daemon was stopped, oldest first (a torn last line is skipped). */
function takeConfigNotes(dataDir: string): ConfigNote[] {
  const file = join(dataDir, NOTES_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const notes = text.split('\n').flatMap((line) => {
    try {
      const note = JSON.parse(line) as ConfigNote;
      return typeof note.at === 'number' && typeof note.hash === 'string' ? [note] : [];
    } catch {
      return [];
    }
  });
  rmSync(file, { force: true });
  return notes;
}

/**
 * At the daemon's start: the changes commands noted, then `loaded` with the hash of the configuration now in
 * force and the one recorded before it (null: none was), all as config_changed events.
 */
export function recordConfigLoaded(store: { state: Db; events: EventLog }, dataDir: string, hash: string, now: number): void {
  for (const note of takeConfigNotes(dataDir)) {
    store.events.append({
      type: 'config_changed',
      door: note.door,
      at: note.at,
      data: {
        reason: note.reason,
        config_hash: note.hash,
        ...(note.reader ? { reader: note.reader } : {}),
        ...(note.comset ? { address: note.comset.address, baud_rate: note.comset.baudRate } : {}),
      },
    });
  }
  const previous = readMeta<string>(store.state, HASH_KEY) ?? null;
  store.events.append({ type: 'config_changed', door: null, at: now, data: { reason: 'loaded', config_hash: hash, previous_config_hash: previous } });
  writeMeta(store.state, HASH_KEY, hash);
}
