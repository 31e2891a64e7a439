import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, renameSync, rmdirSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fsyncDirectory } from '../util/fsyncDirectory.js';

/** Who a file is given to (chown), when the command runs as root: the agent's user, the owner of its data directory. */
interface Owner {
  uid: number;
  gid: number;
}

/**
 * The files a command writes on the board (docs/fleet.md, "Enrolment"): each whole or not at all (a temporary
 * file beside it, written, fsynced, renamed over it, the directory fsynced), with its mode and, as root, its owner.
 * What it wrote and the directories it made are remembered, so that a failure takes back all of it.
 */
export class BoardFiles {
  private readonly written: string[] = [];
  private readonly made: string[] = [];

  constructor(private readonly owner: Owner | null) {}

  /** The owner for files written as root: the owner of `dataDir` (or of its nearest existing parent); null otherwise. */
  static ownerOf(dataDir: string, uid = process.getuid?.()): Owner | null {
    if (uid !== 0) return null;
    let dir = dataDir;
    while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
    const { uid: owner, gid } = statSync(dir);
    return { uid: owner, gid };
  }

  /** Makes `dir` and its missing parents with `mode`, given to the owner; remembers what it made. */
  dir(dir: string, mode: number, give = true): void {
    const missing: string[] = [];
    for (let d = dir; !existsSync(d) && dirname(d) !== d; d = dirname(d)) missing.unshift(d);
    for (const d of missing) {
      mkdirSync(d, { mode });
      chmodSync(d, mode);
      if (give && this.owner) chownSync(d, this.owner.uid, this.owner.gid);
      this.made.push(d);
    }
  }

  /** Writes `path` whole with `mode`; `group`: given to the owner's group only (root keeps it), else to the owner. */
  file(path: string, content: string, mode: number, give: 'owner' | 'group' = 'owner'): void {
    const temp = join(dirname(path), `.${basename(path)}.${randomBytes(4).toString('hex')}.tmp`);
    const fd = openSync(temp, 'wx', mode);
    try {
      const bytes = Buffer.from(content, 'utf8');
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
      fsyncSync(fd);
    } catch (err) {
      closeSync(fd);
      rmSync(temp, { force: true });
      throw err;
    }
    closeSync(fd);
    try {
      chmodSync(temp, mode);
      if (this.owner) chownSync(temp, give === 'owner' ? this.owner.uid : 0, this.owner.gid);
      renameSync(temp, path);
    } catch (err) {
      rmSync(temp, { force: true });
      throw err;
    }
    this.written.push(path);
    fsyncDirectory(dirname(path));
  }

  /** The directories this made, parents first. */
  get madeDirs(): readonly string[] {
    return this.made;
  }

  /** Removes what this wrote and the directories it made (when empty), newest first. */
  takeBack(): void {
    for (const path of this.written.splice(0).reverse()) rmSync(path, { force: true });
    for (const dir of this.made.splice(0).reverse()) {
      try {
        rmdirSync(dir);
      } catch {
        // not empty (something else is there): kept
      }
    }
  }

  /** Keeps what was written: nothing is taken back any more. */
  keep(): void {
    this.written.length = 0;
    this.made.length = 0;
  }
}
