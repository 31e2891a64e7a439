import {
  accessSync,
  chownSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DoorAgentError, errorCode } from '../util/errors.js';

/**
 * One daemon per data directory (issue 24). The lock is an exclusive SQLite lock on `<dataDir>/daemon.lock`
 * (`locking_mode=EXCLUSIVE` and a write: SQLite then keeps its fcntl write lock until the connection closes).
 * Why this and not something else:
 * - a pid file alone goes stale after a crash (or names a reused pid), and a stale lock would stop systemd's
 *   restart; fcntl locks belong to the process and the kernel drops them when it dies, SIGKILL included;
 * - Node has no flock/fcntl of its own, and better-sqlite3 is already here (no new addon); SQLite's unix VFS
 *   also keeps the lock when another connection of the same process opens and closes the file (a bare fcntl
 *   lock would be lost then);
 * - an abstract unix socket would be per network namespace and per path string (a symlink would escape it),
 *   while this lock is on the file itself.
 * The holder's pid is written to `<dataDir>/daemon.pid` once the lock is held: the lock cannot be read by
 * another process while it is held, so the pid lives beside it. The pid file is trusted only while the lock is
 * held (after a crash it stays behind with a dead pid, and means nothing).
 */
export const LOCK_FILE = 'daemon.lock';
const PID_FILE = 'daemon.pid';

/** How long a taker waits out a probe (`status` reads the lock file for a moment) before calling it held. */
const TAKE_WAIT_MS = 500;

/** Errors of a data directory the process may not write, whatever the cause: exit 78 (no restart loop). */
const UNWRITABLE = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR']);

export interface DataDirLock {
  readonly dataDir: string;
  /** Removes the pid file, then lets the lock go (closing the connection). */
  release(): void;
}

/** Another process holds the data directory's lock. */
export class DataDirBusyError extends DoorAgentError {
  constructor(
    readonly dataDir: string,
    readonly pid: number | null,
    doing: string,
  ) {
    super(
      `another door-agent ${pid === null ? '(its pid is not recorded yet)' : `(pid ${pid})`} is running on the data directory ${dataDir}; ` +
        `${doing}. Stop that one first (systemctl stop door-agent: it locks every relay as it stops), or give each agent its own agent.dataDir`,
    );
    this.name = 'DataDirBusyError';
  }
}

/** The data directory cannot be written by this process (permissions, a read-only mount, a path through a file). */
export class DataDirUnwritableError extends DoorAgentError {
  constructor(
    readonly dataDir: string,
    readonly path: string,
    readonly code: string,
    exitCode: number,
    cause: unknown,
  ) {
    const user = currentUser();
    const advice =
      code === 'EROFS'
        ? 'it is on a read-only file system: remount it read-write, or set agent.dataDir to a writable directory'
        : code === 'ENOTDIR'
          ? 'a part of that path is a file, not a directory: fix agent.dataDir'
          : `give it to that user (chown -R ${user}: ${dataDir}), or set agent.dataDir to a directory it may write`;
    const where = path === dataDir ? '' : ` on ${path}`;
    super(`the data directory ${dataDir} is not writable by user ${user} (${code}${where}): ${advice}`, { cause, exitCode });
    this.name = 'DataDirUnwritableError';
  }
}

function currentUser(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}

/**
 * Takes the data directory's lock for this process, creating the directory (0750) when `create` is set. Throws
 * DataDirBusyError when another process holds it, DataDirUnwritableError (with `unwritableExitCode`) when the
 * directory cannot be written, and a DoorAgentError (exit 1) for anything else.
 */
export function lockDataDir(
  dataDir: string,
  options: { pid: number; create: boolean; unwritableExitCode: number; doing: string; mustWrite?: readonly string[] },
): DataDirLock {
  const file = join(dataDir, LOCK_FILE);
  const path = dataDir;
  try {
    if (options.create) mkdirSync(dataDir, { recursive: true, mode: 0o750 });
    assertWritable(dataDir, [file, ...(options.mustWrite ?? [])], options.unwritableExitCode);
    if (!existsSync(file)) {
      closeSync(openSync(file, 'a', 0o640));
      // Made by root (sudo door-agent relock): the daemon's user must still be able to take it.
      if (process.getuid?.() === 0) {
        const { uid, gid } = statSync(dataDir);
        chownSync(file, uid, gid);
      }
    }
  } catch (err) {
    if (err instanceof DataDirUnwritableError) throw err;
    const code = errorCode(err) ?? '';
    if (UNWRITABLE.has(code)) throw new DataDirUnwritableError(dataDir, path, code, options.unwritableExitCode, err);
    throw new DoorAgentError(`cannot use the data directory ${dataDir}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  let db: Database.Database | undefined;
  try {
    db = new Database(file);
    db.pragma(`busy_timeout = ${TAKE_WAIT_MS}`);
    db.pragma('locking_mode = EXCLUSIVE');
    // No journal file (nothing in this file is worth one), so none can be left behind owned by another user.
    db.pragma('journal_mode = OFF');
    // A real write every time: in EXCLUSIVE mode the first write takes the lock and keeps it until close().
    db.exec('BEGIN EXCLUSIVE');
    db.exec('CREATE TABLE IF NOT EXISTS holder (id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL)');
    db.prepare('INSERT OR REPLACE INTO holder (id, pid) VALUES (1, ?)').run(options.pid);
    db.exec('COMMIT');
  } catch (err) {
    db?.close();
    if (errorCode(err) === 'SQLITE_BUSY') throw new DataDirBusyError(dataDir, holderPid(dataDir), options.doing);
    throw new DoorAgentError(`cannot lock the data directory ${dataDir} (${file}): ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  const held = db;
  try {
    writePid(dataDir, options.pid);
  } catch (err) {
    held.close();
    throw new DoorAgentError(`cannot write ${join(dataDir, PID_FILE)}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  let released = false;
  return {
    dataDir,
    release: () => {
      if (released) return;
      released = true;
      try {
        unlinkSync(join(dataDir, PID_FILE));
      } catch {
        // already gone: nothing to tidy
      }
      held.close();
    },
  };
}

/**
 * Throws DataDirUnwritableError when `dataDir` (which exists), or one of `paths` that exists, cannot be written by
 * this process: access() gives the errno (EROFS, EACCES) that SQLite would hide behind SQLITE_READONLY, and files
 * left by another user (door-agent import run as root) fail here, before any of them is half written. Also for
 * `config check`, so that it says what `run` will.
 */
export function assertWritable(dataDir: string, paths: readonly string[], exitCode: number): void {
  let path = dataDir;
  try {
    accessSync(dataDir, constants.W_OK | constants.X_OK);
    for (const existing of paths) {
      path = existing;
      if (existsSync(existing)) accessSync(existing, constants.W_OK);
    }
  } catch (err) {
    const code = errorCode(err) ?? '';
    if (UNWRITABLE.has(code)) throw new DataDirUnwritableError(dataDir, path, code, exitCode, err);
    throw new DoorAgentError(`cannot use the data directory ${dataDir}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/**
 * Who holds the data directory's lock, without taking it (for `status`, and for `relock` where the directory
 * cannot be written): null when nobody does, or when that cannot be told (no lock file, not readable).
 */
export function dataDirHolder(dataDir: string): { pid: number | null } | null {
  let db: Database.Database;
  try {
    db = new Database(join(dataDir, LOCK_FILE), { readonly: true, fileMustExist: true });
  } catch {
    return null;
  }
  try {
    db.pragma('busy_timeout = 0');
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return null;
  } catch (err) {
    return errorCode(err) === 'SQLITE_BUSY' ? { pid: holderPid(dataDir) } : null;
  } finally {
    db.close();
  }
}

function writePid(dataDir: string, pid: number): void {
  const tmp = join(dataDir, `${PID_FILE}.${pid}.tmp`);
  writeFileSync(tmp, `${pid}\n`, { mode: 0o644 });
  renameSync(tmp, join(dataDir, PID_FILE));
}

/**
 * The pid of the lock's holder: the holder writes it just after taking the lock, so a pid file that is missing or
 * names a dead process (left by a crashed holder) is read again for up to a second.
 */
function holderPid(dataDir: string): number | null {
  const until = Date.now() + 1000;
  for (;;) {
    const pid = readPid(dataDir);
    if ((pid !== null && alive(pid)) || Date.now() > until) return pid !== null && alive(pid) ? pid : null;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errorCode(err) === 'EPERM';
  }
}

function readPid(dataDir: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(join(dataDir, PID_FILE), 'utf8').trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}
