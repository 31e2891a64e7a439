import type { ChildProcess } from 'node:child_process';

/** SIGTERM to a child process (if it still runs) and wait until it has exited. */
export async function stopChild(proc: ChildProcess | null): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
}
