import { closeSync, constants, fchmodSync, fchownSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { DoorAgentError, errorCode } from './errors.js';
import { fsyncDirectory } from './fsyncDirectory.js';

/** A new file only: never an existing one, never through a link (root writes in directories others own). */
const NEW_FILE_ONLY = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Writes `path` whole (0600): a file beside it, written, fsynced, renamed over it, the directory fsynced. A reader
 * sees the old text or the new, never part of it, even across a power cut. `owner`: given to them (a file root
 * writes for the agent's user to read).
 *
 * The file beside it is made new: whatever has its name (a file left by a crash, or a link planted by whoever
 * owns the directory) is removed first, never opened, so root writing here never writes into another file. The
 * rename replaces a link at `path` itself rather than following it.
 */
export function writeWhole(path: string, text: string, owner?: { uid: number; gid: number }): void {
  const temporary = `${path}.new`;
  try {
    unlinkSync(temporary); // removes a link itself, not what it points to
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') throw err;
  }
  let fd: number;
  try {
    fd = openSync(temporary, NEW_FILE_ONLY, 0o600);
  } catch (err) {
    if (errorCode(err) !== 'EEXIST') throw err;
    throw new DoorAgentError(`${temporary} appeared again as ${path} was being written: someone else writes there; nothing was written`, {
      cause: err,
    });
  }
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
