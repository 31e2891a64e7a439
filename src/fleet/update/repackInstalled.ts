import { chmodSync, copyFileSync, lstatSync, mkdirSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DoorAgentError } from '../../util/errors.js';
import { debField, runTool, tail } from './dpkg.js';

/** The control files a package may carry (dpkg-query --control-list), and which of them run. */
const SCRIPTS = new Set(['preinst', 'postinst', 'prerm', 'postrm', 'config']);
/** Fields of dpkg's status record that are dpkg's own, not the package's. */
const STATUS_ONLY = new Set(['Status', 'Conffiles', 'Config-Version']);

async function query(...args: string[]): Promise<string> {
  const r = await runTool('dpkg-query', args, 256 << 20);
  if (r.code !== 0) throw new DoorAgentError(`dpkg-query ${args.join(' ')} failed (exit ${r.code}): ${tail(r)}`);
  return r.stdout;
}

/** @internal The package's control file: its status record less what only dpkg keeps (Status, Conffiles), continuation lines with their field. */
export function controlFromStatus(status: string): string {
  const kept: string[] = [];
  let keeping = true;
  for (const line of status.split('\n')) {
    if (line === '') continue;
    if (!/^\s/.test(line)) keeping = !STATUS_ONLY.has(line.slice(0, line.indexOf(':')));
    if (keeping) kept.push(line);
  }
  return `${kept.join('\n')}\n`;
}

/**
 * The installed door-agent package rebuilt as a .deb from dpkg's records (as dpkg-repack does, which a board does
 * not have): its files as installed, its control file, its maintainer scripts and md5sums. So a board installed
 * with `apt install ./door-agent_*.deb`, whose .deb is gone, can switch back to that version after an update.
 * Refused, naming the files, when an installed file is no longer what the package installed (`dpkg --verify`):
 * the copy would not be that version. `work` is root's own directory; the .deb is `out`.
 */
export async function repackInstalled(version: string, work: string, out: string): Promise<void> {
  const verify = await runTool('dpkg', ['--verify', 'door-agent']);
  const changed = verify.stdout.trim();
  if (verify.code !== 0 || changed !== '') {
    const files = changed.split('\n').slice(0, 5).join('; ');
    throw new DoorAgentError(
      `the installed package's files are not those door-agent ${version} installed (dpkg --verify door-agent: ${files || tail(verify)}): ` +
        'its copy for a way back would not be that version; reinstall it (apt install --reinstall) and update again',
    );
  }
  const stage = join(work, 'installed');
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(join(stage, 'DEBIAN'), { recursive: true });
  // dpkg-deb takes a control directory of 0755 only, whatever the umask of the root that runs this (sudo keeps the caller's).
  chmodSync(stage, 0o755);
  chmodSync(join(stage, 'DEBIAN'), 0o755);
  try {
    const paths = (await query('--listfiles', 'door-agent')).split('\n').filter((p) => p.startsWith('/') && p !== '/.');
    // A path with others under it is a directory of the package, even where the system has a link (/lib on a
    // merged /usr): the copy must not turn it into a link.
    const parents = new Set(paths.map((p) => p.slice(0, p.lastIndexOf('/'))));
    for (const path of paths.sort()) {
      const target = join(stage, path);
      const stat = parents.has(path) ? statSync(path) : lstatSync(path);
      if (stat.isDirectory()) {
        mkdirSync(target, { recursive: true });
        chmodSync(target, stat.mode & 0o7777);
      } else if (stat.isSymbolicLink()) symlinkSync(readlinkSync(path), target);
      else if (stat.isFile()) {
        copyFileSync(path, target);
        chmodSync(target, stat.mode & 0o7777);
      } else throw new DoorAgentError(`${path} is neither a file, a directory nor a link: door-agent's package has no such thing`);
    }
    writeFileSync(join(stage, 'DEBIAN/control'), controlFromStatus(await query('--status', 'door-agent')), { mode: 0o644 });
    for (const name of (await query('--control-list', 'door-agent')).split('\n').filter(Boolean)) {
      const from = (await query('--control-path', 'door-agent', name)).trim();
      copyFileSync(from, join(stage, 'DEBIAN', name));
      chmodSync(join(stage, 'DEBIAN', name), SCRIPTS.has(name) ? 0o755 : 0o644);
    }
    const built = await runTool('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z1', '--build', stage, out]);
    if (built.code !== 0) throw new DoorAgentError(`dpkg-deb --build of the installed ${version} failed (exit ${built.code}): ${tail(built)}`);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  const made = await debField(out, 'Version');
  if (made !== version) throw new DoorAgentError(`the copy of the installed package says version ${made}, not ${version}`);
}
