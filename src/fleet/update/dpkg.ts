import { execFile } from 'node:child_process';
import { DoorAgentError } from '../../util/errors.js';

/*
 * dpkg's commands as an update on a board installed from the Debian package runs them (docs/fleet.md, "A board
 * installed from the package"). Run as root by `update apply`, with a PATH that has the sbin directories dpkg needs
 * (ldconfig, start-stop-daemon) whatever the caller's, and without questions.
 */

const ENV = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  LC_ALL: 'C.UTF-8',
  DEBIAN_FRONTEND: 'noninteractive',
};

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** A dpkg that has not finished in this long is stuck (a question nobody answers): killed, and the update goes back. */
const TOOL_TIMEOUT_MS = 30 * 60_000;

/**
 * One command, its exit code and output (never throws for a non-zero exit; `code` 127 when it is not installed).
 * Its standard input is closed at once: nothing it could ask is ever answered.
 */
export function runTool(command: string, args: readonly string[], maxBuffer = 16 << 20): Promise<Ran> {
  return new Promise((resolve) => {
    const child = execFile(command, args, { encoding: 'utf8', env: ENV, maxBuffer, timeout: TOOL_TIMEOUT_MS }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : err.code === 'ENOENT' ? 127 : 1;
      const killed = err?.killed === true ? ` (killed after ${TOOL_TIMEOUT_MS / 60_000} minutes)` : '';
      resolve({ code, stdout, stderr: (err !== null && stderr === '' ? err.message : stderr) + killed });
    });
    child.stdin?.end();
  });
}

/** The last lines of what a command printed: the part that says why it failed. */
export const tail = (r: Ran, lines = 6) =>
  `${r.stdout}\n${r.stderr}`
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-lines)
    .join(' | ');

/** One field of a .deb's control file (`dpkg-deb --field`); '' when it has none. */
export async function debField(deb: string, field: string): Promise<string> {
  const r = await runTool('dpkg-deb', ['--field', deb, field]);
  if (r.code !== 0) throw new DoorAgentError(`dpkg-deb --field ${deb} ${field} failed (exit ${r.code}): ${tail(r)}`);
  return r.stdout.trim();
}

/** The door-agent package as dpkg records it, or null when dpkg has it not installed (or there is no dpkg). */
export async function installedPackage(): Promise<{ version: string; arch: string; status: string } | null> {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format, not a JavaScript template
  const r = await runTool('dpkg-query', ['--show', '--showformat=${db:Status-Abbrev}\t${Version}\t${Architecture}', 'door-agent']);
  if (r.code !== 0) return null;
  const [status = '', version = '', arch = ''] = r.stdout.split('\t');
  if (status.trim() === '' || status.startsWith('un')) return null;
  return { status: status.trim(), version: version.trim(), arch: arch.trim() };
}

/** `dpkg --install DEB` (an older version too: dpkg takes a downgrade, saying so). Throws with dpkg's words when it fails. */
export async function installPackage(deb: string): Promise<void> {
  // A configuration file the package ships (it ships none today) is never asked about: the board's own copy is kept.
  const r = await runTool('dpkg', ['--force-confdef', '--force-confold', '--install', deb]);
  if (r.code !== 0) throw new DoorAgentError(`dpkg --install ${deb} failed (exit ${r.code}): ${tail(r)}`);
}
