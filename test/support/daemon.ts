import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, ROOT } from './cli.js';
import { sleep } from './wait.js';

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** The real `door-agent run` as a child process, with its JSON log lines collected. */
export class Daemon {
  readonly logs: LogLine[] = [];
  readonly rawOutput: string[] = [];
  private readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  /**
   * `command`: what to run the CLI under (e.g. ['faketime', '-f', '-30s']); `env` is added to a minimal one;
   * `entry`: the program to run instead of node with the built CLI (an installed /usr/local/bin/door-agent).
   */
  constructor(configPath: string, options: { command?: string[]; env?: Record<string, string>; entry?: string } = {}) {
    const [program, ...prefix] = [...(options.command ?? []), ...(options.entry ? [options.entry] : [process.execPath, CLI])];
    this.child = spawn(program!, [...prefix, 'run', '--config', configPath], {
      cwd: ROOT,
      // Its own process group: a wrapper (faketime) forks the agent, and a stop must reach both.
      detached: true,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let buffered = '';
    this.child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let newline;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        this.rawOutput.push(line);
        try {
          this.logs.push(JSON.parse(line) as LogLine);
        } catch {
          // not JSON: kept in rawOutput
        }
      }
    });
    this.child.stderr!.on('data', (chunk: Buffer) => this.rawOutput.push(chunk.toString('utf8')));
    const pid = this.child.pid;
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        // faketime's wrapper removes its semaphore and shared memory only when it exits by itself; stopped by a signal
        // (the group's), it leaves them in /dev/shm, and a later wrapper given the same pid fails ("sem_open: File exists").
        if (program === 'faketime' && pid !== undefined) {
          for (const name of [`faketime_shm_${pid}`, `sem.faketime_sem_${pid}`]) rmSync(join('/dev/shm', name), { force: true });
        }
        resolve({ code, signal });
      }),
    );
  }

  /** null while it runs. */
  get exitCode(): number | null {
    return this.child.exitCode;
  }

  get pid(): number {
    return this.child.pid!;
  }

  async waitForLog(predicate: (line: LogLine) => boolean, timeoutMs = 10_000, from = 0): Promise<LogLine> {
    const started = Date.now();
    for (;;) {
      const found = this.logs.slice(from).find(predicate);
      if (found) return found;
      if (this.child.exitCode !== null) throw new Error(`door-agent exited (${this.child.exitCode}):\n${this.rawOutput.join('\n')}`);
      if (Date.now() - started > timeoutMs) throw new Error(`no matching log line within ${timeoutMs} ms:\n${this.rawOutput.join('\n')}`);
      await sleep(10);
    }
  }

  waitForMessage(msg: string, timeoutMs?: number, from = 0): Promise<LogLine> {
    return this.waitForLog((l) => l.msg === msg, timeoutMs, from);
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      try {
        process.kill(-this.child.pid!, signal); // the whole group: the agent even under a wrapper
      } catch {
        this.child.kill(signal);
      }
    }
    return this.exited;
  }
}

export function readLevel(valueFile: string): string {
  return readFileSync(valueFile, 'utf8').trim();
}

export { waitUntil } from './wait.js';
