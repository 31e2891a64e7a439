import { spawn, type ChildProcess } from 'node:child_process';
import { CLI, ROOT } from './cli.js';

export interface ServiceProcess {
  child: ChildProcess;
  /** What it has printed so far: stdout, and stderr with `captureStderr` (else stderr goes to the test's own). */
  output(): string;
  /** SIGTERM, and resolves once it has exited (SIGKILL after `killAfterMs`). */
  stop(killAfterMs?: number): Promise<void>;
}

/**
 * `door-agent service --config FILE` from the installed bundle, as an operator starts it. Resolves once its output
 * holds `ready` (default "service ready"); rejects with what it printed when it exits first, or stays short of
 * `ready` for `timeoutMs`. Its output is read to the end, so a chatty service never blocks on a full pipe.
 */
export function startServiceProcess(
  config: string,
  options: { ready?: string; env?: NodeJS.ProcessEnv; captureStderr?: boolean; timeoutMs?: number } = {},
): Promise<ServiceProcess> {
  // Under vitest's 60 s for a hook, which also does its setup before this: so this failure, with the output, is the one seen.
  const { ready = 'service ready', captureStderr = false, timeoutMs = 30_000 } = options;
  const child = spawn(process.execPath, [CLI, 'service', '--config', config], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', captureStderr ? 'pipe' : 'inherit'],
    ...(options.env ? { env: options.env } : {}),
  });
  let output = '';
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const service: ServiceProcess = {
    child,
    output: () => output,
    stop: async (killAfterMs = 10_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      await exited;
      clearTimeout(killer);
    },
  };
  return new Promise<ServiceProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the service did not print "${ready}" within ${timeoutMs} ms; it printed:\n${output}`));
    }, timeoutMs);
    child.stdout!.on('data', (d: Buffer) => {
      output += d.toString();
      if (output.includes(ready)) {
        clearTimeout(timer);
        resolve(service);
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${code ?? signal}) before it printed "${ready}"; it printed:\n${output}`));
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`the service could not be started: ${err.message}`, { cause: err }));
    });
  });
}
