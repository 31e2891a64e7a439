import { chmodSync, closeSync, fchmodSync, linkSync, lstatSync, mkdirSync, openSync, rmSync, symlinkSync, writeSync } from 'node:fs';
import { join, posix } from 'node:path';
import { errorCode } from '../../util/errors.js';
import { readBundle } from './bundleStream.js';
import { inPackageDir } from './bundlePackage.js';
import { withoutDotSlash } from './releaseInfo.js';
import { TarError, type TarEntry } from './tarReader.js';
import { BundleRefused } from './verify.js';

/**
 * A release bundle unpacked into `dest` (`/opt/door-agent.new`), which must not exist: files, directories and
 * links that stay inside it, nothing else. Refused, with nothing left behind: an absolute path, a `..` part, a link
 * whose target leaves the tree (or a hard link to what the bundle has not given yet), a path through a link, a
 * name given twice, a device, a FIFO or anything else. Modes as scripts/install.sh leaves them under umask 022:
 * directories 0755, files 0755 when executable in the bundle, else 0644 (no set-id bits, whatever the bundle says).
 * The Debian package the bundle carries (`.package/`, bundlePackage.ts) is not part of the program: left out.
 */
export async function unpackBundle(bundle: string, dest: string): Promise<{ files: number; bytes: number }> {
  mkdirSync(dest, { mode: 0o755 });
  chmodSync(dest, 0o755); // whatever the umask (root's may be 077): the door-agent user reads the program
  const tree = new Tree(dest);
  try {
    await readBundle(bundle, tree);
  } catch (err) {
    tree.abandon();
    rmSync(dest, { recursive: true, force: true });
    if (err instanceof TarError) throw new BundleRefused(`${bundle}: ${err.message}`, err);
    throw err;
  }
  return { files: tree.files.size, bytes: tree.bytes };
}

/** An entry's path inside the tree (no leading `./`, no empty or `.` parts); refused when absolute or with `..`. */
function safePath(raw: string, what: string): string {
  if (raw.includes('\0')) throw new BundleRefused(`${what} ${JSON.stringify(raw)} has a NUL in its name`);
  if (raw.startsWith('/')) throw new BundleRefused(`${what} ${raw} is an absolute path: a bundle's paths are inside the program`);
  const parts = withoutDotSlash(raw)
    .split('/')
    .filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw new BundleRefused(`${what} ${raw} has a ".." part: a bundle's paths stay inside the program`);
  return parts.join('/');
}

class Tree {
  /** Directories made here (or the root): known not to be links. */
  private readonly dirs = new Set<string>(['']);
  readonly files = new Set<string>();
  bytes = 0;
  private open: { fd: number; mode: number } | null = null;

  constructor(private readonly root: string) {}

  entry(entry: TarEntry): void {
    const path = safePath(entry.path, 'the bundle entry');
    if (inPackageDir(path)) return;
    if (path === '') {
      if (entry.type !== 'directory') throw new BundleRefused(`the bundle entry ${entry.path} is not the program's directory`);
      return;
    }
    const parent = posix.dirname(path) === '.' ? '' : posix.dirname(path);
    this.directory(parent, path);
    const full = join(this.root, path);
    switch (entry.type) {
      case 'directory':
        this.directory(path, path);
        return;
      case 'file': {
        const mode = (entry.mode & 0o111) !== 0 ? 0o755 : 0o644;
        this.open = { fd: this.create(() => openSync(full, 'wx', 0o600), path), mode };
        this.files.add(path);
        return;
      }
      case 'symlink': {
        if (entry.linkTarget === '' || entry.linkTarget.startsWith('/')) {
          throw new BundleRefused(`${path} links to ${entry.linkTarget || 'nothing'}: a link in a bundle points inside the program, relatively`);
        }
        const resolved = posix.normalize(posix.join(parent, entry.linkTarget));
        if (resolved === '..' || resolved.startsWith('../')) throw new BundleRefused(`${path} links to ${entry.linkTarget}, outside the program`);
        this.create(() => symlinkSync(entry.linkTarget, full), path);
        return;
      }
      case 'hardlink': {
        const target = safePath(entry.linkTarget, `${path}'s hard link target`);
        if (!this.files.has(target))
          throw new BundleRefused(`${path} is a hard link to ${entry.linkTarget}, which is not a file given before it in the bundle`);
        this.create(() => linkSync(join(this.root, target), full), path);
        this.files.add(path);
        return;
      }
      case 'device':
      case 'fifo':
        throw new BundleRefused(`${path} is a ${entry.type === 'fifo' ? 'FIFO' : 'device'}: a bundle holds files, directories and links only`);
      default:
        throw new BundleRefused(`${path} is a tar entry of type ${JSON.stringify(entry.flag)}: a bundle holds files, directories and links only`);
    }
  }

  data(chunk: Buffer): void {
    const open = this.open;
    if (!open) return;
    for (let written = 0; written < chunk.length; ) written += writeSync(open.fd, chunk, written);
    this.bytes += chunk.length;
  }

  entryEnd(): void {
    const open = this.open;
    if (!open) return;
    this.open = null;
    try {
      fchmodSync(open.fd, open.mode);
    } finally {
      closeSync(open.fd);
    }
  }

  /** The file being written closed (the caller removes the tree). */
  abandon(): void {
    if (this.open) closeSync(this.open.fd);
    this.open = null;
  }

  /** `path` as a directory made here: each part made, or found a directory this unpacking made. */
  private directory(path: string, entry: string): void {
    if (this.dirs.has(path)) return;
    const parts = path.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const part = parts.slice(0, i).join('/');
      if (this.dirs.has(part)) continue;
      const full = join(this.root, part);
      try {
        mkdirSync(full, { mode: 0o755 });
        chmodSync(full, 0o755);
      } catch (err) {
        if (errorCode(err) !== 'EEXIST') throw err;
        const what = lstatSync(full).isSymbolicLink() ? 'a link' : 'a file';
        throw new BundleRefused(`${entry}: ${part} is ${what} in the bundle, not a directory: a path through a link could leave the program`);
      }
      this.dirs.add(part);
    }
  }

  /** Makes one name (exclusively: never over, nor through, what is there). */
  private create<T>(make: () => T, path: string): T {
    try {
      return make();
    } catch (err) {
      if (errorCode(err) === 'EEXIST') throw new BundleRefused(`the bundle gives ${path} twice`);
      throw err;
    }
  }
}
