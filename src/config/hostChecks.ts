import { accessSync, constants, readFileSync, statSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { userInfo } from 'node:os';
import { describeFsError, errorCode } from '../util/errors.js';
import type { Problem } from '../util/issues.js';

/**
 * What `config check` checks of this machine for a configuration: the data directory (an error when door-agent
 * could not create or write it: `run` fails there too) and each reader's device node (a warning: `run` starts
 * without it and opens the reader when it appears, e.g. once it is plugged in). Checked as the current user.
 */

/** The user this process runs as, as an operator reads it: `door-agent (uid 998)`. */
function currentUser(): string {
  const uid = process.getuid?.();
  try {
    return `${userInfo().username} (uid ${uid})`;
  } catch {
    return `uid ${uid}`; // a uid without a passwd entry
  }
}

function groupName(gid: number): string {
  try {
    const line = readFileSync('/etc/group', 'utf8')
      .split('\n')
      .find((l) => l.split(':')[2] === String(gid));
    return line ? line.split(':')[0]! : String(gid);
  } catch {
    return String(gid);
  }
}

function kindOf(st: Stats): string {
  if (st.isFile()) return 'regular file';
  if (st.isDirectory()) return 'directory';
  if (st.isSocket()) return 'socket';
  if (st.isBlockDevice()) return 'block device';
  if (st.isSymbolicLink()) return 'symbolic link';
  return 'file of another kind';
}

/** The data directory: exists and is writable, or can be created; an error otherwise (with the user checked as). */
export function dataDirProblems(dataDir: string, keyPath = 'agent.dataDir'): { problems: Problem[]; line: string } {
  const user = currentUser();
  const dir = resolve(dataDir);
  let st: Stats | undefined;
  try {
    st = statSync(dir);
  } catch (err) {
    if (errorCode(err) !== 'ENOENT' && errorCode(err) !== 'ENOTDIR') {
      return { problems: [{ path: keyPath, message: `cannot examine ${dir}: ${describeFsError(err)}` }], line: '' };
    }
  }
  if (st) {
    if (!st.isDirectory()) return { problems: [{ path: keyPath, message: `${dir} is a ${kindOf(st)}, not a directory` }], line: '' };
    if (!writable(dir)) {
      return {
        problems: [
          {
            path: keyPath,
            message: `${dir} is not writable by ${user} (owner uid ${st.uid}, group ${groupName(st.gid)}, mode ${(st.mode & 0o777).toString(8)}): ${readOnlyHint(dir)}`,
          },
        ],
        line: '',
      };
    }
    return { problems: [], line: `  data directory ${dir}: writable by ${user}\n` };
  }
  // Absent: door-agent creates it (with its parents) on start; the nearest directory that exists must be writable.
  let parent = dirname(dir);
  for (;;) {
    try {
      if (statSync(parent).isDirectory()) break;
      return { problems: [{ path: keyPath, message: `${dir} cannot be created: ${parent} is not a directory` }], line: '' };
    } catch {
      parent = dirname(parent);
    }
  }
  if (!writable(parent)) {
    return {
      problems: [{ path: keyPath, message: `${dir} does not exist and ${user} cannot create it (${parent} is not writable): ${readOnlyHint(parent)}` }],
      line: '',
    };
  }
  return { problems: [], line: `  data directory ${dir}: does not exist yet; ${user} can create it (door-agent does on start)\n` };
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch (err) {
    return errorCode(err) !== 'EACCES' && errorCode(err) !== 'EPERM' && errorCode(err) !== 'EROFS';
  }
}

function readOnlyHint(dir: string): string {
  try {
    accessSync(dir, constants.W_OK);
  } catch (err) {
    if (errorCode(err) === 'EROFS') return 'the file system is mounted read-only';
  }
  return `run door-agent as the directory's owner (sudo -u door-agent ...), or give that user the directory (chown)`;
}

/** A reader's device node as `run` will open it: serial and OSDP read and write it; a keyboard reader reads it. */
export interface ReaderDevice {
  keyPath: string;
  path: string;
  write: boolean;
}

/** Warnings for reader devices that are absent, not a device, or that the current user may not open. */
export function readerDeviceWarnings(devices: readonly ReaderDevice[]): string[] {
  const user = currentUser();
  const warnings: string[] = [];
  for (const d of devices) {
    let st: Stats;
    try {
      st = statSync(d.path);
    } catch (err) {
      warnings.push(
        errorCode(err) === 'ENOENT'
          ? `${d.keyPath}: ${d.path} does not exist (the reader is not plugged in yet?); door-agent starts without it and opens it once it appears`
          : `${d.keyPath}: cannot examine ${d.path}: ${describeFsError(err)}`,
      );
      continue;
    }
    // A FIFO stands in for a device on a machine without one (a simulator, the tests).
    if (!st.isCharacterDevice() && !st.isFIFO()) {
      warnings.push(`${d.keyPath}: ${d.path} is a ${kindOf(st)}, not a character device: the reader will not work until it names the device`);
      continue;
    }
    try {
      accessSync(d.path, constants.R_OK | (d.write ? constants.W_OK : 0));
    } catch {
      const group = groupName(st.gid);
      warnings.push(
        `${d.keyPath}: ${d.path} is not ${d.write ? 'readable and writable' : 'readable'} by ${user} ` +
          `(owner uid ${st.uid}, group ${group}, mode ${(st.mode & 0o777).toString(8)}): add the user to group ${group} (sudo usermod -aG ${group} USER)`,
      );
    }
  }
  return warnings;
}

/** The device nodes of the doors' readers (any door shape: validated options or doors parsed one by one). */
export function readerDevices(
  doors: ReadonlyArray<{ index: number; key?: readonly string[]; reader?: { type: string; path?: string } | undefined }>,
): ReaderDevice[] {
  const seen = new Set<string>();
  const devices: ReaderDevice[] = [];
  for (const { index, key, reader } of doors) {
    if (!reader || reader.type === 'wiegand' || typeof reader.path !== 'string' || seen.has(reader.path)) continue;
    seen.add(reader.path); // an OSDP bus shared by doors: checked once
    devices.push({ keyPath: `doors[${index}].${(key ?? ['reader']).join('.')}.path`, path: reader.path, write: reader.type !== 'keyboard' });
  }
  return devices;
}
