import { execFile, spawn } from 'node:child_process';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { dataDirHolder } from '../../system/dataDirLock.js';
import type { ServiceControl } from './serviceControl.js';

export interface ChildServiceOptions {
  /** The installed command (installedProgram.ts installedCommand): it runs whatever program is installed. */
  wrapper: string;
  /** The configuration `door-agent run` is given (`--run-config`). */
  config: string;
  /** Its agent.dataDir: who holds the data directory's lock is the daemon running. */
  dataDir: string;
  /** Where the daemon's output goes (appended). */
  log: string;
  sleep: (ms: number) => Promise<void>;
  /** What went wrong that does not stop the update (the relock after a stop failed: logged by systemd on a board). */
  warn: (message: string) => void;
  /** As systemd's TimeoutStopSec (the unit's 15 s): then SIGKILL. */
  stopTimeoutMs?: number;
}

/**
 * The daemon without systemd (`update apply --root`: a test root): stopped as systemd stops it (SIGTERM to the
 * process holding the data directory, then `door-agent relock` as ExecStopPost does), started as the installed
 * wrapper's `door-agent run` in its own session, supervised while the update waits for its health and left running
 * when the update ends.
 */
export function childService(options: ChildServiceOptions): ServiceControl {
  const stopTimeoutMs = options.stopTimeoutMs ?? 15_000;
  let exit: string | null = null;
  let child: { pid: number | undefined; exited: Promise<void> } | null = null;

  const holderPid = () => dataDirHolder(options.dataDir)?.pid ?? null;
  const waitUntilFree = async (ms: number) => {
    for (let waited = 0; dataDirHolder(options.dataDir) !== null; waited += 100) {
      if (waited >= ms) return false;
      await options.sleep(100);
    }
    return true;
  };

  return {
    isActive: async () => dataDirHolder(options.dataDir) !== null,
    stop: async () => {
      const pid = holderPid();
      if (pid !== null) {
        signal(pid, 'SIGTERM');
        if (!(await waitUntilFree(stopTimeoutMs))) {
          signal(pid, 'SIGKILL');
          await waitUntilFree(5000);
        }
      }
      await child?.exited;
      child = null;
      // ExecStopPost: whatever way it ended, every relay is driven locked (a program that cannot start cannot relock
      // either: systemd logs that failure and goes on, and so does this).
      await run(options.wrapper, ['relock', '--config', options.config]).catch((err: unknown) => options.warn((err as Error).message));
    },
    start: async () => {
      exit = null;
      const out = openSync(options.log, 'a', 0o600);
      const from = fstatSync(out).size;
      try {
        const started = spawn(options.wrapper, ['run', '--config', options.config], { detached: true, stdio: ['ignore', out, out] });
        const exited = new Promise<void>((resolve) => {
          started.once('exit', (code, sig) => {
            exit = `door-agent run ended (${sig ?? `exit ${code}`}): ${why(options.log, from)}`;
            resolve();
          });
          started.once('error', (err) => {
            exit = `door-agent run could not start: ${err.message}`;
            resolve();
          });
        });
        started.unref();
        child = { pid: started.pid, exited };
      } finally {
        closeSync(out);
      }
    },
    gone: () => exit,
  };
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { encoding: 'utf8' }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(' ')} failed: ${firstError(stderr.trim().split('\n')) ?? (stderr.trim() || err.message)}`));
      else resolve();
    });
  });
}

/** Why the daemon ended, in its words: the error it printed (Node's uncaught one, its fatal log line), else its last lines. */
function why(log: string, from: number): string {
  let lines: string[];
  try {
    lines = readFileSync(log).subarray(from).toString('utf8').trim().split('\n').filter(Boolean);
  } catch {
    return `its output is not readable (${log})`;
  }
  return (firstError(lines) ?? (lines.slice(-3).join(' | ') || 'no output')).slice(0, 600);
}

/** The line of an error: Node's uncaught one (`Error: ...`), a fatal log line, door-agent's own. */
function firstError(lines: readonly string[]): string | undefined {
  return lines.find((l) => /^\w*Error\b.*:/.test(l) || /"level":60/.test(l) || l.startsWith('door-agent: '));
}
