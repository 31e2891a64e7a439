import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describeFsError } from '../../util/errors.js';
import { openPlainFile } from './plainFiles.js';
import { BundleRefused } from './verify.js';

/** Root's copy of a bundle, in a directory of its own (removed with `remove`). */
export interface IncomingBundle {
  dir: string;
  bundle: string;
  remove(): void;
}

const COPY_CHUNK = 1 << 20;

/**
 * Root's own copy of a bundle (docs/fleet.md, "Signed updates"). The file a request names lies where the daemon's
 * user can write, so it could be replaced between its check and its unpacking: it is copied once, through one
 * descriptor opened as a plain file (plainFiles.ts), into a fresh directory beside the program that only root can
 * enter (`/opt/door-agent.incoming-XXXXXX`, 0700; `prefix` names it); every check and the unpacking then read the copy. Nothing past
 * the signed size is read. BundleRefused when the file cannot be read or is larger than what was signed; a shorter
 * one is copied as it is (its check says it is truncated).
 */
export function copyIncoming(source: string, signedSize: number, prefix: string): IncomingBundle {
  let file: { fd: number; size: number };
  try {
    file = openPlainFile(source);
  } catch (err) {
    throw new BundleRefused(`cannot read ${source}: ${describeFsError(err)}`, err);
  }
  const dir = mkdtempSync(prefix);
  const remove = () => rmSync(dir, { recursive: true, force: true });
  const bundle = join(dir, 'bundle.tar.gz');
  try {
    if (file.size > signedSize) {
      throw new BundleRefused(`${source} is ${file.size} bytes, the signed manifest says ${signedSize}: not the file that was signed`);
    }
    const out = openSync(bundle, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      const chunk = Buffer.alloc(Math.min(COPY_CHUNK, signedSize));
      for (let copied = 0; copied < signedSize; ) {
        const read = readSync(file.fd, chunk, 0, Math.min(chunk.length, signedSize - copied), null);
        if (read === 0) break;
        for (let written = 0; written < read; ) written += writeSync(out, chunk, written, read - written);
        copied += read;
      }
    } finally {
      closeSync(out);
    }
  } catch (err) {
    remove();
    throw err;
  } finally {
    closeSync(file.fd);
  }
  return { dir, bundle, remove };
}
