import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type Run, spawnRun } from './process.js';

const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool} || test -x /usr/sbin/${tool}`]).status === 0;

/** Why a fresh Debian root cannot be made here (debootstrap absent), naming the package to install; null if it can. */
function debootstrapMissing(): string | null {
  return has('debootstrap') ? null : 'debootstrap is not installed: sudo apt-get install -y debootstrap (npm test installs it when run as root)';
}

/** This machine's Debian release and the archive its apt uses for it (/etc/apt/sources.list and sources.list.d). */
function release(): { codename: string; mirror: string } {
  const codename = /^VERSION_CODENAME=(\S+)$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1];
  if (!codename) throw new Error('/etc/os-release names no VERSION_CODENAME: a fresh Debian root is made of the release this machine runs');
  const files = ['/etc/apt/sources.list', ...listDir('/etc/apt/sources.list.d').map((f) => join('/etc/apt/sources.list.d', f))];
  for (const file of files.filter((f) => /\.(list|sources)$/.test(f) && existsSync(f))) {
    const text = readFileSync(file, 'utf8');
    // One-line style: deb [options] URI SUITE COMPONENTS
    for (const m of text.matchAll(/^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s/gm)) if (m[2] === codename) return { codename, mirror: m[1]! };
    // deb822 style: a stanza with Types: deb, URIs: ... and Suites: ... naming the release itself
    for (const stanza of text.split(/\n\s*\n/)) {
      const field = (name: string) => new RegExp(`^${name}:\\s*(.+)$`, 'mi').exec(stanza)?.[1]?.trim().split(/\s+/) ?? [];
      if (field('Types').includes('deb') && field('Suites').includes(codename) && field('URIs')[0]) return { codename, mirror: field('URIs')[0]! };
    }
  }
  throw new Error(`no apt source for ${codename} in /etc/apt/sources.list*: a fresh Debian root is made from the archive apt uses`);
}
const listDir = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);

/**
 * A fresh Debian root of the release this machine runs (debootstrap --variant=minbase), into which the tests install
 * packages with apt and run commands in a chroot. debootstrap's packages are kept as a tarball in `cacheDir`
 * (--make-tarball, then --unpack-tarball), and apt's package lists and downloads there too: a second run downloads
 * nothing again.
 */
export class DebianRoot {
  private constructor(
    readonly path: string,
    private readonly cacheDir: string,
  ) {}

  static async create(path: string, cacheDir: string): Promise<DebianRoot> {
    const missing = debootstrapMissing();
    if (missing) throw new Error(missing);
    const { codename, mirror } = release();
    const arch = spawnSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).stdout.trim();
    mkdirSync(cacheDir, { recursive: true });
    const tarball = join(cacheDir, `${codename}-${arch}-minbase.tgz`);
    // In a mount namespace of its own: the /proc, /sys and /dev it mounts in the root end with it, even if it fails.
    const debootstrap = (option: string, target: string) => {
      const args = ['--variant=minbase', `--arch=${arch}`, option, codename, target, mirror];
      return spawnRun('unshare', ['-m', 'sh', '-c', 'mount --make-rprivate / && exec debootstrap "$@"', 'debootstrap', ...args], { env: sbinPath() });
    };
    if (!existsSync(tarball)) {
      const work = `${tarball}.work`;
      rmSync(work, { recursive: true, force: true });
      const made = await debootstrap(`--make-tarball=${tarball}.tmp`, work);
      rmSync(work, { recursive: true, force: true });
      if (made.status !== 0) throw new Error(`debootstrap --make-tarball from ${mirror} failed:\n${made.stdout.slice(-3000)}${made.stderr}`);
      renameSync(`${tarball}.tmp`, tarball);
    }
    const made = await debootstrap(`--unpack-tarball=${tarball}`, path);
    if (made.status !== 0) throw new Error(`debootstrap --unpack-tarball=${tarball} into ${path} failed:\n${made.stdout.slice(-3000)}${made.stderr}`);
    for (const dir of ['apt-archives/partial', 'apt-lists/partial']) mkdirSync(join(cacheDir, dir), { recursive: true });
    return new DebianRoot(path, cacheDir);
  }

  /**
   * A shell script run as root in the chroot, as on a board: /proc and /dev mounted, apt's lists and downloads
   * from the cache. The mounts live in a mount namespace of the command's own (unshare -m): they end with it.
   */
  run(script: string): Promise<Run> {
    const r = this.path;
    const mounts = [
      'mount --make-rprivate /',
      `mount -t proc proc ${r}/proc`,
      `mount --rbind /dev ${r}/dev`,
      `mount --bind ${this.cacheDir}/apt-archives ${r}/var/cache/apt/archives`,
      `mount --bind ${this.cacheDir}/apt-lists ${r}/var/lib/apt/lists`,
    ].join(' && ');
    const env = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', LC_ALL: 'C.UTF-8', DEBIAN_FRONTEND: 'noninteractive' };
    return spawnRun('unshare', ['-m', 'sh', '-c', `${mounts} && exec chroot ${r} /bin/sh -ec "$0"`, script], { env });
  }
}

const sbinPath = () => ({ ...process.env, PATH: `/usr/sbin:/sbin:${process.env.PATH ?? '/usr/bin:/bin'}` });
