import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
// The bin as installed (package.json "bin"): the bundle npm run build makes from tsc's output.
export const CLI = join(ROOT, 'dist/cli/door-agent.js');

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs the built door-agent CLI as a user would (npm test builds it first). */
export function runCli(args: string[], options: { env?: Record<string, string>; cwd?: string; input?: string } = {}): CliResult {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" (npm test does it in pretest)`);
  const result: SpawnSyncReturns<string> = spawnSync(process.execPath, [CLI, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...options.env },
    encoding: 'utf8',
    input: options.input,
    timeout: 120_000,
  });
  if (result.error) throw result.error;
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/**
 * runCli without blocking this process: needed when the test itself serves what the CLI talks to (a scripted
 * HTTP service in the test process would not answer while spawnSync waits).
 */
export function runCliAsync(args: string[], options: { env?: Record<string, string> } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...options.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ status: code ?? -1, stdout, stderr }));
  });
}

/** A temporary directory removed after the test file. */
export function tempDir(prefix = 'door-agent-test-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

export const DOOR_UUID = '6f1c2a0e-8d0b-4a57-9d43-1f2e3a4b5c6d';
export const SECOND_DOOR_UUID = '0b7a1e55-3c2d-4e8f-9a10-22334455aabb';

/**
 * Writes an agent config for a door (or two) on simulated GPIO with its data in `dir`; returns its path. `agent`
 * adds keys to the agent section, `extra` whole sections (mqtt, service), `doorExtra` keys of the first door
 * (YAML lines indented by four spaces).
 */
export function writeConfig(
  dir: string,
  options: { id?: string; agent?: string; access?: string; twoDoors?: boolean; extra?: string; doorExtra?: string } = {},
): string {
  const second = options.twoDoors
    ? `
  - uuid: ${SECOND_DOOR_UUID}
    resourceId: 13
    name: Back door
    relay: { pin: 18, activeLow: true }
    failMode: safe`
    : '';
  const path = join(dir, 'config.yaml');
  writeFileSync(
    path,
    `agent: { id: ${options.id ?? 'test-agent'}, dataDir: ${join(dir, 'data')}, timezone: Europe/Berlin${options.agent ? `, ${options.agent}` : ''} }
access: ${options.access ?? '{ groups: [Staff], policies: [Night shift] }'}
gpio: { driver: simulated, simulatedDir: ${join(dir, 'gpio')} }
${options.extra ?? ''}
doors:
  - uuid: ${DOOR_UUID}
    resourceId: 12
    name: Front door
    relay: { pin: 17 }
${options.doorExtra ?? ''}${second}
`,
  );
  return path;
}
