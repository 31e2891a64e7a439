import { closeSync, fchmodSync, fchownSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { fsyncDirectory } from './fsyncDirectory.js';

/**
 * Writes `path` whole (0600): a file beside it, written, fsynced, renamed over it, the directory fsynced. A reader
 * sees the old text or the new, never part of it, even across a power cut. `owner`: given to them (a file root
 * writes for the agent's user to read).
 */
export function writeWhole(path: string, text: string, owner?: { uid: number; gid: number }): void {
  const temporary = `${path}.new`;
  const fd = openSync(temporary, 'w', 0o600);
  try {
    fchmodSync(fd, 0o600);
    if (owner) fchownSync(fd, owner.uid, owner.gid);
    const bytes = Buffer.from(text, 'utf8');
    for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
  fsyncDirectory(dirname(path));
}
