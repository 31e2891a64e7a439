import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { DoorAgentError, errorCode } from '../../util/errors.js';

/*
 * What root reads of the files the door-agent user can write (the update request, a signature, a bundle, the
 * update's record): a plain file at that very name, or nothing. A link there could make root read any file and
 * copy what it says into a message the daemon reports; a FIFO could hold root's open forever.
 */

/** Never through a link at the last name; never waiting on a FIFO (its reads are not made: fstat refuses it first). */
const PLAIN_READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** The open file descriptor of `path` and its size; a DoorAgentError saying what is there instead of a plain file. */
export function openPlainFile(path: string): { fd: number; size: number } {
  let fd: number;
  try {
    fd = openSync(path, PLAIN_READ);
  } catch (err) {
    if (errorCode(err) === 'ELOOP') throw new DoorAgentError('it is a link: root reads only a plain file, never through a link', { cause: err });
    throw err;
  }
  const stat = fstatSync(fd);
  if (!stat.isFile()) {
    closeSync(fd);
    throw new DoorAgentError(`it is ${stat.isDirectory() ? 'a directory' : 'not a plain file (a FIFO, a socket or a device)'}`);
  }
  return { fd, size: stat.size };
}

/** A small plain file read whole through one descriptor; refused over `maxBytes` (nothing past it is read). */
export function readPlainFile(path: string, maxBytes: number): Buffer {
  const { fd, size } = openPlainFile(path);
  try {
    if (size > maxBytes) throw new DoorAgentError(`it is ${size} bytes, more than the ${maxBytes} such a file has`);
    const bytes = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (;;) {
      const read = readSync(fd, bytes, length, bytes.length - length, null);
      if (read === 0) return bytes.subarray(0, length);
      length += read;
      if (length > maxBytes) throw new DoorAgentError(`it grew past ${maxBytes} bytes while it was read`);
    }
  } finally {
    closeSync(fd);
  }
}
