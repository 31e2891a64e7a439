import { type ChildProcess, spawn } from 'node:child_process';
import { CLI, ROOT } from './cli.js';
import { waitUntil } from './wait.js';

/** `door-agent enrol` running on a board (the built CLI), its output read as it comes. */
export interface Enrolling {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Its exit code (-1: killed by a signal). */
  exited: Promise<number>;
  /** The enrolment id, once the board says it waits for an operator to adopt it. */
  waiting(): Promise<string>;
}

/**
 * `door-agent enrol ARGS --config CONFIG --data-dir DATA --wait-minutes 3` started as an installer runs it on a new
 * board. It runs beside the test (never spawnSync): the service that answers it may be in this process.
 */
export function startEnrol(args: string[], board: { config: string; data: string }): Enrolling {
  const child = spawn(process.execPath, [CLI, 'enrol', ...args, '--config', board.config, '--data-dir', board.data, '--wait-minutes', '3'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number>((resolve) => child.once('close', (code, signal) => resolve(code ?? (signal ? -1 : -2))));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    async waiting() {
      await waitUntil(
        () => /waiting for an operator to adopt \S+ in the console \(enrolment [0-9a-f-]{36}\)/.test(stdout) || child.exitCode !== null,
        60_000,
        'the board waits',
      );
      const id = /\(enrolment ([0-9a-f-]{36})\)/.exec(stdout)?.[1];
      if (!id) throw new Error(`the board did not wait: ${stdout}\n${stderr}`);
      return id;
    },
  };
}
