import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from './wait.js';

const root = resolve(fileURLToPath(import.meta.url), '../../..');

/**
 * The fleet benchmark's node children (dist/bench/*.js, IPC on): each in its own process group, so ending it ends
 * whatever it started; one that ends before the benchmark does fails it at the next check, not at a timeout.
 */
export class Children {
  private readonly running: ChildProcess[] = [];
  private ending = false;
  private crashed: string | null = null;

  spawn(what: string, script: string, args: string[], stdout: 'inherit' | number = 'inherit'): ChildProcess {
    const child = spawn(process.execPath, [join(root, 'dist/bench', script), ...args], { stdio: ['ignore', stdout, 'inherit', 'ipc'], detached: true });
    this.running.push(child);
    child.on('exit', (code, signal) => {
      if (!this.ending) this.crashed ??= `fleet benchmark: ${what} ended (${signal ?? `exit ${code}`})`;
    });
    return child;
  }

  /** Throws when a child has ended. */
  check(): void {
    if (this.crashed !== null) throw new Error(this.crashed);
  }

  /** `predicate` for waitFor, failing at once when a child has ended. */
  alive(predicate: () => boolean): () => boolean {
    return () => {
      this.check();
      return predicate();
    };
  }

  /** SIGTERM (each stops what it runs), then SIGKILL to the process group of any still there after 5 s. */
  async endAll(): Promise<void> {
    this.ending = true;
    await Promise.all(this.running.map(end));
  }
}

async function end(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  if (await Promise.race([exited.then(() => true), sleep(5000).then(() => false)])) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
  await exited;
}
